#include "sim/base/json_out.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace prefixsim {

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) {  // JSON has no inf/nan; reports use null
    out += "null";
    return;
  }
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  std::string_view s(buf, static_cast<size_t>(p - buf));
  out += s;
  if (s.find_first_of(".en") == std::string_view::npos) out += ".0";
}

// nlohmann's serializer validates strictly (its DFA follows the Unicode
// standard's table of well-formed byte sequences), so it is the reference.
bool valid_utf8(std::string_view s) {
  try {
    (void)nlohmann::json(std::string(s)).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace prefixsim
