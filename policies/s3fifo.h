// s3fifo: Simple, Scalable caching with three Static FIFO queues (Yang, Zhang,
// Qiu, Yue, Rashmi, "FIFO queues are all you need for cache eviction", SOSP
// 2023). New content enters a small FIFO S (10 % of the cache); content whose
// hash is in the ghost FIFO G enters the main FIFO M. Hits only bump a 2-bit
// counter. When S holds its share, S's oldest block either moves to M (it was
// hit at least `promote` times, default 1) or is evicted and remembered in G:
// one-hit wonders leave quickly. Otherwise M is evicted as a CLOCK: a block
// with a non-zero counter is reinserted with the counter decremented.
//
// Adapted to a paged KV cache: S and M hold every cached block, in use or
// not, in insertion order; a block in use cannot go, so eviction passes it
// round to the back of its queue. S's share counts the blocks being filled
// right now (they are about to enter S). G holds up to c hashes.
//
// Parameters, ours | libCacheSim S3FIFO | paper (Algorithm 1):
//   small      0.1 of the cache | fifo-size-ratio 0.10 | 10 %
//   promote    1 hit in S | move-to-main-threshold 1 | "accessed" in S
//   ghost      c hashes | ghost-size-ratio 0.90 | as many as M holds
//   counter    2 bits (0..3) | 2 bits | 2 bits
// Where the paged version differs on a single-block stream, and by how
// much, is stated in test/policies/test_policy_differential.cpp (within 1.5
// points of the paper's algorithm there).
#pragma once

#include <algorithm>
#include <vector>

#include "policies/cached_first.h"
#include "policies/ghost_list.h"

namespace prefixsim {

class S3FifoPolicy final : public CachedFirstPolicy {
 public:
  S3FifoPolicy(double small_ratio, int32_t promote) : small_ratio_(small_ratio), promote_(promote) {}
  std::string name() const override { return "s3fifo"; }
  bool in_small(BlockId b) const { return small_.contains(b); }
  bool in_main(BlockId b) const { return main_.contains(b); }
  const GhostList& ghosts() const { return ghost_; }

 protected:
  void init(int32_t num_blocks) override {
    small_.reset(num_blocks);
    main_.reset(num_blocks);
    freq_.assign(static_cast<size_t>(num_blocks), 0);
    to_ghost_.assign(static_cast<size_t>(num_blocks), 0);
    ghost_.reset(capacity(), pool().num_keys());
    small_free_ = main_free_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    freq_[b] = 0;
    (ghost_.erase(info.hash, info.key) ? main_ : small_).push_back(b);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) --(small_.contains(b) ? small_free_ : main_free_);
    freq_[b] = static_cast<uint8_t>(std::min(freq_[b] + 1, 3));
  }
  void on_release(BlockId b) override { ++(small_.contains(b) ? small_free_ : main_free_); }
  BlockId evict() override {
    const double small_target = small_ratio_ * capacity();
    for (;;) {
      if (small_free_ > 0 && (static_cast<double>(small_.size() + num_pending()) >= small_target || main_free_ == 0)) {
        const BlockId t = small_.pop_front();
        if (!block_free(t)) {
          small_.push_back(t);  // in use: it cannot go now
        } else if (freq_[t] >= promote_) {
          freq_[t] = 0;
          main_.push_back(t);
          --small_free_;
          ++main_free_;
        } else {
          --small_free_;
          to_ghost_[t] = 1;
          return t;
        }
      } else {
        const BlockId t = main_.pop_front();
        if (!block_free(t)) {
          main_.push_back(t);
        } else if (freq_[t] > 0) {
          --freq_[t];
          main_.push_back(t);
        } else {
          --main_free_;
          to_ghost_[t] = 0;
          return t;
        }
      }
    }
  }
  void on_gone(BlockId b, const BlockHash& hash, uint32_t key) override {
    if (to_ghost_[b]) ghost_.push(hash, key);
    to_ghost_[b] = 0;
  }
  int64_t ghost_capacity() const override { return ghost_.capacity(); }
  size_t policy_bytes() const override {
    return small_.bytes() + main_.bytes() + freq_.capacity() + to_ghost_.capacity() + ghost_.bytes();
  }

 private:
  double small_ratio_;
  int32_t promote_;
  IntrusiveList small_, main_;    // every cached block, insertion order (front = oldest)
  std::vector<uint8_t> freq_;     // 0..3
  std::vector<uint8_t> to_ghost_;  // evicted from S: remember its hash
  GhostList ghost_;
  int32_t small_free_ = 0, main_free_ = 0;
};

}  // namespace prefixsim
