// Fields of line-oriented text inputs (CSV rows, "# key: value" headers)
// with errors that name the file, the line and the field: shared by the
// calibration samples and the engine steps readers. (JSON lines have
// json_fields.h.)
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/error.h"

namespace prefixsim {

// Where a value came from.
struct TextLoc {
  const std::string& file;
  long line;
  [[noreturn]] void fail(std::string_view field, const std::string& msg) const {
    throw InputError(file, line, "field '" + std::string(field) + "': " + msg);
  }
  [[noreturn]] void fail(const std::string& msg) const { throw InputError(file, line, msg); }
};

// A value as quoted in a message: a binary or runaway line must not flood the terminal.
std::string shown(std::string_view v);
// A number as quoted in a message: %g, six significant digits ("1e+308",
// "1e-09", "inf"), never std::to_string's 300 digits or "0.000000".
std::string number_text(double x);

// The whole of `v` as a number. from_chars takes no locale, no leading space
// and no '+'; it does parse "nan" and "inf", which the range checks refuse.
template <typename T>
std::optional<T> to_number(std::string_view v) {
  T x{};
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return x;
}

// `what` completes "must be ...", e.g. "a positive integer".
int64_t integer_in(const TextLoc& at, std::string_view field, std::string_view v, int64_t lo, int64_t hi,
                   const std::string& what);
// A finite number >= lo (> lo when `open`) and <= hi.
double number_in(const TextLoc& at, std::string_view field, std::string_view v, double lo, bool open, double hi,
                 const std::string& what);

std::string_view trim(std::string_view s);
// Lines without their '\n' (or "\r\n": files saved with CRLF).
std::vector<std::string_view> split_lines(std::string_view text);
std::vector<std::string_view> split_commas(std::string_view line);

}  // namespace prefixsim
