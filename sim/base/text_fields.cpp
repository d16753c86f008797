#include "sim/base/text_fields.h"

#include <cmath>
#include <cstdio>

namespace prefixsim {

std::string shown(std::string_view v) {
  constexpr size_t kMax = 60;
  return "'" + std::string(v.substr(0, kMax)) + (v.size() > kMax ? "...'" : "'");
}

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

int64_t integer_in(const TextLoc& at, std::string_view field, std::string_view v, int64_t lo, int64_t hi,
                   const std::string& what) {
  const auto x = to_number<int64_t>(v);
  if (!x || *x < lo || *x > hi) at.fail(field, "must be " + what + ", not " + shown(v));
  return *x;
}

double number_in(const TextLoc& at, std::string_view field, std::string_view v, double lo, bool open, double hi,
                 const std::string& what) {
  const auto x = to_number<double>(v);
  if (!x || !std::isfinite(*x) || *x < lo || (open && *x == lo) || *x > hi)
    at.fail(field, "must be " + what + ", not " + shown(v));
  return *x;
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> out;
  for (size_t start = 0;;) {
    const size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace prefixsim
