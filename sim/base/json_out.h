// Small helpers for writing compact JSON by hand on hot output paths
// (one line per op or step), matching Python's json.dumps(separators=(",",":")).
#pragma once

#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace prefixsim {

// Appends s as a JSON string literal.
void append_json_string(std::string& out, std::string_view s);

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or
// code points above U+10FFFF), i.e. whether it can go into a JSON report.
// Strings read from YAML or the command line are checked with this up front so
// that a bad byte is an input error naming its source, not a failed dump later.
bool valid_utf8(std::string_view s);

inline void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, p);
}

// Shortest round-trip repr, like Python's repr(float): "0.4", "1.0", "1e-05".
void append_double(std::string& out, double v);

template <typename Int>
void append_int_array(std::string& out, std::span<const Int> xs) {
  out.push_back('[');
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i) out.push_back(',');
    append_int(out, static_cast<int64_t>(xs[i]));
  }
  out.push_back(']');
}

}  // namespace prefixsim
