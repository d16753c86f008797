// key -> block map of a block pool replaying an *interned* trace: every
// distinct block hash of the trace was numbered 0..K-1 once (PreparedTrace),
// so the map is a plain array indexed by key and a lookup is one load, with
// no hashing and no probing. Same semantics as BlockHashIndex: caching never
// deduplicates, the head of a key is its earliest-inserted block still
// cached, later duplicates follow it in insertion order through link_.next.
//
// Interning is exact as long as distinct keys are distinct hashes, which the
// PreparedTrace guarantees (it compares all 128 bits), so a replay over keys
// evicts and hits block for block as a replay over hashes does.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/base/error.h"
#include "sim/base/types.h"

namespace prefixsim {

class DenseKeyIndex {
 public:
  static constexpr BlockId kNotCached = -2;  // link_.next of an uncached block

  void reset(int32_t num_blocks, uint32_t num_keys) {
    head_.assign(num_keys, kNoBlock);
    link_.assign(static_cast<size_t>(num_blocks), Link{});
  }
  uint32_t num_keys() const { return static_cast<uint32_t>(head_.size()); }
  BlockId find(uint32_t key) const { return head_[key]; }
  void prefetch(uint32_t key) const { __builtin_prefetch(&head_[key]); }
  // Hints the CPU to fetch block b's links and key.
  void prefetch_block(BlockId b) const { __builtin_prefetch(&link_[b]); }
  bool contains_block(BlockId b) const { return link_[b].next != kNotCached; }
  uint32_t key_of(BlockId b) const { return link_[b].key; }
  BlockId next_duplicate(BlockId b) const { return link_[b].next; }

  void insert(BlockId b, uint32_t key) {
    if (key >= head_.size()) throw InternalError("dense key index: key " + std::to_string(key) + " out of range");
    link_[b] = {kNoBlock, key};
    BlockId& h = head_[key];
    if (h == kNoBlock) {
      h = b;
      return;
    }
    BlockId tail = h;
    while (link_[tail].next != kNoBlock) tail = link_[tail].next;
    link_[tail].next = b;
  }
  void erase(BlockId b) {
    BlockId* link = &head_[link_[b].key];
    while (*link != b) {
      if (*link == kNoBlock) throw InternalError("dense key index: erasing a block that is not indexed");
      link = &link_[*link].next;
    }
    *link = link_[b].next;
    link_[b].next = kNotCached;
  }
  size_t bytes() const {
    return head_.capacity() * sizeof(BlockId) + link_.capacity() * sizeof(Link);
  }

 private:
  std::vector<BlockId> head_;     // by key: earliest cached block, or kNoBlock
  struct Link {  // by block, side by side: evicting a block reads both
    BlockId next = kNotCached;  // next duplicate, kNoBlock, or kNotCached
    uint32_t key = 0;           // its key while cached
  };
  std::vector<Link> link_;
};

}  // namespace prefixsim
