// belady: the offline policy. It knows, from a pre-pass over the trace
// (BlockFuture), which request will next look up each cached block, and
// evicts the free block whose next use lies farthest in the future (never
// used again first); among equal next uses the deeper block goes first, so a
// prefix chain is cut from its tail; blocks never used again go in release
// order, as their order among themselves changes no hit (none of them is
// looked up again) and no eviction count. (Belady, "A study of replacement
// algorithms for a virtual-storage computer", IBM Systems Journal 1966.)
//
// Not a proven optimum here: with blocks pinned by running requests and
// hits that need the whole prefix chain, MIN's optimality proof does not
// apply; it is a strong offline heuristic and a useful reference line.
// The replay must call on_request(i) before request i's lookup, and cache
// blocks with their keys (an interned PreparedTrace replay).
//
// Blocks never used again (most of them, on real traces) wait in a FIFO
// list. The others' order, (next use descending, depth descending, release
// ascending), is kept in a RunQueue. A request's blocks are released
// deepest first, and a block's next use is never earlier than its parent's
// (every lookup that reaches it passed its parent), so each request's
// releases are one sorted run. A block's key is fixed when it is released,
// as in a heap. `fast=false` keeps every block in one heap, never-used ones
// keyed (farthest, release), the reference the list and runs are tested
// against.
//
// Parameters: none (Belady's MIN; libCacheSim's Belady, which takes each
// request's next access time from the trace). The future here is per block
// key and per request, built by a pre-pass over the whole trace, so belady
// runs in cache mode only: the engine retries requests after refusals and
// preemptions, which the request-indexed future cannot follow.
// Adapted to a paged KV cache: "next use" is the next request whose prefix
// lookup may reach the block (floor((prompt - 1) / B) blocks), not any touch;
// only free blocks can go (running requests pin theirs, so MIN's choice may
// be unavailable); never-used free blocks go first (CachedFirstPolicy); ties
// on next use go deepest first, so a chain is cut from its tail. Equal to
// textbook MIN on single-block streams (test_policy_differential.cpp).
#pragma once

#include <memory>
#include <vector>

#include "policies/block_future.h"
#include "policies/run_queue.h"
#include "policies/cached_first.h"

namespace prefixsim {

class BeladyPolicy final : public CachedFirstPolicy {
 public:
  // never_by_depth (reference heap only): never-used blocks ordered like
  // the others, deepest first, as before they had their list; a test holds
  // that this changes no result.
  explicit BeladyPolicy(std::shared_ptr<const BlockFuture> future, bool fast = true, bool never_by_depth = false)
      : future_(std::move(future)), fast_(fast), never_by_depth_(never_by_depth && !fast) {}
  std::string name() const override { return "belady"; }
  void on_request(uint64_t seq) override { now_ = seq; }

 protected:
  void init(int32_t num_blocks) override {
    id_.assign(static_cast<size_t>(num_blocks), kNoKey);
    depth_.assign(static_cast<size_t>(num_blocks), 0);
    cursor_.assign(future_->num_keys(), 0);
    now_ = 0;
    tick_ = 0;
    queue_.reset(num_blocks, !fast_);
    never_.reset(num_blocks);
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    id_[b] = info.key;  // kNoKey (a pool that is not keyed): no known future
    depth_[b] = info.depth;
  }
  void on_access(BlockId b, bool was_free) override {
    if (!was_free) return;
    if (never_.contains(b))
      never_.unlink(b);  // only for a block cached without a key
    else
      queue_.erase(b);
  }
  void on_release(BlockId b) override {
    ++tick_;
    const uint32_t next = next_use(b);
    if (next == BlockFuture::kNever && fast_) {
      never_.push_back(b);  // no depth read: most releases end here
      return;
    }
    // Farthest next use = smallest key; then deepest; then LRU.
    const uint64_t deepest_first = (static_cast<uint64_t>(UINT32_MAX - depth_[b]) << 32) | (tick_ & 0xffffffffu);
    if (next != BlockFuture::kNever)
      queue_.push(b, {-static_cast<double>(next), deepest_first});
    else
      queue_.push(b, {-1e300, never_by_depth_ ? deepest_first : tick_});
  }
  BlockId evict() override {
    if (!never_.empty()) {
      const BlockId b = never_.pop_front();
      // Hints, as lru gives them: the next victim's index slot, the one
      // after's pool state.
      const BlockId near = never_.front();
      prefetch_victims(near == kNoBlock ? kNoBlock : never_.next(near), near);
      return b;
    }
    const BlockId b = queue_.pop();
    prefetch_victims(queue_.peek(kFarVictim), queue_.peek(kNearVictim));
    return b;
  }
  size_t policy_bytes() const override {
    return queue_.bytes() + never_.bytes() +
           (id_.capacity() + depth_.capacity() + cursor_.capacity()) * sizeof(uint32_t);
  }

 private:
  // First use after the current request; cursors only move forward because
  // requests are replayed in order.
  uint32_t next_use(BlockId b) {
    const uint32_t id = id_[b];
    if (id == kNoKey || id >= future_->num_keys()) return BlockFuture::kNever;
    const auto uses = future_->uses(id);
    uint32_t c = cursor_[id];
    while (c < uses.size() && uses[c] <= now_) ++c;
    cursor_[id] = c;
    return c < uses.size() ? uses[c] : BlockFuture::kNever;
  }

  std::shared_ptr<const BlockFuture> future_;
  bool fast_;
  bool never_by_depth_;
  std::vector<uint32_t> id_;      // key of each cached block's hash
  std::vector<uint32_t> depth_;
  std::vector<uint32_t> cursor_;  // per key: first use not yet passed
  uint64_t now_ = 0;
  uint64_t tick_ = 0;   // one per release: the LRU tie-break
  IntrusiveList never_;  // free blocks never used again, in release order
  RunQueue queue_;       // the others, by (next use, depth, release)
};

}  // namespace prefixsim
