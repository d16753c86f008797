// vLLM v1's KVCacheManager for one full-attention group (the decoder-only
// set-up), over a BlockPool. `test/data/golden/vllm-v1/README.md` is the
// specification; the numbers below are its items.
//
//   lookup()   get_computed_blocks: walk the full-block hashes from block 0,
//              stop at the first miss, look at most floor((len-1)/B) blocks
//              (the last token is always recomputed) [6]; record stats [11]
//   allocate() allocate_slots: admission test counting free hit blocks [7];
//              touch hits, pop new blocks (lazy eviction), then cache every
//              newly full block [8]
//   free()     release the block table last to first [9]
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/kv/block_hash.h"
#include "sim/kv/block_pool.h"

namespace prefixsim {

// One request's hold on the KV cache.
struct KvSeq {
  std::vector<BlockId> blocks;  // block table; only ever grows until free()
  size_t num_cached = 0;        // leading blocks whose hash this request has inserted (or hit)
};

// vLLM's PrefixCacheStats: every lookup, refused ones included; lookups of
// previously preempted requests are counted apart.
struct PrefixCacheStats {
  uint64_t requests = 0, queries = 0, hits = 0;
  uint64_t preempted_requests = 0, preempted_queries = 0, preempted_hits = 0;
  PrefixCacheStats& operator+=(const PrefixCacheStats& s) {
    requests += s.requests;
    queries += s.queries;
    hits += s.hits;
    preempted_requests += s.preempted_requests;
    preempted_queries += s.preempted_queries;
    preempted_hits += s.preempted_hits;
    return *this;
  }
};

struct LookupResult {
  std::span<const BlockId> blocks;  // valid until the next lookup
  int64_t hit_tokens = 0;
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t block_size, BlockPool& pool);

  int32_t block_size() const { return block_size_; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }

  // Prefix lookup of a waiting request whose sequence (prompt, plus outputs
  // if it was preempted) is `num_tokens` long with hashes `chain`. A lookup
  // that is not `counted` (a warm-up request's, Request::warmup) enters no
  // PrefixCacheStats: warm-up requests are left out of every figure.
  LookupResult lookup(const BlockHashChain& chain, int64_t num_tokens, bool preempted, bool counted = true);

  // Make room for `num_new` tokens after `computed` already computed tokens
  // and the `hit` blocks (hit_tokens long) found by lookup(). With
  // full_sequence_must_fit the whole current sequence (`num_tokens`) must fit
  // (vLLM's admission test). Returns false and changes nothing on refusal.
  bool allocate(KvSeq& seq, const BlockHashChain& chain, int64_t num_tokens, int64_t computed, int64_t num_new,
                std::span<const BlockId> hit, int64_t hit_tokens, bool full_sequence_must_fit) {
    if (hit.empty() && !full_sequence_must_fit) {
      // A running request's step (most often one decode token; a call per
      // running request per step, so it is inline): no block to take when
      // the blocks held cover it, and none newly full unless it crosses a
      // block boundary. The same outcome as allocate_blocks'.
      const int64_t total = computed + num_new;
      if (blocks_for(total) <= static_cast<int64_t>(seq.blocks.size())) {
        if (pool_.caching_enabled()) cache_full_blocks(seq, chain, std::min(total, num_tokens));
        return true;
      }
    }
    return allocate_blocks(seq, chain, num_tokens, computed, num_new, hit, hit_tokens, full_sequence_must_fit);
  }

  // A request about to load `load_tokens` tokens found below the GPU (KV
  // tiers) after its `hit` blocks: takes blocks for the hits and the loaded
  // tokens without caching the loaded ones yet (vLLM's delay_cache_blocks:
  // no other request may hit a block whose KV is still on its way). Same
  // admission test as allocate(), against the free blocks less `reserved`
  // (vLLM's in-flight prefill reservation: Scheduler::start_load); false and
  // nothing changed on refusal.
  bool allocate_for_load(KvSeq& seq, const BlockHashChain& chain, int64_t num_tokens, std::span<const BlockId> hit,
                         int64_t hit_tokens, int64_t load_tokens, bool full_sequence_must_fit, int64_t reserved) {
    return allocate_blocks(seq, chain, num_tokens, 0, load_tokens, hit, hit_tokens, full_sequence_must_fit, false,
                           reserved);
  }
  // Hash ("cache") the blocks of seq fully covered by `covered_tokens`
  // known tokens that it has not hashed yet (vLLM's cache_blocks, which the
  // async scheduler calls when a sampled token replaces its placeholder, and
  // the scheduler when a load from KV tiers is done).
  void cache_computed(KvSeq& seq, const BlockHashChain& chain, int64_t covered_tokens) {
    if (pool_.caching_enabled() && covered_tokens > 0) cache_full_blocks(seq, chain, covered_tokens);
  }
  // Release every block of seq, last to first, and clear it.
  void free(KvSeq& seq);

  const PrefixCacheStats& stats() const { return stats_; }
  // Returns the stats since the last call and starts afresh (vLLM's
  // make_prefix_cache_stats).
  PrefixCacheStats take_stats();

 private:
  // tokens / block_size, by a shift when the block size is a power of two
  // (a 64-bit division per call showed up in the engine's per-step profile).
  int64_t div_bs(int64_t tokens) const { return shift_ >= 0 && tokens >= 0 ? tokens >> shift_ : tokens / block_size_; }
  int64_t blocks_for(int64_t tokens) const { return div_bs(tokens + block_size_ - 1); }
  bool allocate_blocks(KvSeq& seq, const BlockHashChain& chain, int64_t num_tokens, int64_t computed, int64_t num_new,
                       std::span<const BlockId> hit, int64_t hit_tokens, bool full_sequence_must_fit,
                       bool cache_new = true, int64_t reserved = 0);
  void cache_full_blocks(KvSeq& seq, const BlockHashChain& chain, int64_t covered_tokens) {
    const auto& hashes = chain.hashes();
    const size_t full = std::min(static_cast<size_t>(div_bs(covered_tokens)), hashes.size());
    if (full <= seq.num_cached) return;
    pool_.cache_chain(seq.blocks, hashes, seq.num_cached, full);
    seq.num_cached = full;
  }

  int32_t block_size_;
  int32_t shift_ = -1;  // log2(block_size_) when it is a power of two, else -1
  BlockPool& pool_;
  PrefixCacheStats stats_;
  PrefixCacheStats since_take_;
  std::vector<BlockId> hit_scratch_;
};

}  // namespace prefixsim
