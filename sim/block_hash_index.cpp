#include "sim/block_hash_index.h"

#include <bit>

#include "sim/error.h"

namespace prefixsim {

void BlockHashIndex::reset(int32_t num_blocks, const std::vector<BlockHash>* hashes) {
  // Load factor <= 1/2 keeps misses (every lookup ends on one) short.
  const uint64_t cap = std::bit_ceil(static_cast<uint64_t>(num_blocks) * 2 + 2);
  slots_.assign(cap, kNoBlock);
  mask_ = cap - 1;
  dup_next_.assign(static_cast<size_t>(num_blocks), kNotCached);
  hashes_ = hashes;
  size_ = 0;
}

uint64_t BlockHashIndex::find_slot(const BlockHash& h) const {
  for (uint64_t i = home(h);; i = (i + 1) & mask_) {
    BlockId b = slots_[i];
    if (b == kNoBlock || (*hashes_)[b] == h) return i;
  }
}

void BlockHashIndex::insert(BlockId b) {
  const BlockHash& h = (*hashes_)[b];
  const uint64_t i = find_slot(h);
  dup_next_[b] = kNoBlock;
  if (slots_[i] == kNoBlock) {
    slots_[i] = b;
    ++size_;
    return;
  }
  BlockId tail = slots_[i];
  while (dup_next_[tail] != kNoBlock) tail = dup_next_[tail];
  dup_next_[tail] = b;
}

void BlockHashIndex::erase(BlockId b) {
  const BlockHash& h = (*hashes_)[b];
  uint64_t i = find_slot(h);
  if (slots_[i] == kNoBlock) throw InternalError("hash index: erasing a block that is not indexed");
  if (slots_[i] != b) {  // a later duplicate: unlink it from the chain
    BlockId p = slots_[i];
    while (dup_next_[p] != b) {
      if (dup_next_[p] == kNoBlock) throw InternalError("hash index: duplicate chain lost a block");
      p = dup_next_[p];
    }
    dup_next_[p] = dup_next_[b];
    dup_next_[b] = kNotCached;
    return;
  }
  if (dup_next_[b] != kNoBlock) {  // the next duplicate becomes the earliest
    slots_[i] = dup_next_[b];
    dup_next_[b] = kNotCached;
    return;
  }
  dup_next_[b] = kNotCached;
  --size_;
  // Backward-shift deletion keeps every probe sequence unbroken.
  uint64_t hole = i;
  for (uint64_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
    BlockId c = slots_[j];
    if (c == kNoBlock) break;
    const uint64_t k = home((*hashes_)[c]);
    const bool movable = (hole <= j) ? (k <= hole || k > j) : (k <= hole && k > j);
    if (movable) {
      slots_[hole] = c;
      hole = j;
    }
  }
  slots_[hole] = kNoBlock;
}

}  // namespace prefixsim
