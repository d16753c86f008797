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
#pragma once

#include <vector>

#include "policies/cached_first.h"
#include "policies/indexed_heap.h"

namespace prefixsim {

class LeafFirstPolicy final : public CachedFirstPolicy {
 public:
  std::string name() const override { return "leaf-first"; }
  int32_t children(BlockId b) const { return children_[b]; }

 protected:
  void init(int32_t num_blocks) override {
    leaves_.reset(num_blocks);
    inner_.reset(num_blocks);
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
    if (children_[p]++ == 0 && leaves_.contains(p)) move(leaves_, inner_, p);
  }
  void on_access(BlockId b, bool was_free) override {
    if (!was_free) return;
    if (leaves_.contains(b)) leaves_.erase(b);
    else inner_.erase(b);
  }
  void on_release(BlockId b) override {
    (children_[b] == 0 ? leaves_ : inner_).push(b, HeapKey{0.0, ++tick_});
  }
  BlockId evict() override {
    IndexedHeap& from = leaves_.empty() ? inner_ : leaves_;
    const BlockId b = from.pop();
    const BlockId p = parent_[b];
    if (p != kNoBlock && parent_gen_[b] == gen_[p] && --children_[p] == 0 && inner_.contains(p))
      move(inner_, leaves_, p);
    parent_[b] = kNoBlock;
    children_[b] = 0;
    ++gen_[b];  // links from b's children (if any) are now stale
    return b;
  }
  size_t policy_bytes() const override {
    return leaves_.bytes() + inner_.bytes() +
           (parent_.capacity() + parent_gen_.capacity() + gen_.capacity() + children_.capacity()) * sizeof(int32_t);
  }

 private:
  static void move(IndexedHeap& from, IndexedHeap& to, BlockId b) {
    const HeapKey k = from.key(b);  // keeps its release time
    from.erase(b);
    to.push(b, k);
  }

  IndexedHeap leaves_;  // free cached blocks without cached children, by release time
  IndexedHeap inner_;   // free cached blocks with cached children
  std::vector<BlockId> parent_;
  std::vector<uint32_t> parent_gen_;
  std::vector<uint32_t> gen_;
  std::vector<int32_t> children_;
  uint64_t tick_ = 0;
};

}  // namespace prefixsim
