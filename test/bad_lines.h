// Bad-file cases made by editing one line of a good file: each must be
// refused with an InputError whose message starts "FILE:LINE: ..." (the
// line and field it names) and says what was wrong. Shared by the readers of
// line-oriented formats (calibration samples, engine steps).
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "test/support.h"

namespace prefixsim::test {

struct BadLine {
  const char* what;
  long line;                      // the line to replace (1-based)
  std::optional<std::string> to;  // its replacement; none: the line is removed
  std::string where;              // how the message must start: "FILE:LINE: ..."
  std::string msg;                // and what it must contain
};

// parse(text, file) for each case's edit of `good`, named `file`.
template <class Parse>
void check_bad_lines(const std::string& good, const std::string& file, const std::vector<BadLine>& cases,
                     Parse parse) {
  for (const BadLine& c : cases) {
    INFO(c.what);
    const std::string text = with_line(good, c.line, c.to);
    CHECK_THROWS_AS(parse(text, file), InputError);
    CHECK_THROWS_WITH(parse(text, file), Catch::Matchers::StartsWith(c.where) && Catch::Matchers::Contains(c.msg));
  }
}

}  // namespace prefixsim::test
