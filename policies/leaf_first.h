// leaf-first: SGLang's RadixCache eviction (Zheng et al., "SGLang: Efficient
// Execution of Structured Language Model Programs", NeurIPS 2024). A block
// may go only when none of its descendants is cached (it is a leaf of the
// prefix tree), so a prefix is always cut from its tail and never orphans
// cached suffixes; among free leaves, the least recently released goes.
// If every free block has a cached child (the children are in use), the
// least recently released free block goes anyway: a free block must always
// be obtainable.
//
// The tree is tracked by child counts: on caching a block, its parent hash
// is looked up in the pool and that block gains a child; on eviction, the
// parent loses it. A generation number per block keeps a stale parent link
// (the parent was evicted and its block reused) from being followed.
//
// Parameters: none, as SGLang's RadixCache (no libCacheSim counterpart:
// it caches flat objects, not trees). Differences from SGLang: SGLang
// evicts token-granular radix nodes ordered by last access time, a node
// whose lock_ref > 0 (in use) being skipped; here a node is one full block,
// ordered by release time (when its last reference went), and blocks in use
// are not candidates at all (ref count > 0, the pool's rule). SGLang has no
// never-used pool to draw from first; the paged pool hands out never-used
// blocks before evicting (CachedFirstPolicy). On single-block streams every
// block is a leaf and leaf-first equals textbook LRU
// (test_policy_differential.cpp).
#pragma once

#include <vector>

#include "policies/cached_first.h"
#include "policies/indexed_heap.h"
#include "sim/kv/intrusive_list.h"

namespace prefixsim {

class LeafFirstPolicy final : public CachedFirstPolicy {
 public:
  explicit LeafFirstPolicy(bool lists = true) : lists_mode_(lists) {}
  std::string name() const override { return "leaf-first"; }
  int32_t children(BlockId b) const { return children_[b]; }

 protected:
  void init(int32_t num_blocks) override {
    if (lists_mode_) {
      sets_.reset(num_blocks, 2);
    } else {
      leaves_.reset(num_blocks);
      inner_.reset(num_blocks);
    }
    released_.assign(static_cast<size_t>(num_blocks), 0);
    where_.assign(static_cast<size_t>(num_blocks), 0);
    const size_t n = static_cast<size_t>(num_blocks);
    parent_.assign(n, kNoBlock);
    parent_gen_.assign(n, 0);
    gen_.assign(n, 0);
    children_.assign(n, 0);
    tick_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    children_[b] = 0;
    parent_[b] = kNoBlock;
    const BlockId p = pool().find_parent(info);
    if (p == kNoBlock || p == b) return;
    parent_[b] = p;
    parent_gen_[b] = gen_[p];
    if (children_[p]++ == 0 && in_set(p, kLeaves)) move(p, kLeaves, kInner);
  }
  void on_access(BlockId b, bool was_free) override {
    if (!was_free) return;
    if (!lists_mode_) {
      if (leaves_.contains(b)) leaves_.erase(b);
      else inner_.erase(b);
      return;
    }
    sets_.unlink(where_[b], b);
  }
  void on_release(BlockId b) override {
    released_[b] = ++tick_;
    const int32_t set = children_[b] == 0 ? kLeaves : kInner;
    if (lists_mode_) {
      sets_.push_back(set, b);
      where_[b] = static_cast<uint8_t>(set);
    } else {
      heap(set).push(b, HeapKey{0.0, tick_});
    }
  }
  BlockId evict() override {
    const int32_t from = is_empty(kLeaves) ? kInner : kLeaves;
    BlockId b;
    if (lists_mode_) {
      b = sets_.front(from);
      sets_.unlink(from, b);
    } else {
      b = heap(from).pop();
    }
    const BlockId p = parent_[b];
    if (p != kNoBlock && parent_gen_[b] == gen_[p] && --children_[p] == 0 && in_set(p, kInner))
      move(p, kInner, kLeaves);
    parent_[b] = kNoBlock;
    children_[b] = 0;
    ++gen_[b];  // links from b's children (if any) are now stale
    return b;
  }
  size_t policy_bytes() const override {
    return leaves_.bytes() + inner_.bytes() + sets_.bytes() + released_.capacity() * sizeof(uint64_t) +
           where_.capacity() + (parent_.capacity() + parent_gen_.capacity() + gen_.capacity() + children_.capacity()) * sizeof(int32_t);
  }

 private:
  static constexpr int32_t kLeaves = 0, kInner = 1;
  IndexedHeap& heap(int32_t set) { return set == kLeaves ? leaves_ : inner_; }
  bool is_empty(int32_t set) const {
    return lists_mode_ ? sets_.empty(set) : (set == kLeaves ? leaves_ : inner_).empty();
  }
  // Whether free block b waits in `set` (the other set, or none, otherwise).
  bool in_set(BlockId b, int32_t set) const {
    if (!lists_mode_) return (set == kLeaves ? leaves_ : inner_).contains(b);
    return sets_.contains(b) && where_[b] == set;
  }
  // b keeps its release time in the new set.
  void move(BlockId b, int32_t from, int32_t to) {
    if (!lists_mode_) {
      const HeapKey k = heap(from).key(b);
      heap(from).erase(b);
      heap(to).push(b, k);
      return;
    }
    sets_.unlink(from, b);
    where_[b] = static_cast<uint8_t>(to);
    BlockId at = sets_.front(to);
    while (at != kNoBlock && released_[at] < released_[b]) at = sets_.next(to, at);
    if (at == kNoBlock)
      sets_.push_back(to, b);
    else
      sets_.insert_before(to, b, at);
  }

  bool lists_mode_;
  IntrusiveLists sets_;  // lists mode: free leaves (0) and free inner blocks (1), by release time
  std::vector<uint64_t> released_;  // release time of each free block
  std::vector<uint8_t> where_;      // lists mode: the list a free block is in
  IndexedHeap leaves_;  // heap mode: free cached blocks without cached children, by release time
  IndexedHeap inner_;   // heap mode: free cached blocks with cached children
  std::vector<BlockId> parent_;
  std::vector<uint32_t> parent_gen_;
  std::vector<uint32_t> gen_;
  std::vector<int32_t> children_;
  uint64_t tick_ = 0;
};

}  // namespace prefixsim
