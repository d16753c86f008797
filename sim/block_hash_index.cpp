#include "sim/block_hash_index.h"

#include <bit>

#include "sim/error.h"

namespace prefixsim {

void BlockHashIndex::reset(int32_t num_blocks, const std::vector<BlockHash>* hashes) {
  // Load factor <= 1/2 keeps misses (every lookup ends on one) short.
  const uint64_t cap = std::bit_ceil(static_cast<uint64_t>(num_blocks) * 2 + 2);
  slots_.assign(cap, kEmpty);
  mask_ = cap - 1;
  dup_next_.assign(static_cast<size_t>(num_blocks), kNotCached);
  hashes_ = hashes;
  size_ = 0;
  // Ids 0..num_blocks-1 fit in id_bits with the all-ones id left over, so an
  // empty slot (all ones) never reads as a block.
  id_bits_ = static_cast<uint32_t>(std::bit_width(static_cast<uint32_t>(num_blocks)));
  if (id_bits_ > 31) id_bits_ = 31;
  id_mask_ = id_bits_ >= 32 ? 0xffffffffu : (1u << id_bits_) - 1;
  const uint32_t spare = 32 - id_bits_;
  const uint32_t disp_bits = spare < 4 ? spare : 4;
  disp_max_ = (1u << disp_bits) - 1;
  const uint32_t tag_shift = id_bits_ + disp_bits;
  tag_mask_ = tag_shift >= 32 ? 0 : ~((1u << tag_shift) - 1);
}

uint64_t BlockHashIndex::find_slot(const BlockHash& h) const {
  const uint32_t t = tag_of(h);
  for (uint64_t i = home(h);; i = (i + 1) & mask_) {
    const uint32_t w = slots_[i];
    if (w == kEmpty) return i;
    if ((w & tag_mask_) == t && (*hashes_)[w & id_mask_] == h) return i;
  }
}

void BlockHashIndex::insert(BlockId b) {
  const BlockHash& h = (*hashes_)[b];
  const uint64_t i = find_slot(h);
  dup_next_[b] = kNoBlock;
  if (slots_[i] == kEmpty) {
    slots_[i] = with_disp(tag_of(h) | static_cast<uint32_t>(b), static_cast<uint32_t>((i - home(h)) & mask_));
    ++size_;
    return;
  }
  BlockId tail = static_cast<BlockId>(slots_[i] & id_mask_);
  while (dup_next_[tail] != kNoBlock) tail = dup_next_[tail];
  dup_next_[tail] = b;
}

void BlockHashIndex::erase(BlockId b) {
  const BlockHash& h = (*hashes_)[b];
  uint64_t i = find_slot(h);
  if (slots_[i] == kEmpty) throw InternalError("hash index: erasing a block that is not indexed");
  const BlockId head = static_cast<BlockId>(slots_[i] & id_mask_);
  if (head != b) {  // a later duplicate: unlink it from the chain
    BlockId p = head;
    while (dup_next_[p] != b) {
      if (dup_next_[p] == kNoBlock) throw InternalError("hash index: duplicate chain lost a block");
      p = dup_next_[p];
    }
    dup_next_[p] = dup_next_[b];
    dup_next_[b] = kNotCached;
    return;
  }
  if (dup_next_[b] != kNoBlock) {  // the next duplicate becomes the earliest (same hash: same tag and place)
    slots_[i] = (slots_[i] & ~id_mask_) | static_cast<uint32_t>(dup_next_[b]);
    dup_next_[b] = kNotCached;
    return;
  }
  dup_next_[b] = kNotCached;
  --size_;
  // Backward-shift deletion keeps every probe sequence unbroken: the entry at
  // j moves into the hole unless its home lies cyclically in (hole, j], i.e.
  // unless its displacement is shorter than the distance from hole to j.
  uint64_t hole = i;
  for (uint64_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
    const uint32_t w = slots_[j];
    if (w == kEmpty) break;
    uint64_t d = disp_of(w);
    if (d == disp_max_) d = (j - home((*hashes_)[w & id_mask_])) & mask_;
    const uint64_t gap = (j - hole) & mask_;
    if (d >= gap) {
      slots_[hole] = with_disp(w, static_cast<uint32_t>(d - gap));
      hole = j;
    }
  }
  slots_[hole] = kEmpty;
}

}  // namespace prefixsim
