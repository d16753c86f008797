// Base of every policy but lru: free blocks that hold no cached content
// (never used, or released before they filled) are handed out first, in
// ascending id order after reset; only when none is left does the derived
// policy choose which free *cached* block to evict.
//
// The base keeps the bookkeeping every policy needs: which blocks are free,
// which are "pending" (handed out, content not known yet: they will join the
// policy's insertion queue once cached, so queue-share rules such as
// S3-FIFO's 10 % small queue count them), and the count of free cached
// blocks. Derived policies see a cached block's whole life:
//   on_insert   a handed-out block was cached (a miss was filled); in use
//   on_access   a lookup hit it; if it was free it leaves the free set now
//   on_release  its last reference went; it is free and still cached
//   evict       choose, and drop from every structure, one free cached block
//   on_gone     the pool evicted that block's hash (ghost lists remember it)
#pragma once

#include <vector>

#include "sim/kv/block_pool.h"
#include "sim/base/error.h"
#include "sim/kv/eviction_policy.h"
#include "sim/kv/intrusive_list.h"

namespace prefixsim {

class CachedFirstPolicy : public EvictionPolicy {
 public:
  void reset(const BlockPool& pool, int32_t num_blocks) final {
    pool_ = &pool;
    capacity_ = num_blocks - 1;
    fresh_.reset(num_blocks);
    for (BlockId b = 1; b < num_blocks; ++b) fresh_.push_back(b);
    state_.assign(static_cast<size_t>(num_blocks), BlockState{});
    for (BlockId b = 1; b < num_blocks; ++b) state_[b].free = 1;
    num_free_ = num_blocks - 1;
    num_cached_free_ = 0;
    num_pending_ = 0;
    init(num_blocks);
  }

  void on_hit(BlockId b, bool was_free) final {
    if (was_free) {
      state_[b].free = 0;
      --num_free_;
      if (fresh_.contains(b)) {
        fresh_.unlink(b);  // cannot happen for a cached block; kept for safety
        return;
      }
      --num_cached_free_;
    }
    on_access(b, was_free);
  }

  BlockId pop_free() final {
    BlockId b;
    if (!fresh_.empty()) {
      b = fresh_.pop_front();
    } else {
      if (num_cached_free_ == 0) return kNoBlock;
      b = evict();
      --num_cached_free_;
    }
    state_[b] = {0, 1};
    --num_free_;
    ++num_pending_;
    return b;
  }

  void on_free(BlockId b) final {
    clear_pending(b);
    state_[b].free = 1;
    ++num_free_;
    if (!pool_->is_cached(b)) {
      fresh_.push_back(b);
    } else {
      ++num_cached_free_;
      on_release(b);
    }
  }

  void on_cached(BlockId b, const CachedBlockInfo& info) final {
    clear_pending(b);
    on_insert(b, info);
  }
  void on_evicted(BlockId b, const BlockHash& hash, uint32_t key) final { on_gone(b, hash, key); }

  bool is_free(BlockId b) const final { return state_[b].free != 0; }
  int32_t num_free() const final { return num_free_; }
  size_t bytes() const final {
    return fresh_.bytes() + state_.capacity() * sizeof(BlockState) + policy_bytes();
  }

 protected:
  virtual void init(int32_t num_blocks) = 0;
  virtual void on_insert(BlockId b, const CachedBlockInfo& info) = 0;
  virtual void on_access(BlockId b, bool was_free) = 0;
  virtual void on_release(BlockId b) = 0;
  virtual BlockId evict() = 0;
  virtual void on_gone(BlockId /*b*/, const BlockHash& /*hash*/, uint32_t /*key*/) {}
  virtual size_t policy_bytes() const = 0;

  const BlockPool& pool() const { return *pool_; }
  // Prefetch only (no effect on any result), for policies that know their
  // next victims: `far` will be evicted in a while, `near` sooner. The far
  // one's pool and free-set state is fetched; the near one's index slot,
  // which needs its key, fetched by an earlier call as the far one. Also
  // the far one's hash slot, for writing: a keyed pool does not read it to
  // evict, but writes it when the block is cached again, and that store,
  // a miss, held back every store behind it (gdsf 103 -> 90 ns per block
  // access).
  void prefetch_victims(BlockId far, BlockId near) const {
    if (far != kNoBlock) {
      pool_->prefetch_block(far);
      __builtin_prefetch(&pool_->hash_of(far), 1);
      __builtin_prefetch(&state_[far]);
      prefetch_state(far);
    }
    if (near != kNoBlock && pool_->is_cached(near)) pool_->prefetch_index_of(near);
  }
  // How far ahead in eviction order prefetch_victims is best called.
  static constexpr size_t kFarVictim = 16, kNearVictim = 8;
  // The derived policy's per-block state of b, for prefetch_victims.
  virtual void prefetch_state(BlockId /*b*/) const {}
  bool block_free(BlockId b) const { return state_[b].free != 0; }
  int32_t capacity() const { return capacity_; }
  int32_t num_pending() const { return num_pending_; }
  int32_t num_cached_free() const { return num_cached_free_; }

 private:
  void clear_pending(BlockId b) {
    if (state_[b].pending) {
      state_[b].pending = 0;
      --num_pending_;
    }
  }

  const BlockPool* pool_ = nullptr;
  int32_t capacity_ = 0;
  IntrusiveList fresh_;            // free and uncached, reused first
  struct BlockState {
    uint8_t free = 0;     // in the free set (cached or not)
    uint8_t pending = 0;  // handed out, not cached yet
  };
  std::vector<BlockState> state_;  // side by side: one cache line per block
  int32_t num_free_ = 0;
  int32_t num_cached_free_ = 0;
  int32_t num_pending_ = 0;
};

}  // namespace prefixsim
