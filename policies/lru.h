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
#include "sim/kv/intrusive_list.h"

namespace prefixsim {

class LruPolicy final : public EvictionPolicy {
 public:
  std::string name() const override { return "lru"; }
  void reset(const BlockPool& pool, int32_t num_blocks) override {
    pool_ = &pool;
    queue_.reset(num_blocks);
    for (BlockId b = 1; b < num_blocks; ++b) queue_.push_back(b);
  }
  void on_hit(BlockId b, bool was_free) override {
    if (was_free) queue_.unlink(b);
  }
  BlockId pop_free() override {
    const BlockId b = queue_.pop_front();
    // Prefetch only (no effect on the result): allocation evicts the block
    // it pops, which reads its reference count, its index node (unlinked
    // from its chain without a walk) and its hash, random accesses. The
    // next block's are fetched now, a pop ahead; its queue links are on
    // their way already (unlinking b wrote them). Nothing is *loaded* past
    // the front: following the queue further would wait on each link.
    const BlockId f1 = queue_.front();
    if (f1 != kNoBlock) pool_->prefetch_block(f1);
    return b;
  }
  void on_free(BlockId b) override { queue_.push_back(b); }
  bool observes_contents() const override { return false; }
  bool is_free(BlockId b) const override { return queue_.contains(b); }
  int32_t num_free() const override { return queue_.size(); }
  size_t bytes() const override { return queue_.bytes(); }

 private:
  IntrusiveList queue_;
  const BlockPool* pool_ = nullptr;  // the pool that owns this policy (set by reset)
};

}  // namespace prefixsim
