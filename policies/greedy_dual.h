// gdsf (and lfu-da's reference): the GreedyDual family with an inflation
// value L.
//
// A block's priority is K = L + frequency * cost / size, set when it is
// accessed; the free block with the smallest K goes (ties: LRU), and L
// rises to that K. New content therefore starts at the current L, so old
// counts age out without any decay pass.
//   lfu-da  cost = size = 1: LFU with Dynamic Aging. Registered as
//           LfuDaPolicy (lfu_da.h), whose integer keys allow O(1) lists;
//           this class with cost 1 is the reference it is tested against.
//   gdsf    Greedy-Dual-Size-Frequency (Cherkasova, HP Labs HPL-98-69, 1998)
//           with cost = the prefill compute a cached block saves. A block at
//           depth d (tokens before it: d*B) saves its linear-layer work plus
//           attention of its B tokens over ~(d + 1/2)*B context. In units of
//           one block's linear work:
//               cost(d) = 1 + (d + 1/2) * B / attn_tokens
//           where attn_tokens is the context length at which a token's
//           attention FLOPs equal its linear-layer FLOPs (2*params /
//           (4*layers*d_model): ~32k for Llama-3-8B, the default). size = 1
//           block. Deep blocks of long prompts are worth more to keep.
//
// The order is kept in sorted runs (RunQueue, via HeapPolicy): a request's
// new blocks all start at one L, so their keys L + cost(depth) fall along
// the chain as the blocks are released last to first (gdsf), or are equal
// and come in release order (lfu-da). `fast=false` keeps the plain heap as
// the reference.
//
// gdsf's parameters, ours | libCacheSim GDSF (cpp/GDSF.cpp) | Cherkasova 1998:
//   attn_tokens  32768 | none | none
//   cost         1 + (d + 1/2) x B / attn_tokens (prefill work saved) |
//                1 | any cost (1, or the fetch latency / packets)
//   size         1 block | object bytes (K = L + F x 1e6 / size) | bytes
//   ties         released longest ago | least recent access | unspecified
// Adapted to a paged KV cache: every block has the same size, so "size"
// drops out and the cost (the prefill compute a hit saves, growing with the
// block's depth in the prompt) is what distinguishes blocks; only free
// blocks can go, and a block in use keeps its key while L rises past it;
// never-used free blocks go first (CachedFirstPolicy). Equal to textbook
// GreedyDual with the same cost on single-block streams
// (test_policy_differential.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "policies/heap_policy.h"

namespace prefixsim {

class GreedyDualPolicy final : public HeapPolicy {
 public:
  // attn_tokens <= 0: every block costs 1 (lfu-da).
  GreedyDualPolicy(std::string name, int32_t block_size, double attn_tokens, bool fast = true)
      : name_(std::move(name)), block_size_(block_size), attn_tokens_(attn_tokens), fast_(fast) {}
  std::string name() const override { return name_; }
  double inflation() const { return inflation_; }
  double priority(BlockId b) const { return state_[b].k; }

 protected:
  void init_state(int32_t num_blocks) override {
    state_.assign(static_cast<size_t>(num_blocks), State{});
    inflation_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    State& s = state_[b];
    s.freq = 0;
    s.depth = info.depth;
    if (info.depth >= cost_.size()) grow_costs(info.depth);
    touch(b);
  }
  void on_access(BlockId b, bool was_free) override {
    HeapPolicy::on_access(b, was_free);
    touch(b);
  }
  HeapKey release_key(BlockId b) override { return {state_[b].k, tick()}; }
  void chosen(const HeapKey& key) override { inflation_ = key.primary; }
  bool reference_heap() const override { return !fast_; }
  size_t state_bytes() const override {
    return state_.capacity() * sizeof(State) + cost_.capacity() * sizeof(double);
  }
  void prefetch_state(BlockId b) const override { __builtin_prefetch(&state_[b]); }

 private:
  void touch(BlockId b) {
    State& s = state_[b];
    ++s.freq;
    s.k = inflation_ + static_cast<double>(s.freq) * cost_[s.depth];
  }
  // cost(d) for every depth up to at least d, computed as before the table
  // (same expression, same rounding): a division per cached block was a
  // fifth of on_insert, and the table lets State hold a depth, not a cost.
  void grow_costs(uint32_t d) {
    size_t n = std::max<size_t>(2 * cost_.size(), static_cast<size_t>(d) + 1);
    n = std::max<size_t>(n, 1024);
    cost_.reserve(n);
    for (size_t i = cost_.size(); i < n; ++i)
      cost_.push_back(attn_tokens_ > 0
                          ? 1.0 + (static_cast<double>(static_cast<uint32_t>(i)) + 0.5) * static_cast<double>(block_size_) / attn_tokens_
                          : 1.0);
  }

  std::string name_;
  int32_t block_size_;
  double attn_tokens_;
  bool fast_;
  struct State {  // 16 bytes: four blocks a cache line
    double k = 0;        // priority, set at the last access
    uint32_t depth = 0;  // of its content: its cost is cost_[depth]
    uint32_t freq = 0;
  };
  std::vector<State> state_;
  std::vector<double> cost_;  // cost(depth), by depth, grown on demand
  double inflation_ = 0;  // L
};

}  // namespace prefixsim
