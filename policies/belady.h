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
#pragma once

#include <memory>
#include <vector>

#include "policies/block_future.h"
#include "policies/heap_policy.h"

namespace prefixsim {

class BeladyPolicy final : public HeapPolicy {
 public:
  explicit BeladyPolicy(std::shared_ptr<const BlockFuture> future) : future_(std::move(future)) {}
  std::string name() const override { return "belady"; }
  void on_request(uint64_t seq) override { now_ = seq; }

 protected:
  void init_state(int32_t num_blocks) override {
    id_.assign(static_cast<size_t>(num_blocks), kNoKey);
    depth_.assign(static_cast<size_t>(num_blocks), 0);
    cursor_.assign(future_->num_keys(), 0);
    now_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    id_[b] = info.key;  // kNoKey (a pool that is not keyed): no known future
    depth_[b] = info.depth;
  }
  HeapKey release_key(BlockId b) override {
    // Farthest next use = smallest key; then deepest; then LRU.
    const uint32_t next = next_use(b);
    const double primary = next == BlockFuture::kNever ? -1e300 : -static_cast<double>(next);
    const uint64_t secondary = (static_cast<uint64_t>(UINT32_MAX - depth_[b]) << 32) | (tick() & 0xffffffffu);
    return {primary, secondary};
  }
  size_t state_bytes() const override {
    return (id_.capacity() + depth_.capacity() + cursor_.capacity()) * sizeof(uint32_t);
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
  std::vector<uint32_t> id_;      // key of each cached block's hash
  std::vector<uint32_t> depth_;
  std::vector<uint32_t> cursor_;  // per key: first use not yet passed
  uint64_t now_ = 0;
};

}  // namespace prefixsim
