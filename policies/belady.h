// belady: the offline policy. It knows, from a pre-pass over the trace
// (BlockFuture), which request will next look up each cached block, and
// evicts the free block whose next use lies farthest in the future (never
// used again first); among equal next uses the deeper block goes first, so a
// prefix chain is cut from its tail. (Belady, "A study of replacement
// algorithms for a virtual-storage computer", IBM Systems Journal 1966.)
//
// Not a proven optimum here: with blocks pinned by running requests and
// hits that need the whole prefix chain, MIN's optimality proof does not
// apply; it is a strong offline heuristic and a useful reference line.
// The replay must call on_request(i) before request i's lookup, and cache
// blocks with their keys (an interned PreparedTrace replay).
//
// The order, (next use descending, depth descending, release ascending), is
// kept in two BucketQueues: blocks never used again by depth (one bucket per
// depth, filled in release order), the others by next-use request (one
// bucket per request, sorted by depth when it reaches the front). A block's
// key is fixed when it is released, as in a heap. `buckets=false` keeps one
// heap over the whole key, the reference the buckets are tested against.
#pragma once

#include <memory>
#include <vector>

#include "policies/block_future.h"
#include "policies/bucket_queue.h"
#include "policies/cached_first.h"

namespace prefixsim {

class BeladyPolicy final : public CachedFirstPolicy {
 public:
  explicit BeladyPolicy(std::shared_ptr<const BlockFuture> future, bool buckets = true)
      : future_(std::move(future)), buckets_(buckets) {}
  std::string name() const override { return "belady"; }
  void on_request(uint64_t seq) override { now_ = seq; }

 protected:
  void init(int32_t num_blocks) override {
    id_.assign(static_cast<size_t>(num_blocks), kNoKey);
    depth_.assign(static_cast<size_t>(num_blocks), 0);
    cursor_.assign(future_->num_keys(), 0);
    now_ = 0;
    tick_ = 0;
    // Next uses are request numbers: one bucket each, the ring as long as
    // the trace (capped; farther ones wait in the heap).
    const auto requests = static_cast<int32_t>(std::min<size_t>(future_->num_requests() + 2, size_t{1} << 20));
    soon_.reset(num_blocks, buckets_ ? 1.0 : 0.0, requests);
    never_.reset(num_blocks, buckets_ ? 1.0 : 0.0, kDepthSlots);
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    id_[b] = info.key;  // kNoKey (a pool that is not keyed): no known future
    depth_[b] = info.depth;
  }
  void on_access(BlockId b, bool was_free) override {
    if (!was_free) return;
    if (never_.contains(b))
      never_.erase(b);
    else
      soon_.erase(b);
  }
  void on_release(BlockId b) override {
    ++tick_;
    // Farthest next use = smallest key; then deepest; then LRU.
    const uint32_t next = next_use(b);
    const uint64_t deepest_first = (static_cast<uint64_t>(UINT32_MAX - depth_[b]) << 32) | (tick_ & 0xffffffffu);
    if (next != BlockFuture::kNever)
      soon_.push(b, {-static_cast<double>(next), deepest_first});
    else if (buckets_)
      never_.push(b, {-static_cast<double>(depth_[b]), tick_});
    else
      soon_.push(b, {-1e300, deepest_first});
  }
  BlockId evict() override {
    BucketQueue& q = never_.empty() ? soon_ : never_;
    const BlockId b = q.pop();
    prefetch_victims(q.peek(kFarVictim), q.peek(kNearVictim));
    return b;
  }
  size_t policy_bytes() const override {
    return soon_.bytes() + never_.bytes() + (id_.capacity() + depth_.capacity() + cursor_.capacity()) * sizeof(uint32_t);
  }

 private:
  static constexpr int32_t kDepthSlots = 1 << 14;  // deeper chains' blocks wait in the heap

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
  bool buckets_;
  std::vector<uint32_t> id_;      // key of each cached block's hash
  std::vector<uint32_t> depth_;
  std::vector<uint32_t> cursor_;  // per key: first use not yet passed
  uint64_t now_ = 0;
  uint64_t tick_ = 0;   // one per release: the LRU tie-break
  BucketQueue soon_;    // blocks used again, by (next use, depth, release)
  BucketQueue never_;   // blocks never used again, by (depth, release)
};

}  // namespace prefixsim
