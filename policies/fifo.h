// fifo: evict the free block whose content was cached longest ago, whatever
// happened to it since (hits do not refresh it). The classic baseline of
// every caching paper (e.g. Belady, "A study of replacement algorithms for a
// virtual-storage computer", IBM Systems Journal 1966, compares against it).
//
// Every cached block joins one list in caching order and leaves it only when
// evicted, so the list is sorted by caching time; the victim is the first
// *free* block in it. A cursor remembers where the last search stopped,
// under the invariant that every block before the cursor is in use: a
// release of a block before the cursor moves the cursor back to that block
// (it is then the earliest free one); hits and caching cannot break the
// invariant. Searches skip each in-use block once per pass instead of
// sifting a heap of all free blocks (`cursor=false` keeps that heap, with
// the same evictions: the reference the tests compare against).
// Equal to textbook FIFO eviction for eviction on single-block streams
// (test/policies/test_policy_differential.cpp).
#pragma once

#include <vector>

#include "policies/cached_first.h"
#include "policies/indexed_heap.h"
#include "sim/base/error.h"
#include "sim/kv/intrusive_list.h"

namespace prefixsim {

class FifoPolicy final : public CachedFirstPolicy {
 public:
  explicit FifoPolicy(bool cursor = true) : cursor_mode_(cursor) {}
  std::string name() const override { return "fifo"; }

 protected:
  void init(int32_t num_blocks) override {
    inserted_.assign(static_cast<size_t>(num_blocks), 0);
    seq_ = 0;
    order_.reset(num_blocks);
    heap_.reset(num_blocks);
    cursor_ = kNoBlock;
    at_end_ = false;
  }
  void on_insert(BlockId b, const CachedBlockInfo&) override {
    inserted_[b] = ++seq_;
    if (!cursor_mode_) return;
    order_.push_back(b);
    if (at_end_) {  // the search had passed every block: resume at the first new one
      cursor_ = b;
      at_end_ = false;
    }
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free && !cursor_mode_) heap_.erase(b);
  }
  void on_release(BlockId b) override {
    if (!cursor_mode_) {
      heap_.push(b, HeapKey{0.0, inserted_[b]});
      return;
    }
    if (at_end_ || (cursor_ != kNoBlock && inserted_[b] < inserted_[cursor_])) {
      cursor_ = b;
      at_end_ = false;
    }
  }
  BlockId evict() override {
    if (!cursor_mode_) return heap_.pop();
    BlockId b = cursor_ != kNoBlock ? cursor_ : order_.front();
    while (b != kNoBlock && !block_free(b)) b = order_.next(b);
    if (b == kNoBlock) throw InternalError("fifo: no free cached block after the cursor");
    cursor_ = order_.next(b);
    at_end_ = cursor_ == kNoBlock;
    order_.unlink(b);
    return b;
  }
  size_t policy_bytes() const override {
    return inserted_.capacity() * sizeof(uint64_t) + order_.bytes() + heap_.bytes();
  }

 private:
  bool cursor_mode_;
  std::vector<uint64_t> inserted_;  // caching order of each block's content
  uint64_t seq_ = 0;
  IntrusiveList order_;  // cached blocks (free or in use), in caching order
  BlockId cursor_ = kNoBlock;  // where the next search starts (kNoBlock: the head)
  bool at_end_ = false;        // the last search ended past the tail
  IndexedHeap heap_;           // cursor=false: free cached blocks by caching order
};

}  // namespace prefixsim
