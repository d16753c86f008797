#include "sim/fleet/engine_view.h"

#include <algorithm>

namespace prefixsim {

// Every replica's leading cached blocks, walked side by side: each round
// looks up the next block on every replica still matching. The pools of a
// fleet outgrow the caches, so each lookup is a few dependent misses (the
// bucket, then the chain's first node and hash); they are fetched ahead
// down the prompt, buckets kBucketAhead blocks ahead and chains
// kChainAhead ahead (their buckets arrived by then), on every replica
// still walking, so the misses are in flight together instead of one
// after another. The same counts as cached_prefix_blocks, replica by
// replica (test_fleet_view).
void EngineFleetView::cached_prefix_blocks_all(std::span<const BlockHash> prompt, std::span<size_t> out) const {
  const uint32_t n = size();
  if (!lagged_.empty()) {
    for (uint32_t i = 0; i < n; ++i) out[i] = lagged_[i]->leading(prompt, loop_.now());
    return;
  }
  walking_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    out[i] = 0;
    if (replicas_[i]->kv().pool().caching_enabled()) walking_.push_back(i);
  }
  constexpr size_t kBucketAhead = 4, kChainAhead = 2;
  const auto index = [&](uint32_t i) -> const BlockHashIndex& { return replicas_[i]->kv().pool().index(); };
  for (size_t d = 0; d < std::min(kBucketAhead, prompt.size()); ++d)
    for (uint32_t i : walking_) index(i).prefetch(prompt[d]);
  for (size_t d = 0; d < std::min(kChainAhead, prompt.size()); ++d)
    for (uint32_t i : walking_) index(i).prefetch_chain(prompt[d]);
  for (size_t depth = 0; depth < prompt.size() && !walking_.empty(); ++depth) {
    const BlockHash& h = prompt[depth];
    const bool bucket_ahead = depth + kBucketAhead < prompt.size(), chain_ahead = depth + kChainAhead < prompt.size();
    size_t kept = 0;
    for (uint32_t i : walking_) {
      const BlockHashIndex& ix = index(i);
      if (bucket_ahead) ix.prefetch(prompt[depth + kBucketAhead]);
      if (chain_ahead) ix.prefetch_chain(prompt[depth + kChainAhead]);
      if (ix.find(h) != kNoBlock) {
        out[i] = depth + 1;
        walking_[kept++] = i;
      }
    }
    walking_.resize(kept);
  }
}

}  // namespace prefixsim
