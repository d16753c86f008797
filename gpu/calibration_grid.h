// The designed grid of engine steps that GPU calibration measures:
// prefill-only steps over a log grid of (new tokens, cached
// tokens), a few batched prefills, decode-only steps over (batch, context),
// and mixed steps (one chunked prefill beside a decode batch), each within
// a KV pool of max_pool_tokens. The shapes are plain data so that the grid
// is tested on any machine; prefixsim-gpu-bench --calibrate times them, and
// `prefixsim gpu calibrate --samples` fits the cost model to the times.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpu/kv_layout.h"
#include "sim/engine/batch.h"
#include "sim/cost/cost_model.h"

namespace prefixsim::gpu {

struct CalibrationStep {
  std::string kind;                               // prefill, decode or mixed
  std::vector<std::pair<int64_t, int64_t>> seqs;  // (new tokens n, cached tokens c) of each sequence
  BatchSummary summary() const;
  int64_t pool_tokens() const;  // sum of n + c: the KV the step reads and writes
};

// Every step fits in max_pool_tokens of KV.
std::vector<CalibrationStep> calibration_grid(int64_t max_pool_tokens);

// The step as the model runner takes it: each sequence's pages drawn, in a
// fixed shuffled order, from a pool of num_blocks blocks (as in a pool that
// has run for a while). `tables` must outlive the result's use.
PagedBatch calibration_batch(const CalibrationStep& step, int32_t block_size, int64_t num_blocks,
                             std::vector<std::vector<BlockId>>& tables);

}  // namespace prefixsim::gpu
