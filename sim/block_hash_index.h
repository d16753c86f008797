// hash -> block map of the block pool: flat open addressing (linear probing,
// backward-shift deletion, no tombstones) whose slots hold only block ids; the
// key is read from the pool's per-block hash vector, so a slot costs 4 bytes.
//
// Caching never deduplicates (vLLM keeps every block id under a hash), so a
// slot holds the *earliest-inserted* block of a hash and the others follow
// it in insertion order through dup_next. find() returns the earliest one
// still cached, as vLLM's dict-of-dicts does.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/types.h"

namespace prefixsim {

class BlockHashIndex {
 public:
  static constexpr BlockId kNotCached = -2;  // dup_next value of an uncached block

  // Room for up to num_blocks cached blocks; keys come from (*hashes)[id].
  void reset(int32_t num_blocks, const std::vector<BlockHash>* hashes);

  BlockId find(const BlockHash& h) const {
    for (uint64_t i = home(h);; i = (i + 1) & mask_) {
      BlockId b = slots_[i];
      if (b == kNoBlock) return kNoBlock;
      if ((*hashes_)[b] == h) return b;
    }
  }
  bool contains_block(BlockId b) const { return dup_next_[b] != kNotCached; }
  // Inserts b under (*hashes)[b], after any block already there.
  void insert(BlockId b);
  // Removes b (which must be cached).
  void erase(BlockId b);
  // Next block with the same hash, in insertion order (kNoBlock at the end).
  BlockId next_duplicate(BlockId b) const { return dup_next_[b]; }
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(BlockId) + dup_next_.capacity() * sizeof(BlockId); }

 private:
  uint64_t home(const BlockHash& h) const { return h.lo & mask_; }
  uint64_t find_slot(const BlockHash& h) const;

  std::vector<BlockId> slots_;
  std::vector<BlockId> dup_next_;
  const std::vector<BlockHash>* hashes_ = nullptr;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace prefixsim
