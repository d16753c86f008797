// lru (alias vllm): vLLM v1's free block queue, exactly.
//
// Idea: free blocks wait in one queue; allocation pops the head, freeing
// appends to the tail, and a hit on a free block unlinks it from wherever it
// sits. Because a finished request frees its block table last-to-first, a
// request's tail blocks sit ahead of its prefix and are evicted first. This
// is LRU over *release time*, not over access time. Source:
// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue, block_pool.py.
// It must keep matching the vLLM goldens block for block, so unlike the other
// policies it does not prefer never-used blocks over cached ones.
// So it differs from textbook LRU: a request's uncached partial last block
// is freed into the same queue, and later requests take it, or a cached
// block ahead of it, from the head. On a stream of one-block prompts (block
// + 1 token) an object stays cached iff the accesses since its last use
// plus the distinct objects used since number at most C: about C/2 objects
// of LRU order, not C (test/policies/test_policy_differential.cpp holds
// this eviction for eviction; leaf-first is textbook LRU there).
#pragma once

#include "sim/kv/block_pool.h"
#include "sim/kv/eviction_policy.h"
#include "sim/kv/lazy_queue.h"

namespace prefixsim {

class LruPolicy final : public EvictionPolicy {
 public:
  std::string name() const override { return "lru"; }
  void reset(const BlockPool& pool, int32_t num_blocks) override {
    pool_ = &pool;
    queue_.reset(num_blocks, 1);  // every block but the null block, in id order
  }
  void on_hit(BlockId b, bool was_free) override {
    if (was_free) queue_.unlink(b);
  }
  BlockId pop_free() override {
    const BlockId b = queue_.pop_front();
    // Prefetch only (no effect on the result): allocation evicts the blocks
    // it pops, which reads each one's queue position, reference count,
    // index node and hash, then its hash's bucket: random accesses. The log
    // names the next victims without a load (stale entries among them cost
    // a wasted prefetch), so they are fetched far enough ahead to arrive:
    // the block's own state kFar pops ahead, its bucket (which needs its
    // hash, fetched by then) kNear ahead.
    const BlockId far = queue_.peek(kFar), near = queue_.peek(kNear);
    if (far != kNoBlock) {
      queue_.prefetch(far);
      pool_->prefetch_block(far);
    }
    if (near != kNoBlock && pool_->is_cached(near)) pool_->prefetch_index_of(near);
    return b;
  }
  void on_free(BlockId b) override { queue_.push_back(b); }
  bool observes_contents() const override { return false; }
  bool is_free(BlockId b) const override { return queue_.contains(b); }
  int32_t num_free() const override { return queue_.size(); }
  size_t bytes() const override { return queue_.bytes(); }

 private:
  static constexpr size_t kFar = 12, kNear = 6;
  LazyQueue queue_;  // free blocks, least recently released first
  const BlockPool* pool_ = nullptr;  // the pool that owns this policy (set by reset)
};

}  // namespace prefixsim
