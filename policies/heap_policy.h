// Shared shape of the GreedyDual policies (lfu-da, gdsf): a cached block
// gets a key when it becomes free, and the free cached block with the
// smallest key is evicted. Keys only change while a
// block is in use (hits), and a block in use is out of the heap, so a key
// fixed at release time stays right for as long as the block waits.
//
// The order lives in a BucketQueue: a policy whose keys crowd above the
// minimum names a bucket width and gets buckets instead of heap sifts;
// width 0 keeps the plain heap, the reference the buckets are tested
// against.
#pragma once

#include "policies/bucket_queue.h"
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
  // Bucket width over the key's primary and ring size (BucketQueue); a
  // width of 0 orders every key in the heap.
  virtual double bucket_width() const { return 0; }
  virtual int32_t bucket_slots() const { return 1024; }

  void init(int32_t num_blocks) final {
    queue_.reset(num_blocks, bucket_width(), bucket_slots());
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
  BucketQueue queue_;
  uint64_t tick_ = 0;
};

}  // namespace prefixsim
