// Fitting the cost model's coefficients to measured engine-step times (the
// CPU side of `prefixsim gpu calibrate`).
//
// The step-time model of sim/cost/cost_model.h is linear in its coefficients but
// for the weight-bandwidth floor: max(linear*N, floor) = linear*max(N, N*)
// with the breakpoint N* = floor/linear. For a fixed split of the samples into
// floor-bound (N <= N*) and compute-bound ones, the model is linear again, so
// the fit scans every breakpoint position between the measured token counts,
// solves a non-negative least-squares problem for each (at most 6 terms:
// overhead, linear, floor, attention, KV read, per sequence) and keeps the
// best consistent one. Rows are weighted by 1/measured time, so the fit
// minimises squared relative error -- what MAPE, the reported error, measures.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/cost/cost_model.h"
#include "sim/cost/profile.h"

namespace prefixsim {

struct StepSample {
  BatchSummary shape;
  double seconds = 0;  // measured step time
};

struct FitOptions {
  // Every k-th sample (index % k == k-1) is held out for the error estimate;
  // 0 holds out nothing (the held-out MAPE is then the training MAPE).
  int held_out_every = 5;
  // Fit a per-sequence term (needs samples whose token and sequence counts
  // differ: prefill or mixed steps); otherwise it is fixed at 0.
  bool fit_per_seq = true;
};

struct FitResult {
  CostCoefficients coefficients;   // allreduce_s_per_token is 0: folded into linear
  double breakpoint_tokens = 0;    // N* = floor / linear
  ProfileFit fit;                  // samples, MAPEs; method named
};

// InputError when there are too few samples for the terms or a measured time
// is not a positive finite number.
FitResult fit_cost_model(std::span<const StepSample> samples, const FitOptions& options = {});

// Mean and max absolute percentage error (as fractions) of `c` on `samples`.
double mape(const CostCoefficients& c, std::span<const StepSample> samples);
double max_ape(const CostCoefficients& c, std::span<const StepSample> samples);

// Non-negative least squares, min ||A x - b|| subject to x >= 0, by Lawson and
// Hanson's active-set method with Householder QR for the unconstrained
// sub-problems. A is m x n, row-major, m >= n, n small.
std::vector<double> nnls(std::span<const double> a, int m, int n, std::span<const double> b);

}  // namespace prefixsim
