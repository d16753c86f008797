#include "sim/base/json_fields.h"

#include <algorithm>
#include <cstring>

namespace prefixsim {

JsonLine::JsonLine(const std::string& file, long line, const std::string& text) : file_(file), line_(line) {
  try {
    j_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] "; keep the rest.
    const size_t sp = what.find("] ");
    throw InputError(file, line, "invalid JSON: " + (sp == std::string::npos ? what : what.substr(sp + 2)));
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range: a number like 1e999
    throw InputError(file, line, std::string("invalid JSON: ") + e.what());
  }
  if (!j_.is_object()) throw InputError(file, line, "expected a JSON object");
}

const nlohmann::json& JsonLine::field(const char* key) const {
  auto it = j_.find(key);
  if (it == j_.end()) fail(std::string("missing field '") + key + "'");
  return *it;
}

std::string JsonLine::get_string(const char* key) const {
  const auto& v = field(key);
  if (!v.is_string()) fail(std::string("field '") + key + "' must be a string");
  return v.get<std::string>();
}

int64_t JsonLine::get_int(const char* key, int64_t lo, int64_t hi) const {
  const auto& v = field(key);
  if (!v.is_number_integer()) fail(std::string("field '") + key + "' must be an integer");
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(std::string("field '") + key + "' is out of range");
    x = static_cast<int64_t>(u);
  } else {
    x = v.get<int64_t>();
  }
  if (x < lo || x > hi)
    fail(std::string("field '") + key + "' = " + std::to_string(x) + " is out of range [" + std::to_string(lo) +
         ", " + std::to_string(hi) + "]");
  return x;
}

bool JsonLine::get_bool(const char* key) const {
  const auto& v = field(key);
  if (!v.is_boolean()) fail(std::string("field '") + key + "' must be true or false");
  return v.get<bool>();
}

void JsonLine::get_tokens(const char* key, std::vector<int32_t>& out) const {
  const auto& v = field(key);
  if (!v.is_array()) fail(std::string("field '") + key + "' must be an array of token ids");
  out.clear();
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const auto& t = v[i];
    if (!t.is_number_integer())
      fail(std::string("field '") + key + "[" + std::to_string(i) + "]' must be a non-negative integer");
    if (t.is_number_unsigned() ? t.get<uint64_t>() > 0x7fffffffULL : (t.get<int64_t>() < 0 || t.get<int64_t>() > 0x7fffffffLL))
      fail(std::string("field '") + key + "[" + std::to_string(i) + "]' must be a token id in [0, 2^31)");
    out.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
}

void JsonLine::reject_unknown_keys(std::initializer_list<const char*> allowed) const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    const bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return it.key() == a; });
    if (!ok) fail("unknown field '" + it.key() + "'");
  }
}

}  // namespace prefixsim
