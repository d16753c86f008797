// The shadow report's figures (reports/backend_shadow.h) on hand-made steps:
// MAPE, bias and |error| percentiles against values worked out by hand, the
// worst steps in order (ties kept in run order), untimed steps left out, and
// the chart's points evenly spaced and capped.
#include <catch2/catch.hpp>

#include <vector>

#include "reports/backend_shadow.h"

using namespace prefixsim;

namespace {
BackendStepReport step(uint64_t index, double modeled, double measured) {
  BackendStepReport s;
  s.step = index;
  s.seqs = 1;
  s.new_tokens = static_cast<int64_t>(index);
  s.modeled_ms = modeled;
  s.measured_ms = measured;
  return s;
}
}  // namespace

TEST_CASE("The shadow summary's MAPE, bias and |error| percentiles are the hand-worked ones", "[reports][shadow]") {
  // Errors +10 %, -20 %, 0 %, +50 %; step 5 was not timed (measured 0).
  const std::vector<BackendStepReport> steps = {step(1, 1.1, 1.0), step(2, 0.8, 1.0), step(3, 2.0, 2.0),
                                                step(4, 1.5, 1.0), step(5, 0.7, 0.0)};
  const BackendReport::Shadow s = summarize_shadow(steps);
  CHECK(s.steps == 4);
  CHECK(s.mape == Approx(20.0));            // (10 + 20 + 0 + 50) / 4
  CHECK(s.bias == Approx(10.0));            // (10 - 20 + 0 + 50) / 4
  CHECK(s.p50_abs_error == Approx(10.0));   // nearest rank 2 of {0, 10, 20, 50}
  CHECK(s.p90_abs_error == Approx(50.0));   // nearest rank 4
  CHECK(s.modeled_ms == Approx(6.1));       // summed over every step, the untimed one too
  CHECK(s.measured_ms == Approx(5.0));
  REQUIRE(s.worst.size() == 4);
  CHECK(s.worst[0].step == 4);
  CHECK(s.worst[1].step == 2);
  CHECK(s.worst[2].step == 1);
  CHECK(s.worst[3].step == 3);
  REQUIRE(s.points.size() == 4);  // every timed step, in run order
  CHECK(s.points[0].step == 1);
  CHECK(s.points[3].step == 4);
}

TEST_CASE("The shadow summary keeps the 10 worst steps, ties in run order", "[reports][shadow]") {
  std::vector<BackendStepReport> steps;
  for (uint64_t i = 1; i <= 30; ++i) steps.push_back(step(i, i % 3 == 0 ? 1.5 : 1.1, 1.0));  // +50 % every third
  const BackendReport::Shadow s = summarize_shadow(steps);
  REQUIRE(s.worst.size() == 10);
  for (size_t k = 0; k < 10; ++k) CHECK(s.worst[k].step == 3 * (k + 1));
}

TEST_CASE("The shadow chart's points are every timed step up to the cap, then evenly spaced from the first",
          "[reports][shadow]") {
  std::vector<BackendStepReport> steps;
  const uint64_t n = 5 * kMaxShadowPoints + 7;
  for (uint64_t i = 0; i < n; ++i) steps.push_back(step(i, 1.0, i % 11 == 10 ? 0.0 : 1.0));
  const BackendReport::Shadow s = summarize_shadow(steps);
  const uint64_t timed = n - n / 11;
  CHECK(s.steps == timed);
  REQUIRE(s.points.size() == kMaxShadowPoints);
  CHECK(s.points.front().step == 0);
  for (size_t k = 1; k < s.points.size(); ++k) {
    CHECK(s.points[k].step > s.points[k - 1].step);
    CHECK(s.points[k].measured_ms > 0);
  }
  CHECK(s.points.back().step >= n - n / kMaxShadowPoints - 2);  // reaches the end of the run
  CHECK(summarize_shadow(steps).points.size() == s.points.size());
}

TEST_CASE("A shadow of no timed step has no figures, points or worst steps", "[reports][shadow]") {
  const std::vector<BackendStepReport> untimed = {step(1, 1.0, 0.0)};
  for (const auto& steps : {std::vector<BackendStepReport>{}, untimed}) {
    const BackendReport::Shadow s = summarize_shadow(steps);
    CHECK(s.steps == 0);
    CHECK(s.mape == 0);
    CHECK(s.points.empty());
    CHECK(s.worst.empty());
  }
}
