// KV tiers below the GPU pool: CPU DRAM (vLLM's --kv-offloading-size),
// local SSD, or a store shared by every replica of a fleet (Mooncake's store,
// LMCache's remote backend, SGLang HiCache's L3).
//
// A tier is a set of block hashes of bounded capacity, ordered by any
// registered eviction policy: it IS a BlockPool whose blocks are never held
// (ref_count 0 but for an instant), so every policy works unchanged and the
// pool's invariant holds here too (occupancy <= capacity by construction).
// An unbounded tier never evicts.
//
// Semantics (vLLM v1's OffloadingConnector, scheduler side):
//   store    `compute` (default; vLLM's OffloadingConnector and LMCache write
//            through): every block the GPU caches, and every GPU hit of an
//            admitted request, is offered; a block already here is left as
//            it is. `evict` (HiCache's write-back): a block is written when
//            the level above evicts it (the GPU for the first tier, tier
//            k-1 for tier k).
//   lookup   after the GPU prefix ends, block by block: the first tier (in
//            the order given) that holds a block readable now serves it; the
//            walk stops at a block no tier holds. Never past the block holding
//            the last prompt token, as on the GPU: vLLM's connector would load
//            it and recompute its last token, the same hit count.
//            The lookup touches every block of the request a tier holds, last
//            to first, as vLLM's touch() does (the prefix stays hottest).
//   load     the blocks found are read over the replica's link to each tier:
//            bytes / read bandwidth, serialised per link (a request waits for
//            the loads queued before it), plus the tier's latency; tiers read
//            in parallel; the request is scheduled once all its loads are
//            done (vLLM's WAITING_FOR_REMOTE_KVS), and the loaded blocks are
//            allocated in the GPU pool like computed ones.
//   write    over the replica's write link; a block is readable once its
//            write completes (vLLM's is_ready), counted from the step that
//            computes it being scheduled.
// Cache mode has no time: loads and writes are instant there.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/base/types.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/eviction_policy.h"

namespace prefixsim {

enum class TierStoreRule : uint8_t { kOnCompute, kOnEvict };

inline constexpr int64_t kUnboundedTier = -1;

struct KvTierConfig {
  std::string name = "cpu";
  int64_t capacity_blocks = 0;   // kUnboundedTier: never evicts
  int64_t bytes_per_block = 0;   // the GPU pool's (the same KV, moved)
  double read_bytes_per_s = 0;   // per replica link; <= 0: instantaneous
  double write_bytes_per_s = 0;
  TimeNs latency = 0;            // added to each load
  bool shared = false;           // one tier for the whole fleet
  TierStoreRule store = TierStoreRule::kOnCompute;
};

struct KvTierStats {
  uint64_t hit_blocks = 0;      // found here by lookups and loaded
  uint64_t stored_blocks = 0;   // newly written
  uint64_t evicted_blocks = 0;
  uint64_t bytes_read = 0;      // hit_blocks x bytes_per_block
  uint64_t bytes_written = 0;   // stored_blocks x bytes_per_block
  int64_t max_occupancy = 0;    // blocks held at the most
};

class KvTier;

// Hears where the tiers' blocks go, synchronously and in the simulation's
// order: the real backend mode (gpu/backend.h) mirrors the KV they hold, so
// a block loaded from a tier carries the data the tier was given. Nothing
// listens unless set (a null check on each move).
class TierObserver {
 public:
  virtual ~TierObserver() = default;
  // `h` entered tier `t`: moved down from tier `from` (its eviction), or,
  // with `from` null, written from replica `replica`'s GPU pool.
  virtual void on_tier_stored(const KvTier& t, const BlockHash& h, const KvTier* from, uint32_t replica) = 0;
  virtual void on_tier_evicted(const KvTier& t, const BlockHash& h) = 0;
  // `h` is read from tier `t` into block `b` of replica `replica`'s GPU pool.
  virtual void on_tier_loaded(const KvTier& t, const BlockHash& h, BlockId b, uint32_t replica) = 0;
};

class KvTier {
 public:
  // num_keys > 0: blocks are named by the dense keys of an interned trace.
  KvTier(KvTierConfig cfg, std::unique_ptr<EvictionPolicy> policy, uint32_t num_keys = 0);
  ~KvTier();
  KvTier(const KvTier&) = delete;
  KvTier& operator=(const KvTier&) = delete;

  const KvTierConfig& config() const { return cfg_; }
  const KvTierStats& stats() const { return stats_; }
  // Blocks held now (never above capacity_blocks).
  int64_t occupancy() const { return cached_; }
  bool contains(const BlockHash& h, uint32_t key) const;
  // Is the block here and readable at `now`?
  bool holds(const BlockHash& h, uint32_t key, TimeNs now) const;
  // Moves the block to the policy's most recent place if held (touch);
  // returns holds(h, key, now), from the same lookup.
  bool touch(const BlockHash& h, uint32_t key, TimeNs now = INT64_MAX);
  // Writes the block when absent, readable from `ready_at`; returns whether
  // it was written. A full tier evicts its policy's victim first, and the
  // victim is stored in `below` when set (readable from the same time).
  bool store(const BlockHash& h, uint32_t key, TimeNs ready_at);
  void count_hits(uint64_t blocks) {
    stats_.hit_blocks += blocks;
    stats_.bytes_read += blocks * static_cast<uint64_t>(cfg_.bytes_per_block);
  }
  // Where this tier's evictions go (the evict-mode tier under it), or nullptr.
  void set_below(KvTier* below) { below_ = below; }
  void set_observer(TierObserver* o) { observer_ = o; }
  // Empty when the pool's invariant holds (bounded tiers), else what broke.
  std::string check_invariants() const;

