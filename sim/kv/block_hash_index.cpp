#include "sim/kv/block_hash_index.h"

#include <bit>

#include "sim/base/error.h"

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
  BlockId& head = buckets_[home(h)];
  nodes_[b] = {head, kNoBlock, tag_of(h)};
  if (head != kNoBlock) nodes_[head].prev = b;
  head = b;
  ++size_;
}

void BlockHashIndex::erase(BlockId b) {
  Node& n = nodes_[b];
  if (n.next == kNotCached) throw InternalError("hash index: erasing a block that is not indexed");
  if (n.prev == kNoBlock)
    buckets_[home((*hashes_)[b])] = n.next;
  else
    nodes_[n.prev].next = n.next;
  if (n.next != kNoBlock) nodes_[n.next].prev = n.prev;
  n.next = kNotCached;
  --size_;
}

BlockId BlockHashIndex::next_duplicate(BlockId b) const {
  // Chains are newest first: the next duplicate in insertion order is the
  // last block of the same hash met before b.
  const BlockHash& h = (*hashes_)[b];
  BlockId later = kNoBlock;
  for (BlockId c = buckets_[home(h)]; c != b && c >= 0; c = nodes_[c].next)
    if (nodes_[c].tag == nodes_[b].tag && (*hashes_)[c] == h) later = c;
  return later;
}

}  // namespace prefixsim
