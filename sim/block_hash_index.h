// hash -> block map of the block pool: flat open addressing (linear probing,
// backward-shift deletion, no tombstones) whose slots are 32-bit words; the
// key is read from the pool's per-block hash vector, so a slot costs 4 bytes.
//
// A slot word packs [tag | displacement | block id]: the block id takes just
// the bits the pool needs (bit_width(num_blocks)); the spare high bits hold a
// few bits of displacement from the home slot (saturating) and a tag taken
// from the hash's high word. The tag skips the per-block hash load on most
// mismatches, and the displacement lets backward-shift deletion decide moves
// without loading the hashes of the entries it walks over. Both are only
// hints: equality is always decided on the full 128-bit hash.
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
    const uint32_t t = tag_of(h);
    for (uint64_t i = home(h);; i = (i + 1) & mask_) {
      const uint32_t w = slots_[i];
      if (w == kEmpty) return kNoBlock;
      if ((w & tag_mask_) == t) {
        const BlockId b = static_cast<BlockId>(w & id_mask_);
        if ((*hashes_)[b] == h) return b;
      }
    }
  }
  // Hints the CPU to fetch the home slot of h (a lookup soon to come).
  void prefetch(const BlockHash& h) const { __builtin_prefetch(&slots_[home(h)]); }
  bool contains_block(BlockId b) const { return dup_next_[b] != kNotCached; }
  // Inserts b under (*hashes)[b], after any block already there.
  void insert(BlockId b);
  // Removes b (which must be cached).
  void erase(BlockId b);
  // Next block with the same hash, in insertion order (kNoBlock at the end).
  BlockId next_duplicate(BlockId b) const { return dup_next_[b]; }
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(uint32_t) + dup_next_.capacity() * sizeof(BlockId); }

 private:
  static constexpr uint32_t kEmpty = 0xffffffffu;
  uint64_t home(const BlockHash& h) const { return h.lo & mask_; }
  uint32_t tag_of(const BlockHash& h) const { return static_cast<uint32_t>(h.hi >> 32) & tag_mask_; }
  uint32_t disp_of(uint32_t w) const { return (w >> id_bits_) & disp_max_; }
  uint32_t with_disp(uint32_t w, uint32_t d) const {
    return (w & ~(disp_max_ << id_bits_)) | ((d < disp_max_ ? d : disp_max_) << id_bits_);
  }
  uint64_t find_slot(const BlockHash& h) const;

  std::vector<uint32_t> slots_;
  std::vector<BlockId> dup_next_;
  const std::vector<BlockHash>* hashes_ = nullptr;
  uint64_t mask_ = 0;
  size_t size_ = 0;
  uint32_t id_bits_ = 31;     // low bits: block id
  uint32_t id_mask_ = 0;
  uint32_t disp_max_ = 0;     // displacement field (above the id); all ones = "look it up"
  uint32_t tag_mask_ = 0;     // tag field (the bits above the displacement), in place
};

}  // namespace prefixsim
