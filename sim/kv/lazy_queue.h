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
// Invariant: pos_[b] == i + 1 exactly when log_[i] == b is b's live entry
// (i >= head_); 0 when b is not queued; size_ counts live entries. The log
// is compacted (live entries moved to the front, positions rewritten) when it
// reaches twice the block count plus a margin, so each push costs O(1)
// amortized and the log holds at most 2n + 64 entries.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/base/types.h"

namespace prefixsim {

class LazyQueue {
 public:
  // Room for block ids 0..n-1; the queue starts empty.
  void reset(int32_t n) {
    pos_.assign(static_cast<size_t>(n), 0);
    head_ = 0;
    size_ = 0;
    limit_ = 2 * static_cast<size_t>(n) + kMargin;
    log_.clear();
    log_.reserve(limit_);  // never grows past it: compacted first
  }
  bool contains(BlockId b) const { return pos_[b] != 0; }
  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }

  void push_back(BlockId b) {
    if (log_.size() >= limit_) compact();
    log_.push_back(b);
    pos_[b] = static_cast<uint32_t>(log_.size());
    ++size_;
  }
  void unlink(BlockId b) {
    pos_[b] = 0;
    --size_;
  }
  BlockId pop_front() {
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
  BlockId peek(size_t k) const { return head_ + k < log_.size() ? log_[head_ + k] : kNoBlock; }
  // Hints the CPU to fetch b's position (pop_front reads it).
  void prefetch(BlockId b) const { __builtin_prefetch(&pos_[b]); }
  size_t bytes() const { return pos_.capacity() * sizeof(uint32_t) + log_.capacity() * sizeof(BlockId); }

 private:
  static constexpr size_t kMargin = 64;
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

  std::vector<uint32_t> pos_;  // by block: index of its live entry + 1, or 0
  std::vector<BlockId> log_;   // entries; [head_, size) not yet read
  size_t head_ = 0;
  int32_t size_ = 0;
  size_t limit_ = kMargin;
};

}  // namespace prefixsim
