// `prefixsim calibrate --observed RUN...`: the step model's terms
// (sim/cost/step_model.h) fitted to end-to-end latencies of observed runs.
//
// Each completed run contributes its measured TTFT, E2E and TPOT means. The
// fit alternates two steps until the terms settle: replay every run with the
// current terms, which gives each predicted mean as a linear function of the
// terms (sim/study/observed_replay.h); then solve for the terms that minimise
// the squared relative errors of those linear forms, subject to each term's
// physical bound (an efficiency is at most the datasheet's; no time is
// negative), by non-negative least squares on the terms' excess over their
// bounds. A weak pull toward the starting terms (rows of weight
// `prior_weight`) keeps a term that the runs barely constrain where the
// roofline put it instead of letting it wander. Terms no run exercises (no
// TP > 1 run: collective_inv, link_inv; no client-side run: request_s, tokenize_s) keep
// their starting values.
//
// Leave-one-out: each completed run predicted by the terms fitted on all the
// others, from the same start as the full fit (a fold warm-started from the
// full fit can stop where it began: the full fit is already a point its line
// search cannot improve on, and the held-out run would be predicted in-sample),
// the honest estimate of the error on a run the model has not seen.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cost/step_model.h"
#include "sim/study/observed_run.h"

namespace prefixsim {

struct CalibrateOptions {
  int iterations = 8;          // replay-and-solve rounds at most
  double tolerance = 1e-3;     // stop when no term moves by more than this fraction
  double prior_weight = 0.05;  // strength of the pull toward the starting terms
  // Relative residuals past this count linearly (Huber); small values make
  // the fit a least-absolute-deviations one.
  double robust_delta = 0.25;
  int threads = 1;
  bool leave_one_out = false;
  // The terms fitted (StepTerm values); empty: every term the runs exercise.
  // The others keep their starting values.
  std::vector<int> free_terms;
};

struct CalibrateResult {
  StepModel model;                    // the fitted terms (+ known_error from leave-one-out, when run)
  nlohmann::ordered_json fitted;      // validate document of the runs under the fitted terms
  nlohmann::ordered_json held_out;    // validate document of the leave-one-out predictions (or null)
  std::vector<nlohmann::ordered_json> iterations;  // per round: terms and the fit's mean |error|
};

// Fits `start`'s terms to `runs` (saturated runs are left out of the fit
// and reported apart). InputError when no completed run measured anything.
CalibrateResult calibrate_runs(const std::vector<ObservedRun>& runs, const StepModel& start,
                               const CalibrateOptions& options);

}  // namespace prefixsim
