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

struct Batch {
  std::vector<ScheduledSeq> seqs;
  int64_t total_new_tokens() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.num_new_tokens;
    return n;
  }
  void clear() { seqs.clear(); }
};

// Prices (or runs) one engine step.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual TimeNs step_time(const Batch& batch) = 0;
};

}  // namespace prefixsim
