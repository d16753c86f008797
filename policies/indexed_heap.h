// A binary min-heap of block ids with a position index, so a block can be
// removed from the middle in O(log n) (a hit on a free block). Keys are
// (primary, secondary) pairs compared lexicographically; storage is sized
// once in reset(), so push/pop/erase never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/types.h"

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
    pos_[b] = static_cast<int32_t>(heap_.size());
    heap_.push_back({k, b});
    sift_up(pos_[b]);
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
    heap_[static_cast<size_t>(i)] = last;
    pos_[last.block] = i;
    sift_up(i);
    sift_down(pos_[last.block]);
  }
  size_t bytes() const { return heap_.capacity() * sizeof(Entry) + pos_.capacity() * sizeof(int32_t); }

 private:
  // Keys live in the heap array itself: sifting compares neighbours without
  // chasing block ids into another vector (fewer cache misses).
  struct Entry {
    HeapKey key;
    BlockId block;
  };
  bool less(int32_t i, int32_t j) const { return heap_[static_cast<size_t>(i)].key < heap_[static_cast<size_t>(j)].key; }
  void swap_at(int32_t i, int32_t j) {
    std::swap(heap_[static_cast<size_t>(i)], heap_[static_cast<size_t>(j)]);
    pos_[heap_[static_cast<size_t>(i)].block] = i;
    pos_[heap_[static_cast<size_t>(j)].block] = j;
  }
  void sift_up(int32_t i) {
    while (i > 0) {
      const int32_t p = (i - 1) / 2;
      if (!less(i, p)) break;
      swap_at(i, p);
      i = p;
    }
  }
  void sift_down(int32_t i) {
    const int32_t n = size();
    for (;;) {
      const int32_t l = 2 * i + 1;
      if (l >= n) break;
      int32_t m = l;
      if (l + 1 < n && less(l + 1, l)) m = l + 1;
      if (!less(m, i)) break;
      swap_at(i, m);
      i = m;
    }
  }

  std::vector<Entry> heap_;
  std::vector<int32_t> pos_;  // index in heap_, or -1
};

}  // namespace prefixsim
