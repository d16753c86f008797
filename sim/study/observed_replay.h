// One observed run replayed in the simulator under a given step model: what
// it predicts (the same statistics the run measured) and, for calibration,
// how each predicted mean depends on the step model's terms.
//
// The dependence is exact to first order: every request's TTFT and E2E is a
// stretch of its replica's timeline, which is a sequence of device steps and
// of gaps between them. A device step lasts dot(terms, features) + constant
// (sim/cost/step_model.h); under async scheduling a gap before a step is the
// step's host work where the device waited for it (d gap / d host = 1, the
// rest of the gap is idle time), and in the synchronous loop the host work is
// inside the step. Summing each segment's features over the part of it a
// request's interval covers gives that request's gradient; the predicted mean
// is dot(terms, mean gradient) + mean constant, and equals the simulated mean
// at the terms it ran with. Calibration solves for terms in that linear form,
// replays again with them, and repeats (sim/study/calibrate.h).
#pragma once

#include <cstdint>
#include <string>

#include "sim/cost/step_model.h"
#include "sim/study/observed_run.h"

namespace prefixsim {

// A predicted mean as a linear function of the terms, around the terms it ran with.
struct LinearMean {
  StepTerms gradient{};
  double constant = 0;
  double at(const StepTerms& t) const {
    double v = constant;
    for (size_t k = 0; k < t.size(); ++k) v += t[k] * gradient[k];
    return v;
  }
};

struct ReplayedRun {
  MeasuredStat ttft, e2e, tpot;  // ms, as the run measured them (client or engine side)
  double throughput_rps = NAN;   // finished requests over first arrival to last finish
  LinearMean ttft_mean, e2e_mean, tpot_mean;  // ms
  int64_t finished = 0, refused = 0;
  uint64_t preemptions = 0, steps = 0;
  int64_t kv_blocks = 0;         // the pool each replica had
  std::string kv_source;         // logged (the run's own count) or derived
};

// Replays `run` with `model` (its terms; the run's client path only where
// the run measured at the client). InputError for settings the catalog or
// scheduler refuses.
ReplayedRun replay_observed(const ObservedRun& run, const StepModel& model);

}  // namespace prefixsim
