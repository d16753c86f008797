// Shared shape of the GreedyDual policies (lfu-da, gdsf): a cached block
// gets a key when it becomes free, and the free cached block with the
// smallest key is evicted. Keys only change while a
// block is in use (hits), and a block in use is out of the heap, so a key
// fixed at release time stays right for as long as the block waits.
//
// The order lives in a RunQueue: a request's blocks are released together
// and get keys sorted along their chain, so the queue merges sorted runs
// instead of sifting every block through a heap. reference_heap() keeps
// the plain heap, the reference the runs are tested against.
#pragma once

#include "policies/run_queue.h"
#include "policies/cached_first.h"

namespace prefixsim {

class HeapPolicy : public CachedFirstPolicy {
 protected:
  // Key of a cached block that has just become free.
  virtual HeapKey release_key(BlockId b) = 0;
  // Per-block state sized for num_blocks.
  virtual void init_state(int32_t num_blocks) = 0;
  // The block with this key was chosen for eviction.
  virtual void chosen(const HeapKey& /*key*/) {}
  virtual size_t state_bytes() const = 0;
  // True: every key in one heap (the reference), not in sorted runs.
  virtual bool reference_heap() const { return false; }

  void init(int32_t num_blocks) final {
    queue_.reset(num_blocks, reference_heap());
    tick_ = 0;
    init_state(num_blocks);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) queue_.erase(b);
  }
  void on_release(BlockId b) final {
    ++tick_;
    queue_.push(b, release_key(b));
  }
  BlockId evict() final {
    const BlockId b = queue_.top();
    chosen(queue_.top_key());
    queue_.erase(b);
    prefetch_victims(queue_.peek(kFarVictim), queue_.peek(kNearVictim));
    return b;
  }
  size_t policy_bytes() const final { return queue_.bytes() + state_bytes(); }

  // Release counter: the LRU tie-break (older release = smaller).
  uint64_t tick() const { return tick_; }

 private:
  RunQueue queue_;
  uint64_t tick_ = 0;
};

}  // namespace prefixsim
