// Cache mode: every request alone, in arrival order, against one block pool.
// For each request: prefix lookup (at most floor((prompt-1)/B) blocks, the
// last token is always recomputed), then the whole sequence, prompt plus
// output (output tokens from Request::output_token, so output blocks are
// unique to the request unless the trace repeats outputs), is allocated at
// once with vLLM's admission test, every full block cached, and the block
// table freed last to first. No time, no batching, no concurrency: the
// question answered is "how much of each prompt was already cached".
//
// The steps are the KvCacheManager's (lookup, allocate, free), applied to
// precomputed hash chains so that a trace parsed once can be replayed many
// times (compare) without re-hashing; a test checks that both agree.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "sim/kv/block_pool.h"
#include "sim/kv/eviction_policy.h"
#include "sim/kv/kv_tier.h"
#include "sim/engine/request.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

class IdealHitSource;

struct CacheReplayResult {
  uint64_t requests = 0;          // replayed (refused ones excluded)
  int64_t prompt_tokens = 0;      // queried prompt tokens of replayed requests
  int64_t output_tokens = 0;
  int64_t hit_tokens = 0;
  double hit_rate = 0;            // hit_tokens / prompt_tokens (vLLM's, at admission)
  uint64_t queried_blocks = 0;    // prompt blocks, ceil(prompt / B), of replayed requests
  uint64_t hit_blocks = 0;
  double block_hit_rate = 0;      // hit_blocks / queried_blocks
  // Found below the GPU prefix in KV tiers (kv_tier.h) and loaded: counted
  // apart from hit_tokens, which stay the GPU's (vLLM's prefix_cache_hits).
  int64_t tier_hit_tokens = 0;
  uint64_t tier_hit_blocks = 0;
  uint64_t allocated_blocks = 0;  // blocks handed out for new content (loaded ones included)
  uint64_t evictions = 0;         // cached blocks reused for new content
  // Requests whose prompt + output needs more blocks than the pool has: they
  // can never run; counted here and left out of every figure above.
  uint64_t refused_requests = 0;
  int64_t refused_prompt_tokens = 0;
};

// A trace hashed once for one block size and *interned*: every distinct
// full-block hash gets a dense key (0, 1, ... in order of first appearance),
// and each request is the flattened run of keys of its prompt + output. A
// replay over keys looks blocks up in an array (DenseKeyIndex) instead of a
// hash table, and the keys are 4 bytes per block instead of 16. Interning
// compares all 128 bits, so it is exact.
struct PreparedTrace {
  struct Entry {
    uint64_t offset = 0;    // into keys
    uint32_t num_keys = 0;  // full blocks of prompt + output (only the computed ones are cached: Request::kv_len)
    int64_t prompt_len = 0;
    int64_t total_len = 0;  // prompt + output
  };
  int32_t block_size = 16;
  std::vector<uint32_t> keys;
  std::vector<BlockHash> key_hashes;  // by key: the hash it stands for
  std::vector<Entry> requests;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  // The leading requests marked Request::warmup: a replay lets them warm
  // the cache and counts from the next one on.
  size_t warmup = 0;

  std::span<const uint32_t> keys_of(size_t i) const { return {keys.data() + requests[i].offset, requests[i].num_keys}; }
  // The keys request i's lookup may hit (for the offline policy's future).
  std::span<const uint32_t> lookup_keys(size_t i) const;
  uint32_t num_keys() const { return static_cast<uint32_t>(key_hashes.size()); }
  size_t size() const { return requests.size(); }
};

// With `ideal` (the source itself or a wrapper of it, deferred): each
// request's ideal hit is counted from its keys (IdealHitSource::account_keys).
PreparedTrace prepare_trace(RequestSource& src, int32_t block_size, IdealHitSource* ideal = nullptr);
PreparedTrace prepare_trace(std::span<const Request> requests, int32_t block_size);

// Replays one request after another on a pool of num_blocks blocks (block 0
// included). The policy must be freshly made. With check_invariants the pool
// is checked after every request (InternalError on a violation).
// num_keys > 0: the replay is over an interned trace with that many keys,
// and step_keys() is used instead of step().
class CacheReplayer {
 public:
  CacheReplayer(int32_t block_size, int64_t num_blocks, std::unique_ptr<EvictionPolicy> policy,
                bool check_invariants = false, uint32_t num_keys = 0);
  // `hashes`: full-block hashes of prompt + output.
  void step(std::span<const BlockHash> hashes, int64_t prompt_len, int64_t total_len);
  // `keys`: their dense keys; key_hashes maps a key back to its hash.
  void step_keys(std::span<const uint32_t> keys, std::span<const BlockHash> key_hashes, int64_t prompt_len,
                 int64_t total_len);
  CacheReplayResult result() const;
  // Starts the figures from zero (the requests so far warmed the cache).
  void start_counting() {
    r_ = CacheReplayResult{};
    evictions_before_ = pool_.evictions();
    counting_ = true;
  }
  // Whether start_counting() was called (the streaming replay calls it at
  // the first request that is not a warm-up one).
  bool counting() const { return counting_; }
  // The running totals (result() without its derived ratios), free to read after every request.
  const CacheReplayResult& totals() const { return r_; }
  const BlockPool& pool() const { return pool_; }
  // Leading blocks of the last request that the pool (hits) or its tiers
  // (loads) held at its lookup, admitted or refused: content computed
  // before, which the ideal hit rate's set holds (IdealHitSource::defer).
  size_t known_blocks() const { return known_blocks_; }
  // Tiers below the pool (nullptr: none); the stack hears the pool from now on.
  void set_tiers(KvTierStack* tiers) {
    tiers_ = tiers;
    if (tiers_) tiers_->attach(pool_);
  }

 private:
  template <class Chain>
  void step_impl(const Chain& chain, int64_t prompt_len, int64_t total_len);

  int32_t block_size_;
  BlockPool pool_;
  bool check_;
  uint64_t seq_ = 0;
  uint64_t evictions_before_ = 0;  // at start_counting()
  bool counting_ = false;
  CacheReplayResult r_;
  size_t known_blocks_ = 0;
  std::vector<BlockId> table_;
  KvTierStack* tiers_ = nullptr;
};

// `after_each`, when given, sees the replayer after every request (series,
// progress) and stops the replay by returning false (Ctrl-C); the result
// then covers what ran.
using CacheReplayHook = std::function<bool(const CacheReplayer&)>;
CacheReplayResult run_cache_replay(const PreparedTrace& trace, int64_t num_blocks,
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants = false,
                                   const CacheReplayHook& after_each = {}, KvTierStack* tiers = nullptr);
CacheReplayResult run_cache_replay(std::span<const Request> requests, int32_t block_size, int64_t num_blocks,
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants = false);
// Streams: memory does not grow with the trace. `ideal`, when given, is the
// deferred ideal-hit-rate pass that src reads through (or src itself):
// each request is accounted to it after its lookup.
CacheReplayResult run_cache_replay(RequestSource& src, int32_t block_size, int64_t num_blocks,
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants = false,
                                   const CacheReplayHook& after_each = {}, KvTierStack* tiers = nullptr,
                                   IdealHitSource* ideal = nullptr);

}  // namespace prefixsim
