#include "sim/base/spec_params.h"

#include <charconv>

#include "sim/base/error.h"

namespace prefixsim {

ParsedSpec parse_spec(std::string_view spec, const std::string& flag) {
  const size_t colon = spec.find(':');
  ParsedSpec out;
  out.name = std::string(spec.substr(0, colon));
  if (colon == std::string_view::npos) return out;
  const std::string owner = flag + " " + out.name;
  std::string_view rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw InputError(owner + ": expected key=value, got '" + std::string(item) + "'");
    const std::string key(item.substr(0, eq));
    if (!out.params.emplace(key, std::string(item.substr(eq + 1))).second)
      throw InputError(owner + ": parameter '" + key + "' given twice");
    if (comma != std::string_view::npos && comma + 1 == rest.size())
      throw InputError(owner + ": empty parameter after the last ','");
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return out;
}

SpecParams::SpecParams(std::string owner, std::map<std::string, std::string> kv)
    : owner_(std::move(owner)), kv_(std::move(kv)) {}

template <typename T>
T SpecParams::get_number(const std::string& key, T fallback, const char* what) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return fallback;
  used_[key] = true;
  T v{};
  const char* b = it->second.data();
  const char* e = b + it->second.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) throw InputError(owner_ + ": " + key + "=" + it->second + " is not " + what);
  return v;
}

double SpecParams::get_double(const std::string& key, double fallback) {
  return get_number<double>(key, fallback, "a number");
}

int64_t SpecParams::get_int(const std::string& key, int64_t fallback) {
  return get_number<int64_t>(key, fallback, "an integer");
}

bool SpecParams::get_bool(const std::string& key, bool fallback) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return fallback;
  used_[key] = true;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  throw InputError(owner_ + ": " + key + "=" + it->second + " is not true/false");
}

std::string SpecParams::get_string(const std::string& key, const std::string& fallback) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return fallback;
  used_[key] = true;
  return it->second;
}

double SpecParams::get_double_in(const std::string& key, double fallback, double lo, double hi) {
  const double v = get_double(key, fallback);
  if (!(v >= lo && v <= hi))
    throw InputError(owner_ + ": " + key + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

void SpecParams::reject_unused() const {
  for (const auto& [k, v] : kv_)
    if (!used_.count(k)) throw InputError(owner_ + ": unknown parameter '" + k + "'");
}

}  // namespace prefixsim
