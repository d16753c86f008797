// What the scheduler hands an executor for one engine step: the same thing
// vLLM's scheduler hands its model runner. A modeled step (cost model) and a
// real GPU step (gpu/) take the very same Batch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/base/types.h"

namespace prefixsim {

struct ScheduledSeq {
  int64_t num_new_tokens = 0;       // tokens computed in this step
  int64_t num_computed_tokens = 0;  // context already in the KV cache before this step
  std::span<const BlockId> block_table;  // valid for the duration of the step
};

struct Request;

// Whose tokens a scheduled sequence computes: what a real backend needs to
// feed its model (token_content.h). The scheduler fills one per sequence;
// batches built by hand (tests, calibration grids) leave `origins` empty.
struct SeqOrigin {
  const Request* request = nullptr;  // valid for the duration of the step
  uint64_t token_key = 0;            // TokenSource::prepare() of that request
};

struct Batch {
  std::vector<ScheduledSeq> seqs;
  std::vector<SeqOrigin> origins;  // parallel to seqs, or empty
  int64_t total_new_tokens() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.num_new_tokens;
    return n;
  }
  void clear() {
    seqs.clear();
    origins.clear();
  }
};

// One step's time split the way async scheduling needs it: `host` is the
// engine core's CPU work for the step (schedule, input preparation, output
// processing), which vLLM's async scheduling overlaps with the previous
// step on the device; `device` is the forward pass.
struct StepCost {
  TimeNs host = 0;
  TimeNs device = 0;
};

// Prices (or runs) one engine step.
class Executor {
 public:
  virtual ~Executor() = default;
  // The whole step, host and device, as the synchronous engine runs it.
  virtual TimeNs step_time(const Batch& batch) = 0;
  // The step split into host and device parts. An executor that cannot tell
  // them apart (a measured GPU step) says it is all device time.
  virtual StepCost step_cost(const Batch& batch) { return {0, step_time(batch)}; }
  // Time outside the engine core that a request's first token and its finish
  // carry (tokenization, the API server's IPC, detokenization); 0 unless the
  // cost model has a per-request term.
  virtual TimeNs request_latency(int64_t /*prompt_tokens*/) const { return 0; }
};

}  // namespace prefixsim
