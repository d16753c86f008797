// Shared shape of the priority-ordered policies (fifo, lfu, lfu-da, gdsf,
// belady): a cached block gets a key when it becomes free, and the free
// cached block with the smallest key is evicted. Keys only change while a
// block is in use (hits), and a block in use is out of the heap, so a key
// fixed at release time stays right for as long as the block waits.
#pragma once

#include "policies/cached_first.h"
#include "policies/indexed_heap.h"

namespace prefixsim {

class HeapPolicy : public CachedFirstPolicy {
 protected:
  // Key of a cached block that has just become free.
  virtual HeapKey release_key(BlockId b) = 0;
  // Per-block state sized for num_blocks.
  virtual void init_state(int32_t num_blocks) = 0;
  // b was chosen for eviction (its key is still readable).
  virtual void chosen(BlockId /*b*/) {}
  virtual size_t state_bytes() const = 0;

  void init(int32_t num_blocks) final {
    heap_.reset(num_blocks);
    tick_ = 0;
    init_state(num_blocks);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) heap_.erase(b);
  }
  void on_release(BlockId b) final {
    ++tick_;
    heap_.push(b, release_key(b));
  }
  BlockId evict() final {
    const BlockId b = heap_.top();
    chosen(b);
    heap_.erase(b);
    return b;
  }
  size_t policy_bytes() const final { return heap_.bytes() + state_bytes(); }

  // Release counter: the LRU tie-break (older release = smaller).
  uint64_t tick() const { return tick_; }
  const IndexedHeap& heap() const { return heap_; }

 private:
  IndexedHeap heap_;
  uint64_t tick_ = 0;
};

}  // namespace prefixsim
