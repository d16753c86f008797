// A 4-ary min-heap of block ids with a position index, so a block can be
// removed from the middle in O(log n) (a hit on a free block). Keys are
// (primary, secondary) pairs compared lexicographically; storage is sized
// once in reset(), so push/pop/erase never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/base/types.h"

namespace prefixsim {

struct HeapKey {
  double primary = 0;
  uint64_t secondary = 0;
  friend bool operator<(const HeapKey& a, const HeapKey& b) {
    return a.primary < b.primary || (a.primary == b.primary && a.secondary < b.secondary);
  }
};

class IndexedHeap {
 public:
  void reset(int32_t num_blocks) {
    heap_.clear();
    heap_.reserve(static_cast<size_t>(num_blocks));
    pos_.assign(static_cast<size_t>(num_blocks), -1);
  }
  bool empty() const { return heap_.empty(); }
  int32_t size() const { return static_cast<int32_t>(heap_.size()); }
  bool contains(BlockId b) const { return pos_[b] >= 0; }
  BlockId top() const { return heap_.front().block; }
  // Key of a block in the heap.
  const HeapKey& key(BlockId b) const { return heap_[static_cast<size_t>(pos_[b])].key; }

  void push(BlockId b, HeapKey k) {
    heap_.push_back({k, b});
    sift_up(static_cast<int32_t>(heap_.size()) - 1, Entry{k, b});
  }
  BlockId pop() {
    const BlockId b = heap_.front().block;
    erase(b);
    return b;
  }
  void erase(BlockId b) {
    const int32_t i = pos_[b];
    const Entry last = heap_.back();
    heap_.pop_back();
    pos_[b] = -1;
    if (last.block == b) return;
    // The last entry fills the hole, moving up or down from it.
    if (i > 0 && last.key < heap_[static_cast<size_t>(parent(i))].key)
      sift_up(i, last);
    else
      sift_down(i, last);
  }
  size_t bytes() const { return heap_.capacity() * sizeof(Entry) + pos_.capacity() * sizeof(int32_t); }

 private:
  // A 4-ary heap: half the depth of a binary one, and a node's children sit
  // side by side, so each level of a sift costs about one cache miss instead
  // of two levels' worth. Keys live in the heap array itself (no chasing of
  // block ids into another vector), and sifts move a hole instead of
  // swapping, writing each entry and its position once.
  static constexpr int32_t kArity = 4;
  struct Entry {
    HeapKey key;
    BlockId block;
  };
  static int32_t parent(int32_t i) { return (i - 1) / kArity; }
  void place(int32_t i, const Entry& e) {
    heap_[static_cast<size_t>(i)] = e;
    pos_[e.block] = i;
  }
  // Puts e at the hole i or above it.
  void sift_up(int32_t i, const Entry& e) {
    while (i > 0) {
      const int32_t p = parent(i);
      if (!(e.key < heap_[static_cast<size_t>(p)].key)) break;
      place(i, heap_[static_cast<size_t>(p)]);
      i = p;
    }
    place(i, e);
  }
  // Puts e at the hole i or below it.
  void sift_down(int32_t i, const Entry& e) {
    const int32_t n = size();
    for (;;) {
      const int32_t first = kArity * i + 1;
      if (first >= n) break;
      const int32_t last = first + kArity < n ? first + kArity : n;
      int32_t m = first;
      for (int32_t c = first + 1; c < last; ++c)
        if (heap_[static_cast<size_t>(c)].key < heap_[static_cast<size_t>(m)].key) m = c;
      if (!(heap_[static_cast<size_t>(m)].key < e.key)) break;
      place(i, heap_[static_cast<size_t>(m)]);
      i = m;
    }
    place(i, e);
  }

  std::vector<Entry> heap_;
  std::vector<int32_t> pos_;  // index in heap_, or -1
};

}  // namespace prefixsim
