// hash -> block map of the block pool: a bucket array (a power of two, at
// least twice the pool, so chains stay short) whose chains are threaded
// through the blocks themselves: a block's node holds the next block of its
// chain and a 32-bit tag of its hash. The 128-bit keys stay in the pool's
// per-block hash vector; the tag skips loading them on almost every
// mismatch. Equality is always decided on the full hash.
//
// Caching never deduplicates (vLLM keeps every block id under a hash), so a
// chain may hold several blocks of one hash. Inserts go to the chain's head
// (one store, no walk: an insert reads no other block's node), so a chain is
// newest first and the *last* block of a hash met on it is the
// earliest-inserted one still cached: find() returns it, as vLLM's
// dict-of-dicts does. Chains average under 1.5 blocks, so walking a whole
// chain costs a find little; a miss walks it whole anyway.
//
// Compared with open addressing (backward-shift deletion, which the pool
// used before): erasing a block unlinks it from a chain of about one node
// instead of shifting a run of slots, and no operation moves other entries.
//
// Chains are doubly linked, so erasing reads only the block's own node (and
// its hash, when it heads its chain) and then only *stores* to its
// neighbours: no walk from the bucket, whose loads were dependent cache
// misses. Evictions erase at every allocation, and in a fleet of 16 pools
// (too large for the caches) that walk was a fifth of the run (the bucket
// load and the head's node load stalled on memory).
//
// Empty is all zero bytes (sim/base/zeroed_array.h): buckets hold a block id
// + 1, nodes their links offset so that 0 means "not cached" and "head", so
// a reset touches no memory and a pool pays only for the buckets and nodes
// its run uses.
#pragma once

#include <cstdint>

#include "sim/base/types.h"
#include "sim/base/zeroed_array.h"

namespace prefixsim {

class BlockHashIndex {
 public:
  static constexpr BlockId kNotCached = -2;  // node.next of an uncached block

  // Room for up to num_blocks cached blocks; keys come from (*hashes)[id].
  void reset(int32_t num_blocks, const BlockHash* hashes);

  BlockId find(const BlockHash& h) const {
    const uint32_t t = tag_of(h);
    BlockId earliest = kNoBlock;
    for (BlockId b = head(h); b != kNoBlock; b = nodes_[b].next())
      if (nodes_[b].tag == t && hashes_[b] == h) earliest = b;
    return earliest;
  }
  // Hints the CPU to fetch the bucket of h (a lookup soon to come).
  void prefetch(const BlockHash& h) const { __builtin_prefetch(&buckets_[home(h)]); }
  // Hints the CPU to fetch b's chain node (erase(b) reads it first).
  void prefetch_node(BlockId b) const { __builtin_prefetch(&nodes_[b]); }
  // The next stage, once b's node (and hash) have arrived: what erase(b)
  // will store to, its neighbours' nodes or its bucket. Stores that miss
  // fill the store buffer and stall a run of evictions.
  void prefetch_erase(BlockId b) const {
    const Node& n = nodes_[b];
    if (n.next() == kNotCached) return;
    if (n.prev() == kNoBlock)
      __builtin_prefetch(&buckets_[home(hashes_[b])], 1);
    else
      __builtin_prefetch(&nodes_[n.prev()], 1);
    if (n.next() >= 0) __builtin_prefetch(&nodes_[n.next()], 1);
  }
  // The next stage, once the bucket has arrived: the node and hash of the
  // chain's first block, which find(h) compares first.
  void prefetch_chain(const BlockHash& h) const {
    const BlockId b = head(h);
    if (b != kNoBlock) {
      __builtin_prefetch(&nodes_[b]);
      __builtin_prefetch(&hashes_[b]);
    }
  }
  bool contains_block(BlockId b) const { return nodes_[b].next() != kNotCached; }
  // Inserts b under (*hashes)[b], as the newest block of its hash.
  void insert(BlockId b);
  // Removes b (which must be cached).
  void erase(BlockId b);
  // Next block with the same hash, in insertion order (kNoBlock at the end).
  BlockId next_duplicate(BlockId b) const;
  size_t size() const { return size_; }
  size_t bytes() const { return buckets_.bytes() + nodes_.bytes(); }

 private:
  // A block's links, stored offset so that all-zero bytes are "not cached".
  struct Node {
    BlockId next2;  // next block of the chain + 2: 1 = end of chain (kNoBlock), 0 = not cached (kNotCached)
    BlockId prev1;  // previous block of the chain + 1; 0 for the head (kNoBlock)
    uint32_t tag;   // hash bits not used by home(): a cheap first test
    BlockId next() const { return next2 - 2; }
    BlockId prev() const { return prev1 - 1; }
  };
  uint64_t home(const BlockHash& h) const { return (h.lo ^ (h.lo >> 32)) & mask_; }
  BlockId head(const BlockHash& h) const { return buckets_[home(h)] - 1; }
  static uint32_t tag_of(const BlockHash& h) { return static_cast<uint32_t>(h.hi >> 32); }

  ZeroedArray<BlockId> buckets_;  // first block of each chain + 1, or 0
  ZeroedArray<Node> nodes_;       // by block
  const BlockHash* hashes_ = nullptr;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace prefixsim
