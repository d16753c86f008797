// A doubly linked list threaded through block indices: O(1) push, pop and
// unlink from anywhere, no allocation after reset(). vLLM's FreeKVCacheBlockQueue
// has the same shape (prev/next pointers inside each block). A block's two
// links sit side by side, so moving it touches one cache line, not two.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "sim/base/types.h"

namespace prefixsim {

struct ListLink {
  int32_t prev = -1;
  int32_t next = -1;  // -1: not in any list
};

class IntrusiveList {
 public:
  // Room for indices 0..n-1; the list starts empty.
  void reset(int32_t n) {
    links_.assign(static_cast<size_t>(n) + 1, ListLink{});
    sentinel_ = n;
    links_[sentinel_] = {sentinel_, sentinel_};
    size_ = 0;
  }
  bool contains(BlockId b) const { return links_[b].next != kOut; }
  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }
  BlockId front() const { return empty() ? kNoBlock : links_[sentinel_].next; }
  BlockId back() const { return empty() ? kNoBlock : links_[sentinel_].prev; }
  // Successor of b towards the tail, or kNoBlock at the end.
  BlockId next(BlockId b) const { return links_[b].next == sentinel_ ? kNoBlock : links_[b].next; }
  BlockId prev(BlockId b) const { return links_[b].prev == sentinel_ ? kNoBlock : links_[b].prev; }
  // Hints the CPU to fetch b's links.
  void prefetch(BlockId b) const { __builtin_prefetch(&links_[b]); }

  void push_back(BlockId b) { link(b, links_[sentinel_].prev, sentinel_); }
  void push_front(BlockId b) { link(b, sentinel_, links_[sentinel_].next); }
  // Insert b just before `before` (which must be in the list).
  void insert_before(BlockId b, BlockId before) { link(b, links_[before].prev, before); }
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
    const ListLink l = links_[b];
    links_[l.prev].next = l.next;
    links_[l.next].prev = l.prev;
    links_[b] = ListLink{};
    --size_;
  }
  void move_to_back(BlockId b) {
    unlink(b);
    push_back(b);
  }
  size_t bytes() const { return links_.capacity() * sizeof(ListLink); }

 private:
  static constexpr int32_t kOut = -1;
  void link(BlockId b, int32_t before, int32_t after) {
    links_[b] = {before, after};
    links_[before].next = b;
    links_[after].prev = b;
    ++size_;
  }
  std::vector<ListLink> links_;
  int32_t sentinel_ = 0;
  int32_t size_ = 0;
};

}  // namespace prefixsim

namespace prefixsim {

// k doubly linked lists threaded through the same per-block links (a block
// is in at most one of them): list L's sentinel is index n + L, and a bitmap
// of the non-empty lists finds the first one in a few word tests. For
// bucketed policies (lfu's per-count lists, lfu-da's per-key ring); no
// allocation after reset().
class IntrusiveLists {
 public:
  void reset(int32_t n, int32_t k) {
    n_ = n;
    links_.assign(static_cast<size_t>(n) + static_cast<size_t>(k), ListLink{});
    size_.assign(static_cast<size_t>(k), 0);
    nonempty_.assign((static_cast<size_t>(k) + 63) / 64, 0);
    for (int32_t l = 0; l < k; ++l) links_[n + l] = {n + l, n + l};
  }
  int32_t num_lists() const { return static_cast<int32_t>(size_.size()); }
  bool contains(BlockId b) const { return links_[b].next != kOut; }
  bool empty(int32_t l) const { return size_[l] == 0; }
  int32_t size(int32_t l) const { return size_[l]; }
  BlockId front(int32_t l) const { return empty(l) ? kNoBlock : links_[n_ + l].next; }
  // Successor of b in list l, or kNoBlock at its end.
  BlockId next(int32_t l, BlockId b) const { return links_[b].next == n_ + l ? kNoBlock : links_[b].next; }
  // Inserts b just before `at`, which is in list l (or is l's sentinel).
  void insert_before(int32_t l, BlockId b, BlockId at) {
    const int32_t before = links_[at].prev;
    links_[b] = {before, at};
    links_[before].next = b;
    links_[at].prev = b;
    if (size_[l]++ == 0) nonempty_[static_cast<size_t>(l) / 64] |= uint64_t{1} << (l % 64);
  }
  void push_back(int32_t l, BlockId b) { insert_before(l, b, n_ + l); }
  // b must be in list l.
  void unlink(int32_t l, BlockId b) {
    const ListLink k = links_[b];
    links_[k.prev].next = k.next;
    links_[k.next].prev = k.prev;
    links_[b] = ListLink{};
    if (--size_[l] == 0) nonempty_[static_cast<size_t>(l) / 64] &= ~(uint64_t{1} << (l % 64));
  }
  // The first non-empty list at or after `from`, else the first one below
  // it (wrapping around, for lists used as a ring); -1 if all are empty.
  int32_t first_nonempty(int32_t from = 0) const {
    const size_t w0 = static_cast<size_t>(from) / 64, words = nonempty_.size();
    const uint64_t at_or_above = ~uint64_t{0} << (from % 64);
    if (const uint64_t bits = nonempty_[w0] & at_or_above) return static_cast<int32_t>(w0 * 64) + std::countr_zero(bits);
    for (size_t i = 1; i <= words; ++i) {
      const size_t w = (w0 + i) % words;
      const uint64_t bits = i == words ? nonempty_[w0] & ~at_or_above : nonempty_[w];
      if (bits) return static_cast<int32_t>(w * 64) + std::countr_zero(bits);
    }
    return -1;
  }
  size_t bytes() const {
    return links_.capacity() * sizeof(ListLink) + size_.capacity() * sizeof(int32_t) +
           nonempty_.capacity() * sizeof(uint64_t);
  }

 private:
  static constexpr int32_t kOut = -1;
  int32_t n_ = 0;
  std::vector<ListLink> links_;
  std::vector<int32_t> size_;
  std::vector<uint64_t> nonempty_;  // bit l: list l is non-empty
};

}  // namespace prefixsim
