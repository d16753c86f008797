// sieve: SIEVE (Zhang, Yang, Yue, Vigfusson, Rashmi, "SIEVE is Simpler than
// LRU: an Efficient Turn-Key Eviction Algorithm for Web Caches", NSDI 2024).
// One FIFO queue and a "visited" bit per block; a hit only sets the bit. A
// hand walks from the oldest block towards the newest: a visited block has
// its bit cleared and stays where it is (no reinsertion, unlike CLOCK); the
// first unvisited block is evicted and the hand stops just past it. New
// content enters at the new end, so survivors drift to the old end.
//
// Adapted to a paged KV cache: the queue holds every cached block, in use or
// not; the hand walks past a block in use without touching its bit.
// Parameters: none (paper, libCacheSim SIEVE). Equal to the paper's
// Algorithm 1 eviction for eviction on single-block streams
// (test/policies/test_policy_differential.cpp).
// The hand nears the newest block only by the visited blocks it skips, so
// where few blocks are hit it may not lap for thousands of requests: a block
// hit once then stays that long. On agentic sessions that is lfu's order
// over never-hit blocks (test/policies/test_policy_agentic.cpp).
#pragma once

#include <vector>

#include "policies/cached_first.h"

namespace prefixsim {

class SievePolicy final : public CachedFirstPolicy {
 public:
  std::string name() const override { return "sieve"; }
  BlockId hand() const { return hand_; }
  bool visited(BlockId b) const { return visited_[b] != 0; }

 protected:
  void init(int32_t num_blocks) override {
    queue_.reset(num_blocks);
    visited_.assign(static_cast<size_t>(num_blocks), 0);
    hand_ = kNoBlock;
  }
  void on_insert(BlockId b, const CachedBlockInfo&) override {
    visited_[b] = 0;
    queue_.push_back(b);
  }
  void on_access(BlockId b, bool) override { visited_[b] = 1; }
  void on_release(BlockId) override {}
  BlockId evict() override {
    BlockId h = hand_ == kNoBlock ? queue_.front() : hand_;
    for (;;) {
      if (h == kNoBlock) h = queue_.front();  // wrap round to the oldest
      if (block_free(h)) {
        if (!visited_[h]) {
          hand_ = queue_.next(h);
          queue_.unlink(h);
          return h;
        }
        visited_[h] = 0;
      }
      h = queue_.next(h);
    }
  }
  size_t policy_bytes() const override { return queue_.bytes() + visited_.capacity(); }

 private:
  IntrusiveList queue_;  // front = oldest
  std::vector<uint8_t> visited_;
  BlockId hand_ = kNoBlock;  // next block the hand looks at; kNoBlock = start at the oldest
};

}  // namespace prefixsim
