// lfu-da: LFU with Dynamic Aging (Arlitt, Cherkasova, Dilley, Friedrich, Jin,
// "Evaluating content management techniques for Web proxy caches", ACM
// SIGMETRICS PER 2000): GreedyDual with cost = size = 1.
//
// Idea: a block's priority is K = L + frequency, set when it is accessed;
// the free cached block with the smallest K goes (ties: released longest
// ago), and the inflation value L rises to that K. New content starts at
// L + 1, so old counts age out without any decay pass.
//
// Order in O(1) per access. Every key is an integer. Call B the highest L
// so far: when L rose to B, every free key was at least B, and keys set
// since are at least L + 1, so almost every free block's key lies in
// [B, B + window): content used once sits at L + 1. Those wait in a ring of
// `window` lists, the list of key K at K mod window, each in release
// order, with a bitmap of the non-empty lists. The rest wait in a heap
// keyed (K, release tick): a very hot block's key beyond the window, and a
// key below B, which a block in use keeps while L rises past it (evicting
// it takes L back down; B stays). The smallest key is then the first
// non-empty list from B's onwards, or the heap's top if smaller.
// (A bucket queue for monotone integer priorities; cf. Dial's algorithm,
// CACM 1969.) GreedyDualPolicy("lfu-da", ..., fast=false), a plain heap, is
// the reference it is tested against.
//
// Parameters, ours | libCacheSim LFUDA | paper: none of the three has one
// (libCacheSim's refuses any). Key K = L + frequency (cost = size = 1 of
// the paper's C x F / S + L), set at every access with the L of that
// moment; new content at L + 1; L becomes the evicted key. Ties, which the
// paper leaves open: released longest ago (libCacheSim: the first to reach
// that key). libCacheSim's hit update differs in detail (see its
// LFUDA.c); prefixsim is held to the paper's K = L + F by the textbook
// GreedyDual reference (test_policy_differential.cpp, eviction for eviction)
// and the worked example (test_policy_worked_examples.cpp).
// Adapted to a paged KV cache: only free blocks can go; a block in use keeps
// the key of its last access while L rises past it (the heap above), and
// evicting it later can take L back down, which the paper's single-threaded
// web cache never sees. Never-used free blocks go first (CachedFirstPolicy).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policies/cached_first.h"
#include "policies/indexed_heap.h"
#include "sim/kv/intrusive_list.h"

namespace prefixsim {

class LfuDaPolicy final : public CachedFirstPolicy {
 public:
  static constexpr int64_t kWindow = 1024;  // keys B .. B + kWindow - 1 in lists

  // window: how many keys the lists cover (tests shrink it to send many
  // blocks through the heap and around the ring).
  explicit LfuDaPolicy(int64_t window = kWindow) : window_(window) {}
  std::string name() const override { return "lfu-da"; }
  double inflation() const { return static_cast<double>(inflation_); }
  double priority(BlockId b) const { return static_cast<double>(state_[b].k); }

 protected:
  void init(int32_t num_blocks) override {
    state_.assign(static_cast<size_t>(num_blocks), State{});
    lists_.reset(num_blocks, static_cast<int32_t>(window_));
    heap_.reset(num_blocks);
    inflation_ = 0;
    base_ = 0;
    tick_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo&) override {
    state_[b].freq = 0;
    touch(b);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) remove(b);
    touch(b);
  }
  void on_release(BlockId b) override {
    State& s = state_[b];
    s.tick = ++tick_;
    s.listed = s.k >= base_ && s.k - base_ < window_;
    if (!s.listed) {
      heap_.push(b, {static_cast<double>(s.k), s.tick});
      return;
    }
    lists_.push_back(list_of(s.k), b);
  }
  BlockId evict() override {
    // The smallest listed key: the first non-empty list from B's onwards,
    // around the ring.
    const int32_t l = lists_.first_nonempty(list_of(base_));
    if (!heap_.empty()) {
      const BlockId h = heap_.top();
      const State& t = state_[h];
      const int64_t listed_k = l < 0 ? 0 : key_of_list(l);
      if (l < 0 || t.k < listed_k || (t.k == listed_k && t.tick < state_[lists_.front(l)].tick)) {
        heap_.erase(h);
        return evicted(h, t.k);
      }
    }
    // A listed victim's key follows from its list: its own state is not read.
    const BlockId b = lists_.front(l);
    const int64_t k = key_of_list(l);
    lists_.unlink(l, b);
    // The list's new front (its links are at hand: unlinking wrote them)
    // goes next unless keys change: fetch what evicting it and the one
    // after it will read (prefetch only).
    const BlockId next = lists_.front(l);
    if (next != kNoBlock) prefetch_victims(lists_.next(l, next), next);
    return evicted(b, k);
  }
  void prefetch_state(BlockId b) const override { __builtin_prefetch(&state_[b]); }
  size_t policy_bytes() const override {
    return state_.capacity() * sizeof(State) + lists_.bytes() + heap_.bytes();
  }

 private:
  struct State {
    int64_t k = 0;      // priority, set at the last access
    uint64_t tick = 0;  // release tick (the tie-break), set when it was freed
    uint32_t freq = 0;
    bool listed = false;  // while free: in a list (else in the heap)
  };
  int32_t list_of(int64_t k) const { return static_cast<int32_t>(k % window_); }

  void touch(BlockId b) {
    State& s = state_[b];
    ++s.freq;
    s.k = inflation_ + s.freq;
  }
  void remove(BlockId b) {
    const State& s = state_[b];
    if (s.listed)
      lists_.unlink(list_of(s.k), b);
    else
      heap_.erase(b);
  }
  // The key of list l's blocks: the one in [B, B + window) at l mod window.
  int64_t key_of_list(int32_t l) const { return base_ + (l - list_of(base_) + window_) % window_; }
  BlockId evicted(BlockId b, int64_t k) {
    inflation_ = k;
    base_ = std::max(base_, inflation_);
    return b;
  }
  std::vector<State> state_;
  IntrusiveLists lists_;  // by key mod window, each in release order
  IndexedHeap heap_;      // keys outside [B, B + window) when released
  int64_t window_;
  int64_t inflation_ = 0;  // L
  int64_t base_ = 0;       // B: the highest L so far; listed keys lie in [B, B + window)
  uint64_t tick_ = 0;      // one per release
};

}  // namespace prefixsim
