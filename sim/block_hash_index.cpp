#include "sim/block_hash_index.h"

#include <bit>

#include "sim/error.h"

namespace prefixsim {

void BlockHashIndex::reset(int32_t num_blocks, const std::vector<BlockHash>* hashes) {
  const uint64_t cap = std::bit_ceil(static_cast<uint64_t>(num_blocks) * 2 + 2);
  buckets_.assign(cap, kNoBlock);
  mask_ = cap - 1;
  nodes_.assign(static_cast<size_t>(num_blocks), Node{});
  hashes_ = hashes;
  size_ = 0;
}

void BlockHashIndex::insert(BlockId b) {
  const BlockHash& h = (*hashes_)[b];
  nodes_[b] = {kNoBlock, tag_of(h)};
  BlockId* link = &buckets_[home(h)];
  while (*link != kNoBlock) link = &nodes_[*link].next;
  *link = b;
  ++size_;
}

void BlockHashIndex::erase(BlockId b) {
  BlockId* link = &buckets_[home((*hashes_)[b])];
  while (*link != b) {
    if (*link == kNoBlock) throw InternalError("hash index: erasing a block that is not indexed");
    link = &nodes_[*link].next;
  }
  *link = nodes_[b].next;
  nodes_[b].next = kNotCached;
  --size_;
}

BlockId BlockHashIndex::next_duplicate(BlockId b) const {
  const BlockHash& h = (*hashes_)[b];
  for (BlockId c = nodes_[b].next; c >= 0; c = nodes_[c].next)
    if (nodes_[c].tag == nodes_[b].tag && (*hashes_)[c] == h) return c;
  return kNoBlock;
}

}  // namespace prefixsim
