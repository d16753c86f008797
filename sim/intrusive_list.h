// A doubly linked list threaded through block indices: O(1) push, pop and
// unlink from anywhere, no allocation after reset(). vLLM's FreeKVCacheBlockQueue
// has the same shape (prev/next pointers inside each block).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/types.h"

namespace prefixsim {

class IntrusiveList {
 public:
  // Room for indices 0..n-1; the list starts empty.
  void reset(int32_t n) {
    prev_.assign(static_cast<size_t>(n) + 1, kOut);
    next_.assign(static_cast<size_t>(n) + 1, kOut);
    sentinel_ = n;
    prev_[sentinel_] = next_[sentinel_] = sentinel_;
    size_ = 0;
  }
  bool contains(BlockId b) const { return next_[b] != kOut; }
  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }
  BlockId front() const { return empty() ? kNoBlock : next_[sentinel_]; }
  BlockId back() const { return empty() ? kNoBlock : prev_[sentinel_]; }
  // Successor of b towards the tail, or kNoBlock at the end.
  BlockId next(BlockId b) const { return next_[b] == sentinel_ ? kNoBlock : next_[b]; }
  BlockId prev(BlockId b) const { return prev_[b] == sentinel_ ? kNoBlock : prev_[b]; }

  void push_back(BlockId b) { link(b, prev_[sentinel_], sentinel_); }
  void push_front(BlockId b) { link(b, sentinel_, next_[sentinel_]); }
  // Insert b just before `before` (which must be in the list).
  void insert_before(BlockId b, BlockId before) { link(b, prev_[before], before); }
  BlockId pop_front() {
    BlockId b = front();
    if (b != kNoBlock) unlink(b);
    return b;
  }
  BlockId pop_back() {
    BlockId b = back();
    if (b != kNoBlock) unlink(b);
    return b;
  }
  void unlink(BlockId b) {
    next_[prev_[b]] = next_[b];
    prev_[next_[b]] = prev_[b];
    prev_[b] = next_[b] = kOut;
    --size_;
  }
  void move_to_back(BlockId b) {
    unlink(b);
    push_back(b);
  }
  size_t bytes() const { return (prev_.capacity() + next_.capacity()) * sizeof(int32_t); }

 private:
  static constexpr int32_t kOut = -1;
  void link(BlockId b, int32_t before, int32_t after) {
    prev_[b] = before;
    next_[b] = after;
    next_[before] = b;
    prev_[after] = b;
    ++size_;
  }
  std::vector<int32_t> prev_, next_;
  int32_t sentinel_ = 0;
  int32_t size_ = 0;
};

}  // namespace prefixsim

namespace prefixsim {

// k doubly linked lists threaded through the same per-block links (a block
// is in at most one of them): list L's sentinel is index n + L. For
// bucketed policies (lfu's per-count lists); no allocation after reset().
class IntrusiveLists {
 public:
  void reset(int32_t n, int32_t k) {
    n_ = n;
    prev_.assign(static_cast<size_t>(n) + static_cast<size_t>(k), kOut);
    next_.assign(prev_.size(), kOut);
    size_.assign(static_cast<size_t>(k), 0);
    for (int32_t l = 0; l < k; ++l) prev_[n + l] = next_[n + l] = n + l;
  }
  int32_t num_lists() const { return static_cast<int32_t>(size_.size()); }
  bool contains(BlockId b) const { return next_[b] != kOut; }
  bool empty(int32_t l) const { return size_[l] == 0; }
  int32_t size(int32_t l) const { return size_[l]; }
  BlockId front(int32_t l) const { return empty(l) ? kNoBlock : next_[n_ + l]; }
  // Successor of b in list l, or kNoBlock at its end.
  BlockId next(int32_t l, BlockId b) const { return next_[b] == n_ + l ? kNoBlock : next_[b]; }
  // Inserts b just before `at`, which is in list l (or is l's sentinel).
  void insert_before(int32_t l, BlockId b, BlockId at) {
    const int32_t before = prev_[at];
    prev_[b] = before;
    next_[b] = at;
    next_[before] = b;
    prev_[at] = b;
    ++size_[l];
  }
  void push_back(int32_t l, BlockId b) { insert_before(l, b, n_ + l); }
  // b must be in list l.
  void unlink(int32_t l, BlockId b) {
    next_[prev_[b]] = next_[b];
    prev_[next_[b]] = prev_[b];
    prev_[b] = next_[b] = kOut;
    --size_[l];
  }
  size_t bytes() const { return (prev_.capacity() + next_.capacity() + size_.capacity()) * sizeof(int32_t); }

 private:
  static constexpr int32_t kOut = -1;
  int32_t n_ = 0;
  std::vector<int32_t> prev_, next_, size_;
};

}  // namespace prefixsim
