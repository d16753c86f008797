// key -> block map of a block pool replaying an *interned* trace: every
// distinct block hash of the trace was numbered 0..K-1 once (PreparedTrace),
// so the map is a plain array indexed by key and a lookup is one load, with
// no hashing and no probing. Same semantics as BlockHashIndex: caching never
// deduplicates, the head of a key is its earliest-inserted block still
// cached, later duplicates follow it in insertion order through next_.
//
// Interning is exact as long as distinct keys are distinct hashes, which the
// PreparedTrace guarantees (it compares all 128 bits), so a replay over keys
// evicts and hits block for block as a replay over hashes does.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/error.h"
#include "sim/types.h"

namespace prefixsim {

class DenseKeyIndex {
 public:
  static constexpr BlockId kNotCached = -2;  // next_ value of an uncached block

  void reset(int32_t num_blocks, uint32_t num_keys) {
    head_.assign(num_keys, kNoBlock);
    next_.assign(static_cast<size_t>(num_blocks), kNotCached);
    key_of_.assign(static_cast<size_t>(num_blocks), 0);
  }
  uint32_t num_keys() const { return static_cast<uint32_t>(head_.size()); }
  BlockId find(uint32_t key) const { return head_[key]; }
  void prefetch(uint32_t key) const { __builtin_prefetch(&head_[key]); }
  // Hints the CPU to fetch block b's links and key.
  void prefetch_block(BlockId b) const {
    __builtin_prefetch(&next_[b]);
    __builtin_prefetch(&key_of_[b]);
  }
  bool contains_block(BlockId b) const { return next_[b] != kNotCached; }
  uint32_t key_of(BlockId b) const { return key_of_[b]; }
  BlockId next_duplicate(BlockId b) const { return next_[b]; }

  void insert(BlockId b, uint32_t key) {
    if (key >= head_.size()) throw InternalError("dense key index: key " + std::to_string(key) + " out of range");
    key_of_[b] = key;
    next_[b] = kNoBlock;
    BlockId& h = head_[key];
    if (h == kNoBlock) {
      h = b;
      return;
    }
    BlockId tail = h;
    while (next_[tail] != kNoBlock) tail = next_[tail];
    next_[tail] = b;
  }
  void erase(BlockId b) {
    BlockId* link = &head_[key_of_[b]];
    while (*link != b) {
      if (*link == kNoBlock) throw InternalError("dense key index: erasing a block that is not indexed");
      link = &next_[*link];
    }
    *link = next_[b];
    next_[b] = kNotCached;
  }
  size_t bytes() const {
    return (head_.capacity() + next_.capacity()) * sizeof(BlockId) + key_of_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<BlockId> head_;     // by key: earliest cached block, or kNoBlock
  std::vector<BlockId> next_;     // by block: next duplicate, kNoBlock, or kNotCached
  std::vector<uint32_t> key_of_;  // by block: its key while cached
};

}  // namespace prefixsim
