// The KV block pool: vLLM v1's BlockPool with the eviction decision delegated
// to an EvictionPolicy.
//
// Invariant (checked by check_invariants(), after every operation in debug
// builds and under `--check`):
//   every usable block b in 1..N-1 is EITHER referenced (ref_count > 0, not in
//   the policy's free set) OR free (ref_count == 0, in the free set exactly
//   once); num_free() == the free set's size; a block is cached iff the index
//   holds it, and the index finds every cached hash; block 0 (the null block)
//   is never referenced, freed or cached.
// In keyed mode (num_keys > 0, interned traces) a DenseKeyIndex replaces the
// hash index: same rules, looked up by the hash's dense key.
// A free block may still be cached: it stays findable until it is reused
// (lazy eviction), which is how a finished request's prefix is hit later.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/kv/block_hash_index.h"
#include "sim/kv/dense_key_index.h"
#include "sim/base/error.h"
#include "sim/kv/eviction_policy.h"
#include "sim/base/types.h"
#include "sim/base/zeroed_array.h"

namespace prefixsim {

// What one block of a simulated pool costs in this process's memory, at the
// least: its ref count (4 B), hash (16 B), hash-index node and bucket (16 B)
// and the cheapest policy's links (8 B). A lower bound (richer policies keep
// more), so a pool refused by check_pool_fits_memory could never be simulated.
inline constexpr int64_t kMinPoolBytesPerBlock = 44;

// The most memory the simulated pools of one run may need: half of this
// machine's physical memory (the rest is left to the trace, the reports and
// whatever else runs); 0 when it is unknown (nothing to check against).
double pool_memory_limit_bytes();
// "12.3": a byte count in GiB, for the messages of the memory checks.
std::string gib_text(double bytes);

// InputError naming `flag` when a pool of num_blocks would need more than
// pool_memory_limit_bytes() (checked before anything is allocated, so an
// absurd size is exit 2, not an out-of-memory crash). One pool; a run's
// pools and tiers together: sim/scenario/run_memory.h.
void check_pool_fits_memory(int64_t num_blocks, const std::string& flag);

// Told when a pool caches a block or evicts one: how KV tiers (kv_tier.h)
// hear of the GPU pool's contents, and a tier of the one above it.
class PoolListener {
 public:
  virtual ~PoolListener() = default;
  virtual void on_pool_cached(const BlockHash& /*h*/, uint32_t /*key*/) {}
  virtual void on_pool_evicted(const BlockHash& h, uint32_t key) = 0;
};

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, bool enable_caching, std::unique_ptr<EvictionPolicy> policy,
            uint32_t num_keys = 0);
  // Policies may keep a pointer to the pool that owns them (reset()).
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int32_t num_blocks() const { return num_blocks_; }            // includes the null block
  int32_t num_usable() const { return num_blocks_ - 1; }
  int32_t num_free() const { return num_free_; }
  bool caching_enabled() const { return enable_caching_; }
  double usage() const { return 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_usable()); }

  int32_t ref_count(BlockId b) const { return ref_[b]; }
  bool is_cached(BlockId b) const { return keyed_ ? keys_.contains_block(b) : index_.contains_block(b); }
  bool keyed() const { return keyed_; }
  // Distinct keys of the interned trace (0 unless keyed).
  uint32_t num_keys() const { return keyed_ ? keys_.num_keys() : 0; }
  const BlockHash& hash_of(BlockId b) const { return hashes_[b]; }
  // Earliest-inserted cached block with this hash, or kNoBlock (not in
  // keyed mode, whose index knows keys only: use find_key).
  BlockId find(const BlockHash& h) const {
    if (keyed_) throw InternalError("block pool: a keyed pool was looked up by hash");
    return index_.find(h);
  }
  const BlockHashIndex& index() const { return index_; }
  // Keyed mode: earliest-inserted cached block with this key, or kNoBlock.
  BlockId find_key(uint32_t key) const { return keys_.find(key); }
  // The earliest cached block holding info's parent (by key in keyed mode).
  BlockId find_parent(const CachedBlockInfo& info) const {
    if (!info.has_parent) return kNoBlock;
    if (keyed_) return info.parent_key == kNoKey ? kNoBlock : keys_.find(info.parent_key);
    return index_.find(info.parent);
  }
  // Hints the CPU to fetch what evicting cached block b will touch in the
  // index (its hash and node, fetched by prefetch_block, are read here).
  void prefetch_index_of(BlockId b) const {
    if (keyed_)
      keys_.prefetch(keys_.key_of(b));
    else
      index_.prefetch_erase(b);
  }
  // Hints the CPU to fetch what allocating block b will read: its
  // reference count and its index links (its hash and chain node, unless
  // keyed).
  void prefetch_block(BlockId b) const {
    __builtin_prefetch(&ref_[b]);
    if (keyed_) {
      keys_.prefetch_block(b);
    } else {
      __builtin_prefetch(&hashes_[b]);
      index_.prefetch_node(b);
    }
  }
  EvictionPolicy& policy() { return *policy_; }
  const EvictionPolicy& policy() const { return *policy_; }

  // Take the hit blocks for a request: free ones leave the free set; every
  // ref count goes up by one (vLLM BlockPool.touch).
  void touch(std::span<const BlockId> blocks);
  // Pop n blocks chosen by the policy, evicting any stale hash; append them
  // to `out`. The caller has checked n <= num_free().
  void allocate(int32_t n, std::vector<BlockId>& out);
  // Insert the hash of a just-filled block into the index (keyed mode: under
  // info.key).
  void cache(BlockId b, const CachedBlockInfo& info);
  // cache() for blocks[i] under chain[i], i in [from, to): a request's newly
  // full blocks, chain being its full-block hashes (not in keyed mode).
  void cache_chain(std::span<const BlockId> blocks, std::span<const BlockHash> chain, size_t from, size_t to);
  // Release blocks in the given order (callers pass a block table reversed,
  // so a request's tail blocks are evicted first).
  void release(BlockId b);

  uint64_t evictions() const { return evictions_; }
  // Hears every block cached and evicted from now on (nullptr: none).
  void set_listener(PoolListener* l) { listener_ = l; }
  PoolListener* listener() const { return listener_; }

  // Returns an empty string when the invariant holds, else what is broken.
  std::string check_invariants() const;
  // Metadata bytes: per-block state, the hash index and the policy's state.
  size_t metadata_bytes() const;

 private:
  // Records b's hash and indexes it (by key in keyed mode): cache() without
  // telling the policy.
  void index_block(BlockId b, const BlockHash& hash, uint32_t key);
  int32_t num_blocks_;
  bool enable_caching_;
  std::unique_ptr<EvictionPolicy> policy_;
  ZeroedArray<int32_t> ref_;
  ZeroedArray<BlockHash> hashes_;
  BlockHashIndex index_;
  bool keyed_ = false;
  DenseKeyIndex keys_;
  int32_t num_free_ = 0;
  uint64_t evictions_ = 0;
  PoolListener* listener_ = nullptr;
};

}  // namespace prefixsim
