// The eviction seam. The block pool owns ref counts, hashes and the hash
// index; a policy owns only the set of *free* blocks (ref_count == 0) and the
// order in which they are reused. Reusing a free block that still carries a
// hash evicts that hash (lazily, as vLLM does), so choosing the next free
// block IS the eviction decision.
//
// The pool calls, in this order within an operation:
//   on_hit(b, was_free)   a lookup hit b and the request takes it (touch);
//                         if was_free, b leaves the policy's free set now
//   pop_free()            hand out a free block (removing it from the set)
//   on_evicted(b, hash, key)  the block just popped still had a hash (and, in a
//                         keyed pool, that key; else kNoKey); it is gone
//   on_cached(b, info)    b's content hash was inserted into the index
//   on_free(b)            b's ref count reached 0; it joins the free set
// Policies never see a block with ref_count > 0 in their free set, so none can
// evict a referenced block. Hooks must not allocate per call.
#pragma once

#include <cstdint>
#include <string>

#include "sim/base/types.h"

namespace prefixsim {

class BlockPool;

struct CachedBlockInfo {
  BlockHash hash;
  BlockHash parent;     // hash of the previous block in the chain (if has_parent)
  bool has_parent = false;
  uint32_t depth = 0;   // position of the block in its chain (0 = first block)
  // The hash's dense key when the pool replays an interned trace
  // (PreparedTrace), else kNoKey. Offline policies index their future by it.
  uint32_t key = kNoKey;
  uint32_t parent_key = kNoKey;
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string name() const = 0;

  // The pool is new: blocks 1..num_blocks-1 are free and uncached and must be
  // handed out in ascending id order first (block 0 is the null block).
  virtual void reset(const BlockPool& pool, int32_t num_blocks) = 0;

  virtual void on_hit(BlockId b, bool was_free) = 0;
  virtual BlockId pop_free() = 0;
  virtual void on_free(BlockId b) = 0;
  virtual void on_cached(BlockId /*b*/, const CachedBlockInfo& /*info*/) {}
  // False for a policy whose on_cached and on_evicted do nothing (lru): the
  // pool then skips describing each cached and each evicted block to it.
  virtual bool observes_contents() const { return true; }
  virtual void on_evicted(BlockId /*b*/, const BlockHash& /*hash*/, uint32_t /*key*/) {}
  // A new request's lookup begins (logical time for offline policies).
  virtual void on_request(uint64_t /*seq*/) {}

  // For invariant checks: is b in the free set, and how many are there.
  virtual bool is_free(BlockId b) const = 0;
  virtual int32_t num_free() const = 0;
  // Bytes of per-block policy state (for the memory benchmark).
  virtual size_t bytes() const = 0;
  // How many evicted hashes the policy remembers at most while the pool is
  // full (ghost lists: arc's B1 + B2, 2q's A1out, s3fifo's G); valid after
  // reset(). compare sets it beside a hot prefix's reuse distance.
  virtual int64_t ghost_capacity() const { return 0; }
};

}  // namespace prefixsim
