#include "sim/kv/block_hash_index.h"

#include <bit>

#include "sim/base/error.h"

namespace prefixsim {

void BlockHashIndex::reset(int32_t num_blocks, const BlockHash* hashes) {
  const uint64_t cap = std::bit_ceil(static_cast<uint64_t>(num_blocks) * 2 + 2);
  // Dense: a bucket's home is random, so a few thousand inserts touch every
  // page; mapped with huge pages, 64 TP-8 pools (4 MiB of buckets each)
  // fault 128 times instead of 65k.
  buckets_.reset(cap, true);  // every chain empty, every block uncached: all zeros
  mask_ = cap - 1;
  nodes_.reset(static_cast<size_t>(num_blocks));
  hashes_ = hashes;
  size_ = 0;
}

void BlockHashIndex::insert(BlockId b) {
  const BlockHash& h = hashes_[b];
  BlockId& head1 = buckets_[home(h)];
  nodes_[b] = {head1 + 1, 0, tag_of(h)};  // next = the old head (or end), prev = none
  if (head1 != 0) nodes_[head1 - 1].prev1 = b + 1;
  head1 = b + 1;
  ++size_;
}

void BlockHashIndex::erase(BlockId b) {
  Node& n = nodes_[b];
  if (n.next() == kNotCached) throw InternalError("hash index: erasing a block that is not indexed");
  if (n.prev() == kNoBlock)
    buckets_[home(hashes_[b])] = n.next() + 1;
  else
    nodes_[n.prev()].next2 = n.next2;
  if (n.next() != kNoBlock) nodes_[n.next()].prev1 = n.prev1;
  n.next2 = 0;
  --size_;
}

BlockId BlockHashIndex::next_duplicate(BlockId b) const {
  // Chains are newest first: the next duplicate in insertion order is the
  // last block of the same hash met before b.
  const BlockHash& h = hashes_[b];
  BlockId later = kNoBlock;
  for (BlockId c = head(h); c != b && c >= 0; c = nodes_[c].next())
    if (nodes_[c].tag == nodes_[b].tag && hashes_[c] == h) later = c;
  return later;
}

}  // namespace prefixsim
