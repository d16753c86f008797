// What a policy kept, in figures a researcher can check against its paper:
// a wrapper that forwards every hook to the policy unchanged and counts
//   evicted_after_hit   evictions of a block hit since it was cached (0 for
//                       a policy that never gives up a once-hit block while
//                       a never-hit one is free: lfu without aging, a sieve
//                       hand that has not lapped, a sketch that ranks any
//                       hit block above new ones)
//   hits_on_recomputed  hits on content the pool had evicted before and
//                       computed again (high where returning content is
//                       admitted to a protected queue: arc's and s3fifo's
//                       ghost hits)
//   wraps               evictions of content older than the previous
//                       eviction's by more than one request (for a FIFO
//                       hand, sieve's: a lap)
// The figures go to a RetentionFigures the caller owns: a replay destroys
// its pool, and the probe with it, when it returns.
// compare reports the first two per pair; test_policy_agentic.cpp explains
// issue 45's agentic table with them. Only an interned replay (keys) tells
// recomputed content apart; a hash-indexed one counts none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/kv/eviction_policy.h"

namespace prefixsim {

struct RetentionFigures {
  uint64_t evictions = 0, evicted_after_hit = 0, wraps = 0;
  uint64_t hits = 0, hits_on_recomputed = 0;
};

class RetentionProbe final : public EvictionPolicy {
 public:
  // num_keys: the interned trace's key count (0: a hash-indexed replay);
  // `out` is counted into from zero and must outlive the probe's use.
  RetentionProbe(std::unique_ptr<EvictionPolicy> inner, uint32_t num_keys, RetentionFigures& out)
      : in_(std::move(inner)), evicted_(num_keys, 0), f_(out) {
    f_ = RetentionFigures{};
  }
  // Per block, for callers that sample the pool: its content's key (kNoKey
  // when it holds none) and whether a lookup hit it since it was cached.
  uint32_t cached_key(BlockId b) const { return key_[b]; }
  bool hit_since_cached(BlockId b) const { return hit_[b] != 0; }

  std::string name() const override { return in_->name(); }
  void reset(const BlockPool& pool, int32_t num_blocks) override {
    in_->reset(pool, num_blocks);
    hit_.assign(static_cast<size_t>(num_blocks), 0);
    recomputed_.assign(static_cast<size_t>(num_blocks), 0);
    born_.assign(static_cast<size_t>(num_blocks), 0);
    key_.assign(static_cast<size_t>(num_blocks), kNoKey);
  }
  void on_hit(BlockId b, bool was_free) override {
    in_->on_hit(b, was_free);
    hit_[b] = 1;
    ++f_.hits;
    f_.hits_on_recomputed += recomputed_[b];
  }
  BlockId pop_free() override { return in_->pop_free(); }
  void on_free(BlockId b) override { in_->on_free(b); }
  // Every policy's decisions are the same whether or not the pool describes
  // contents to it; the probe needs them.
  bool observes_contents() const override { return true; }
  void on_cached(BlockId b, const CachedBlockInfo& info) override {
    if (in_->observes_contents()) in_->on_cached(b, info);
    hit_[b] = 0;
    born_[b] = seq_;
    key_[b] = info.key;
    recomputed_[b] = info.key < evicted_.size() ? evicted_[info.key] : 0;
  }
  void on_evicted(BlockId b, const BlockHash& hash, uint32_t key) override {
    ++f_.evictions;
    f_.evicted_after_hit += hit_[b];
    if (born_[b] + 1 < last_born_) ++f_.wraps;
    last_born_ = born_[b];
    if (key < evicted_.size()) evicted_[key] = 1;
    key_[b] = kNoKey;
    if (in_->observes_contents()) in_->on_evicted(b, hash, key);
  }
  void on_request(uint64_t seq) override {
    seq_ = seq;
    in_->on_request(seq);
  }
  bool is_free(BlockId b) const override { return in_->is_free(b); }
  int32_t num_free() const override { return in_->num_free(); }
  size_t bytes() const override { return in_->bytes(); }
  int64_t ghost_capacity() const override { return in_->ghost_capacity(); }

 private:
  std::unique_ptr<EvictionPolicy> in_;
  std::vector<uint8_t> evicted_;          // by key: evicted at least once
  std::vector<uint8_t> hit_, recomputed_;  // by block
  std::vector<uint64_t> born_;            // by block: the request that cached it
  std::vector<uint32_t> key_;             // by block
  uint64_t seq_ = 0, last_born_ = 0;
  RetentionFigures& f_;
};

}  // namespace prefixsim