 private:
  class Forward;
  friend class KvTierStack;  // sets storing_replica_ around its writes
  BlockId find(const BlockHash& h, uint32_t key) const;
  KvTierConfig cfg_;
  KvTierStats stats_;
  bool keyed_;
  std::unique_ptr<BlockPool> pool_;       // bounded tiers
  std::vector<TimeNs> ready_;             // bounded: by block id; unbounded keyed: by key (-1: absent)
  // Unbounded, by hash: open addressing (linear probing, grown at 3/4 load;
  // never erased, as nothing is evicted). ready < 0 marks an empty slot.
  struct Slot {
    BlockHash hash;
    TimeNs ready = -1;
  };
  std::vector<Slot> slots_;
  const Slot* find_slot(const BlockHash& h) const;
  void insert_slot(const BlockHash& h, TimeNs ready);
  int64_t cached_ = 0;
  std::unique_ptr<Forward> forward_;
  KvTier* below_ = nullptr;
  TimeNs storing_ready_ = 0;  // the write under way (its victim moves down with it)
  TierObserver* observer_ = nullptr;
  const KvTier* moving_from_ = nullptr;  // during a store moved down from the tier above
  uint32_t storing_replica_ = 0;         // during a store from a replica's GPU pool
  std::vector<BlockId> scratch_;
};

// One replica's view of the tiers below its GPU pool (shared tiers appear in
// every replica's stack): the lookup that continues the GPU prefix, the
// replica's links, and the GPU pool's listener that offers and evicts into
// the tiers.
class KvTierStack final : public PoolListener {
 public:
  // Tiers in lookup order. Chains evictions: an evict-mode tier k takes tier
  // k-1's evictions (a shared one, those of every replica's tier k-1).
  explicit KvTierStack(std::vector<KvTier*> tiers);
  // Hears the GPU pool's caching and evictions from now on.
  void attach(BlockPool& gpu);
  bool empty() const { return tiers_.empty(); }
  size_t size() const { return tiers_.size(); }
  KvTier& tier(size_t k) { return *tiers_[k]; }

  // The request's full-block chain (hashes; or keys with their hashes when
  // keyed). Touches the chain's blocks in every tier (last to first), then
  // walks from block `from` (the GPU prefix) to `to`: returns how many
  // consecutive blocks some tier holds. blocks_from(k) says how many of
  // them tier k serves.
  size_t lookup(std::span<const BlockHash> hashes, std::span<const uint32_t> keys, size_t from, size_t to,
                TimeNs now);
  uint64_t blocks_from(size_t k) const { return found_[k]; }
  // Reads the last lookup's blocks over this replica's links; returns when
  // they are all in the GPU (now when nothing is read or links are free and
  // instantaneous). Counts the hits and bytes read.
  TimeNs load(TimeNs now);
  // Offers blocks [from, to) of a chain to the compute-mode tiers (an
  // admitted request's GPU hits).
  void offer(std::span<const BlockHash> hashes, std::span<const uint32_t> keys, size_t from, size_t to);
  // Engine mode: links take time and writes become readable when done.
  // Cache mode (the default) has no time: everything is instant.
  void set_timed(bool timed) { timed_ = timed; }
  // The time writes start from (offers and evictions come through the pool
  // listener, which knows no time): set by whoever drives time.
  void set_now(TimeNs now) { now_ = now; }
  // Time spent by loads on the links, summed (for utilisation).
  TimeNs read_busy() const { return read_busy_; }
  // Tells `o` of this replica's loads (note_loaded) and GPU writes.
  void set_observer(TierObserver* o, uint32_t replica) {
    observer_ = o;
    replica_ = replica;
  }
  bool observed() const { return observer_ != nullptr; }
  // Block i of the last lookup (in [from, from + found)) was loaded into
  // GPU block b: tells the observer which tier served it.
  void note_loaded(size_t i, const BlockHash& h, BlockId b) const {
    if (observer_) observer_->on_tier_loaded(*tiers_[serving_[i - lookup_from_]], h, b, replica_);
  }

  void on_pool_cached(const BlockHash& h, uint32_t key) override;
  void on_pool_evicted(const BlockHash& h, uint32_t key) override;

 private:
  struct Link {
    TimeNs read_free = 0;   // the read link is busy until then
    TimeNs write_free = 0;
  };
  void write(size_t k, const BlockHash& h, uint32_t key);
  std::vector<KvTier*> tiers_;
  std::vector<Link> links_;
  std::vector<uint64_t> found_;
  std::vector<uint32_t> serving_;  // lookup scratch: the first tier serving each block, or size()
  bool gpu_evicts_down_ = false;
  TierObserver* observer_ = nullptr;
  uint32_t replica_ = 0;
  size_t lookup_from_ = 0;
  bool timed_ = false;  // tier 0 is evict-mode: the GPU's evictions go there
  TimeNs now_ = 0;
  TimeNs read_busy_ = 0;
};

}  // namespace prefixsim
