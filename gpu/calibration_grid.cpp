#include "gpu/calibration_grid.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "sim/base/error.h"

namespace prefixsim::gpu {

BatchSummary CalibrationStep::summary() const {
  BatchSummary b;
  for (const auto& [n, c] : seqs) b.add(n, c);
  return b;
}

int64_t CalibrationStep::pool_tokens() const {
  int64_t t = 0;
  for (const auto& [n, c] : seqs) t += n + c;
  return t;
}

std::vector<CalibrationStep> calibration_grid(int64_t max_pool_tokens) {
  std::vector<CalibrationStep> grid;
  auto add = [&](std::string kind, std::vector<std::pair<int64_t, int64_t>> seqs) {
    CalibrationStep s{std::move(kind), std::move(seqs)};
    if (s.pool_tokens() <= max_pool_tokens) grid.push_back(std::move(s));
  };
  // Prefill of one sequence: the linear layers' floor and slope (n), and the
  // attention term n*(c + n/2) over cached context c.
  for (int64_t n : {32, 128, 512, 1024, 2048, 4096, 8192})
    for (int64_t c : {0, 2048, 8192, 16384}) add("prefill", {{n, c}});
  // Batched prefills: the same tokens split over several sequences.
  for (int64_t s : {2, 4, 8, 16})
    for (int64_t n : {256, 1024}) add("prefill", std::vector<std::pair<int64_t, int64_t>>(static_cast<size_t>(s), {n, 0}));
  // Decode: one token per sequence, the KV-read term (batch x context).
  for (int64_t s : {1, 8, 32, 64, 128, 256})
    for (int64_t c : {512, 2048, 8192}) add("decode", std::vector<std::pair<int64_t, int64_t>>(static_cast<size_t>(s), {1, c}));
  // Mixed: a chunked prefill beside a decode batch, as vLLM schedules them.
  for (int64_t n : {512, 2048})
    for (int64_t c : {0, 4096})
      for (int64_t s : {16, 64, 128}) {
        std::vector<std::pair<int64_t, int64_t>> seqs(static_cast<size_t>(s), {1, 2048});
        seqs.insert(seqs.begin(), {n, c});
        add("mixed", std::move(seqs));
      }
  return grid;
}

PagedBatch calibration_batch(const CalibrationStep& step, int32_t block_size, int64_t num_blocks,
                             std::vector<std::vector<BlockId>>& tables) {
  std::vector<BlockId> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(42));
  tables.assign(step.seqs.size(), {});
  size_t next = 0;
  Batch b;
  for (size_t i = 0; i < step.seqs.size(); ++i) {
    const auto [n, c] = step.seqs[i];
    const int64_t need = (n + c + block_size - 1) / block_size;
    if (next + static_cast<size_t>(need) > ids.size())
      throw InputError("calibration step needs more than the pool's " + std::to_string(num_blocks) + " blocks");
    tables[i].assign(ids.begin() + static_cast<std::ptrdiff_t>(next), ids.begin() + static_cast<std::ptrdiff_t>(next + need));
    next += static_cast<size_t>(need);
  }
  for (size_t i = 0; i < step.seqs.size(); ++i) b.seqs.push_back({step.seqs[i].first, step.seqs[i].second, tables[i]});
  return export_paged_batch(b, block_size, num_blocks);
}

}  // namespace prefixsim::gpu
