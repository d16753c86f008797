// The progress line against a hand-driven clock, writing to a temporary
// file: nothing for runs under a second, then at most one draw per 200 ms,
// each padded over the last, and a clear that wipes exactly what was drawn.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>

#include "sim/base/progress_line.h"

using namespace prefixsim;
using namespace std::chrono_literals;

namespace {

struct FakeClock {
  ProgressLine::Clock::time_point t{};
  ProgressLine::Clock::time_point operator()() const { return t; }
};

std::string written(std::FILE* f) {
  std::fflush(f);
  std::string s(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  const size_t n = std::fread(s.data(), 1, s.size(), f);
  s.resize(n);
  return s;
}

}  // namespace

TEST_CASE("the progress line stays silent for the first second, then redraws at most every 200 ms", "[progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  FakeClock clock;
  ProgressLine line(true, f, [&] { return clock(); });
  clock.t += 900ms;
  REQUIRE_FALSE(line.due());
  clock.t += 100ms;  // 1 s
  REQUIRE(line.due());
  line.draw("pairs 1 of 4");
  clock.t += 150ms;
  REQUIRE_FALSE(line.due());
  clock.t += 50ms;  // 200 ms after the draw
  REQUIRE(line.due());
  line.draw("pairs 2");  // shorter: padded over the longer line
  line.clear();
  REQUIRE(written(f) == "\rpairs 1 of 4\rpairs 2     \r            \r");
  std::fclose(f);
}

TEST_CASE("a short run or a disabled progress line writes nothing", "[progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  FakeClock clock;
  ProgressLine off(false, f, [&] { return clock(); });
  ProgressLine brief(true, f, [&] { return clock(); });
  clock.t += 500ms;
  REQUIRE_FALSE(brief.due());
  brief.clear();  // the run ended within its first second
  clock.t += 10s;
  REQUIRE_FALSE(off.due());
  off.clear();
  REQUIRE_FALSE(brief.drew());
  REQUIRE(written(f).empty());
  std::fclose(f);
}
