#include "sim/kv/kv_cache_manager.h"

#include <algorithm>
#include <bit>

#include "sim/base/error.h"
#include "sim/kv/block_ops.h"

namespace prefixsim {

KvCacheManager::KvCacheManager(int32_t block_size, BlockPool& pool) : block_size_(block_size), pool_(pool) {
  if (block_size_ > 0 && std::has_single_bit(static_cast<uint32_t>(block_size_)))
    shift_ = std::countr_zero(static_cast<uint32_t>(block_size_));
}

LookupResult KvCacheManager::lookup(const BlockHashChain& chain, int64_t num_tokens, bool preempted, bool counted) {
  hit_scratch_.clear();
  if (!pool_.caching_enabled()) return {};
  const auto& hashes = chain.hashes();
  const size_t max_blocks = std::min(hashes.size(), static_cast<size_t>(div_bs(num_tokens - 1)));
  const BlockHashIndex& index = pool_.index();
  constexpr size_t kAhead = 8;  // prefetch distance: index slots are random accesses
  for (size_t i = 0; i < std::min(max_blocks, kAhead); ++i) index.prefetch(hashes[i]);
  for (size_t i = 0; i < max_blocks; ++i) {
    if (i + kAhead < max_blocks) index.prefetch(hashes[i + kAhead]);
    const BlockId b = pool_.find(hashes[i]);
    if (b == kNoBlock) break;
    hit_scratch_.push_back(b);
  }
  // Probed: the hits, and the miss that ended the walk if one did.
  block_op_counts().looked_up += std::min(hit_scratch_.size() + 1, max_blocks);
  const int64_t hit_tokens = static_cast<int64_t>(hit_scratch_.size()) * block_size_;
  for (PrefixCacheStats* s : {&stats_, &since_take_}) {
    if (!counted) break;
    if (preempted) {
      ++s->preempted_requests;
      s->preempted_queries += static_cast<uint64_t>(num_tokens);
      s->preempted_hits += static_cast<uint64_t>(hit_tokens);
    } else {
      ++s->requests;
      s->queries += static_cast<uint64_t>(num_tokens);
      s->hits += static_cast<uint64_t>(hit_tokens);
    }
  }
  return {hit_scratch_, hit_tokens};
}

bool KvCacheManager::allocate_blocks(KvSeq& seq, const BlockHashChain& chain, int64_t num_tokens, int64_t computed,
                                     int64_t num_new, std::span<const BlockId> hit, int64_t hit_tokens,
                                     bool full_sequence_must_fit, bool cache_new, int64_t reserved) {
  const int64_t held = static_cast<int64_t>(seq.blocks.size());
  const int64_t num_hit = static_cast<int64_t>(hit.size());
  int64_t evictable = 0;
  for (BlockId b : hit) evictable += pool_.ref_count(b) == 0 ? 1 : 0;
  const int64_t free = pool_.num_free() - reserved;
  // Blocks already held (a request whose KV was loaded from a tier) count.
  if (full_sequence_must_fit && blocks_for(num_tokens) - held - num_hit + evictable > free) return false;
  const int64_t total = computed + hit_tokens + num_new;
  const int64_t need = std::max<int64_t>(blocks_for(total) - held - num_hit, 0);
  if (need + evictable > free) return false;

  pool_.touch(hit);
  seq.blocks.insert(seq.blocks.end(), hit.begin(), hit.end());
  // Hits only come to a request holding nothing yet; they count as cached.
  if (!hit.empty()) seq.num_cached = seq.blocks.size();
  pool_.allocate(static_cast<int32_t>(need), seq.blocks);
  if (cache_new && pool_.caching_enabled()) cache_full_blocks(seq, chain, std::min(total, num_tokens));
  return true;
}

void KvCacheManager::free(KvSeq& seq) {
  block_op_counts().freed += seq.blocks.size();
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) pool_.release(*it);
  seq.blocks.clear();
  seq.num_cached = 0;
}

PrefixCacheStats KvCacheManager::take_stats() {
  PrefixCacheStats out = since_take_;
  since_take_ = {};
  return out;
}

}  // namespace prefixsim
