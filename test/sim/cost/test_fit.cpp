// Least-squares calibration of the cost model: NNLS on a hand-solved
// problem, exact recovery of known coefficients from noise-free synthetic
// steps, close recovery with measurement noise, and refusal of bad samples.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "sim/base/error.h"
#include "sim/cost/fit.h"
#include "test/sim/cost/synthetic_steps.h"

namespace test_fit {

using namespace prefixsim;
using Catch::Matchers::Contains;

CostCoefficients truth() { return test::known_coefficients(); }

std::vector<BatchSummary> grid() {
  std::vector<BatchSummary> out;
  for (const test::SyntheticStep& s : test::synthetic_grid()) out.push_back(s.shape);
  return out;
}

std::vector<StepSample> measure(const CostCoefficients& c, double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, noise);
  std::vector<StepSample> out;
  for (const BatchSummary& b : grid()) out.push_back({b, step_seconds(c, b) * (1 + (noise > 0 ? gauss(rng) : 0.0))});
  return out;
}

TEST_CASE("nnls pins a coefficient the unconstrained solution makes negative at zero", "[fit]") {
  // A = [[1,1],[1,0],[0,1]], b = [1,2,-1]: unconstrained x = (2,-1). With
  // x2 = 0 the best x1 minimises (x1-1)^2 + (x1-2)^2 + 1: x1 = 1.5, and the
  // gradient for x2 there, A2 . (Ax - b) = 0.5 + 1 > 0, keeps it at zero.
  const std::vector<double> a = {1, 1, 1, 0, 0, 1};
  const std::vector<double> b = {1, 2, -1};
  const auto x = nnls(a, 3, 2, b);
  CHECK(x[0] == Approx(1.5));
  CHECK(x[1] == 0);
  // With a feasible optimum NNLS is plain least squares: b = A * (0.5, 2).
  const std::vector<double> b2 = {2.5, 0.5, 2};
  const auto y = nnls(a, 3, 2, b2);
  CHECK(y[0] == Approx(0.5));
  CHECK(y[1] == Approx(2.0));
}

TEST_CASE("fitting noise-free steps recovers the coefficients exactly", "[fit]") {
  const CostCoefficients want = truth();
  const FitResult r = fit_cost_model(measure(want, 0, 1));
  const CostCoefficients& got = r.coefficients;
  CHECK(got.overhead_s == Approx(want.overhead_s).epsilon(1e-6));
  CHECK(got.linear_s_per_token == Approx(want.linear_s_per_token).epsilon(1e-6));
  CHECK(got.weight_floor_s == Approx(want.weight_floor_s).epsilon(1e-6));
  CHECK(got.attn_s_per_unit == Approx(want.attn_s_per_unit).epsilon(1e-6));
  CHECK(got.kv_read_s_per_token == Approx(want.kv_read_s_per_token).epsilon(1e-6));
  CHECK(got.per_seq_s == Approx(want.per_seq_s).epsilon(1e-4));
  CHECK(r.breakpoint_tokens == Approx(6.4e-3 / 2.6e-5).epsilon(1e-6));
  CHECK(r.fit.mape_held_out < 1e-6);
  CHECK(r.fit.held_out_samples == static_cast<int64_t>(grid().size() / 5));
  CHECK(r.fit.train_samples + r.fit.held_out_samples == static_cast<int64_t>(grid().size()));
}

TEST_CASE("fitting steps with 2 % measurement noise recovers the coefficients closely", "[fit]") {
  const CostCoefficients want = truth();
  for (uint64_t seed : {11, 12, 13}) {
    INFO("seed " << seed);
    const FitResult r = fit_cost_model(measure(want, 0.02, seed));
    const CostCoefficients& got = r.coefficients;
    CHECK(got.linear_s_per_token == Approx(want.linear_s_per_token).epsilon(0.03));
    CHECK(got.weight_floor_s == Approx(want.weight_floor_s).epsilon(0.05));
    CHECK(got.attn_s_per_unit == Approx(want.attn_s_per_unit).epsilon(0.05));
    CHECK(got.kv_read_s_per_token == Approx(want.kv_read_s_per_token).epsilon(0.05));
    CHECK(got.overhead_s == Approx(want.overhead_s).epsilon(0.25));
    // The model predicts held-out steps as well as the noise allows (E|N(0, 2 %)| = 1.6 %).
    CHECK(r.fit.mape_held_out < 0.03);
    CHECK(r.fit.mape_train < 0.03);
    // The held-out error is of the noise, not of the model: the truth does as well.
    CHECK(r.fit.mape_held_out < 1.5 * mape(want, measure(want, 0.02, seed)) + 0.005);
  }
}

TEST_CASE("a fit never returns a negative coefficient", "[fit]") {
  // Steps with no attention cost at all and a constant offset: unconstrained
  // least squares would trade a negative attention term against noise.
  CostCoefficients c = truth();
  c.attn_s_per_unit = 0;
  c.per_seq_s = 0;
  const FitResult r = fit_cost_model(measure(c, 0.03, 5));
  for (double v : {r.coefficients.overhead_s, r.coefficients.linear_s_per_token, r.coefficients.weight_floor_s,
                   r.coefficients.attn_s_per_unit, r.coefficients.kv_read_s_per_token, r.coefficients.per_seq_s})
    CHECK(v >= 0);
  CHECK(r.coefficients.attn_s_per_unit < 0.1 * truth().attn_s_per_unit);
}

TEST_CASE("fitting refuses too few or meaningless samples", "[fit]") {
  auto s = measure(truth(), 0, 1);
  std::vector<StepSample> few(s.begin(), s.begin() + 8);
  CHECK_THROWS_WITH(fit_cost_model(few), Contains("training samples"));
  s[3].seconds = -1;
  CHECK_THROWS_WITH(fit_cost_model(s), Contains("sample 3"));
  s[3].seconds = std::nan("");
  CHECK_THROWS_AS(fit_cost_model(s), InputError);
  s = measure(truth(), 0, 1);
  s[4].shape = BatchSummary{};
  CHECK_THROWS_WITH(fit_cost_model(s), Contains("sample 4") && Contains("empty step"));
  FitOptions o;
  o.held_out_every = 1;
  CHECK_THROWS_AS(fit_cost_model(measure(truth(), 0, 1), o), InputError);
}

}  // namespace test_fit
