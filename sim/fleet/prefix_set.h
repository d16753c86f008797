// What one replica was sent, as SGLang's router remembers it: an
// approximate prefix tree with least-recently-used eviction, at block
// granularity. A block hash names its whole prefix (vLLM's hash chain), so
// the tree needs no edges: the longest match of a prompt is the count of its
// leading hashes in the set, and a set of hashes is the tree.
//
// A prompt's blocks are inserted leaf first, so its root ends most recent:
// a prefix shared by many prompts is refreshed by each, and eviction takes
// old leaves before the roots they hang from (SGLang evicts leaves).
//
// Memory grows with use, doubling up to `max_blocks` (about 40 bytes a
// block); beyond it the least recently used hash makes room. No allocation
// per access once grown.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/base/types.h"
#include "sim/kv/block_hash_index.h"
#include "sim/kv/intrusive_list.h"

namespace prefixsim {

class PrefixSet {
 public:
  explicit PrefixSet(int32_t max_blocks);
  // Leading hashes of `prompt` in the set.
  size_t match(std::span<const BlockHash> prompt) const;
  bool contains(const BlockHash& h) const { return index_.find(h) != kNoBlock; }
  // Makes every hash of `prompt` present and most recent (root last).
  void insert(std::span<const BlockHash> prompt);
  // The same, in the prompt's order (leaf last), as llm-d's approximate
  // index adds a request's blocks to its per-pod LRU.
  void insert_root_first(std::span<const BlockHash> prompt);
  int32_t size() const { return lru_.size(); }
  int32_t max_blocks() const { return max_blocks_; }

 private:
  void grow();
  void insert_one(const BlockHash& h);

  int32_t max_blocks_;
  int32_t capacity_ = 0;  // slots allocated
  std::vector<BlockHash> hashes_;  // by slot
  BlockHashIndex index_;
  IntrusiveList lru_;      // least recent at the front
  int32_t unused_ = 0;     // slots [unused_, capacity_) never held a hash
};

}  // namespace prefixsim
