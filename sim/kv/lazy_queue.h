// A FIFO of block ids with O(1) removal from anywhere, kept as an append-only
// log read from its head: removing a block only forgets its position, and
// its entry goes stale; popping skips stale entries. The live entries are
// exactly IntrusiveList's order (push_back, pop_front, unlink), so lru pops
// the same blocks as vLLM's FreeKVCacheBlockQueue.
//
// Why not a linked list: popping a linked list loads the front block's links
// to find the next one, a dependent miss per pop once the queue's order is
// scattered in memory (a 16-replica fleet spent 14 % of its run there). The
// log is read in order, so the blocks to be popped next are known without
// a load: peek(k) lets a policy prefetch what evicting them will touch.
//
// A queue may start full of blocks first..n-1 in id order (a pool's fresh
// blocks): they are held as a range ahead of the log, not written, so a
// large pool starts in O(1) touched memory (sim/base/zeroed_array.h) and
// pays only for the blocks its run frees.
//
// Invariant: the queue is the fresh range [fresh_, end_) followed by the
// log's live entries; pos_[b] == i + 1 exactly when log_[i] == b is b's live
// entry (i >= head_); 0 when b is not in the log; size_ counts the range and
// the live entries. The log is compacted (live entries moved to the front,
// positions rewritten) when it reaches twice the block count plus a margin,
// so each push costs O(1) amortized and the log holds at most 2n + 64
// entries.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/base/types.h"
#include "sim/base/zeroed_array.h"

namespace prefixsim {

class LazyQueue {
 public:
  // Room for block ids 0..n-1; the queue starts empty.
  void reset(int32_t n) { reset(n, n); }
  // The same, but the queue starts as first, first + 1, ..., n - 1, as if
  // pushed in that order.
  void reset(int32_t n, BlockId first) {
    pos_.reset(static_cast<size_t>(n));
    fresh_ = std::min(first, n);
    end_ = n;
    head_ = 0;
    size_ = n - fresh_;
    limit_ = 2 * static_cast<size_t>(n) + kMargin;
    log_ = {};
    log_.reserve(limit_);  // never grows past it: compacted first; untouched until used
  }
  bool contains(BlockId b) const { return b >= fresh_ || pos_[b] != 0; }
  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }

  void push_back(BlockId b) {
    if (log_.size() >= limit_) compact();
    log_.push_back(b);
    pos_[b] = static_cast<uint32_t>(log_.size());
    ++size_;
  }
  void unlink(BlockId b) {
    if (b >= fresh_) write_fresh();  // not met by a pool (a fresh block is never hit), kept exact
    pos_[b] = 0;
    --size_;
  }
  BlockId pop_front() {
    if (fresh_ < end_) {
      --size_;
      return fresh_++;
    }
    while (head_ < log_.size()) {
      const BlockId b = log_[head_++];
      if (pos_[b] == head_) {  // its live entry (head_ is now its index + 1)
        pos_[b] = 0;
        --size_;
        return b;
      }
    }
    return kNoBlock;
  }
  // The entry k places after the head, live or stale, or kNoBlock past the
  // end: only for prefetching (a stale entry's block is not popped there).
  BlockId peek(size_t k) const {
    const auto fresh = static_cast<size_t>(end_ - fresh_);
    if (k < fresh) return fresh_ + static_cast<BlockId>(k);
    k -= fresh;
    return head_ + k < log_.size() ? log_[head_ + k] : kNoBlock;
  }
  // Hints the CPU to fetch b's position (pop_front reads it).
  void prefetch(BlockId b) const { __builtin_prefetch(&pos_[b]); }
  size_t bytes() const { return pos_.bytes() + log_.capacity() * sizeof(BlockId); }

 private:
  static constexpr size_t kMargin = 64;
  // The fresh range written into the log, ahead of its live entries (the
  // queue's order unchanged), so any of its blocks can be unlinked.
  void write_fresh() {
    compact();
    const BlockId first = fresh_;
    log_.insert(log_.begin(), static_cast<size_t>(end_ - first), 0);
    for (BlockId b = first; b < end_; ++b) log_[static_cast<size_t>(b - first)] = b;
    for (size_t i = 0; i < log_.size(); ++i) pos_[log_[i]] = static_cast<uint32_t>(i + 1);
    fresh_ = end_;
  }
  void compact() {
    size_t out = 0;
    for (size_t i = head_; i < log_.size(); ++i) {
      const BlockId b = log_[i];
      if (pos_[b] != i + 1) continue;  // stale
      log_[out] = b;
      pos_[b] = static_cast<uint32_t>(++out);
    }
    log_.resize(out);
    head_ = 0;
  }

  ZeroedArray<uint32_t> pos_;  // by block: index of its live entry + 1, or 0
  std::vector<BlockId> log_;   // entries; [head_, size) not yet read
  BlockId fresh_ = 0, end_ = 0;  // the fresh range ahead of the log: [fresh_, end_)
  size_t head_ = 0;
  int32_t size_ = 0;
  size_t limit_ = kMargin;
};

}  // namespace prefixsim
