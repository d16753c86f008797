#include "sim/engine/cache_replay.h"

#include <algorithm>
#include <utility>

#include "sim/base/error.h"
#include "sim/base/zeroed_array.h"
#include "sim/engine/ideal_hit.h"

namespace prefixsim {

namespace {

// Appends the computed output of r (all but the last token: Request::kv_len)
// to chain, which holds r's prompt. `out` is scratch.
void hash_output(const Request& r, BlockHashChain& chain, std::vector<int32_t>& out) {
  out.clear();
  const uint64_t key = r.output_key();
  for (int64_t k = 0; k + 1 < r.output_len; ++k) out.push_back(r.output_token(key, k));
  chain.append_tokens(out);
}

// Whether r.prompt_chain already holds r's whole computed sequence at
// block_size (the ideal hit rate's pass hands it on in cache mode).
bool has_sequence_chain(const Request& r, int32_t block_size) {
  return r.prompt_chain.block_size() == block_size && r.prompt_chain.num_tokens() == r.kv_len();
}

// Resets chain to prompt + output of r, reusing what an earlier stage hashed.
void hash_request(const Request& r, int32_t block_size, BlockHashChain& chain, std::vector<int32_t>& out) {
  if (has_sequence_chain(r, block_size)) {
    chain = r.prompt_chain;
    chain.set_extras(&r.extras);
    return;
  }
  r.hash_prompt(chain, block_size);
  hash_output(r, chain, out);
}

// The same, moving the chain out of r (which is ours).
void take_request_chain(Request& r, int32_t block_size, BlockHashChain& chain, std::vector<int32_t>& out) {
  if (has_sequence_chain(r, block_size)) {
    std::swap(chain, r.prompt_chain);
    chain.set_extras(&r.extras);
    // r keeps the previous chain's memory for the next request, emptied and
    // of block size 0, so never taken for a request's sequence.
    r.prompt_chain.reset(0, nullptr);
    return;
  }
  r.take_prompt_chain(chain, block_size);
  hash_output(r, chain, out);
}

// Interns block hashes: open addressing over 4-byte slots holding key + 1
// (0 = empty); equality on the full hash in key_hashes. Grows at load 3/4;
// the slots are a dense table (touched all over), mapped with huge pages
// when large (ZeroedArray), as the ideal hit rate's table is.
class HashInterner {
 public:
  explicit HashInterner(std::vector<BlockHash>& key_hashes) : hashes_(key_hashes) { slots_.reset(1 << 16, true); }
  uint32_t intern(const BlockHash& h) {
    if ((hashes_.size() + 1) * 4 > slots_.size() * 3) grow();
    const uint64_t mask = slots_.size() - 1;
    for (uint64_t i = h.lo & mask;; i = (i + 1) & mask) {
      const uint32_t s = slots_[i];
      if (s == 0) {
        if (hashes_.size() >= UINT32_MAX - 1) throw InputError("trace: more than 2^32-2 distinct blocks");
        hashes_.push_back(h);
        slots_[i] = static_cast<uint32_t>(hashes_.size());
        return slots_[i] - 1;
      }
      if (hashes_[s - 1] == h) return s - 1;
    }
  }

 private:
  void grow() {
    slots_.reset(slots_.size() * 2, true);
    const uint64_t mask = slots_.size() - 1;
    for (size_t k = 0; k < hashes_.size(); ++k) {
      uint64_t i = hashes_[k].lo & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = static_cast<uint32_t>(k + 1);
    }
  }
  std::vector<BlockHash>& hashes_;
  ZeroedArray<uint32_t> slots_;
};

class Preparer {
 public:
  explicit Preparer(int32_t block_size, IdealHitSource* ideal = nullptr) : interner_(t_.key_hashes), ideal_(ideal) {
    t_.block_size = block_size;
  }
  // r is ours: its chain is taken, not copied.
  void add(Request& r) {
    take_request_chain(r, t_.block_size, chain_, scratch_);
    add_chain(r);
  }
  void add(const Request& r) {
    hash_request(r, t_.block_size, chain_, scratch_);
    add_chain(r);
  }
  // Not shrunk to fit: that copies both arrays (tens of MB on a trace of
  // millions of blocks) into fresh pages, while their slack past size() was
  // never written and, in a large allocation (mapped), holds no memory.
  PreparedTrace take() { return std::move(t_); }

 private:
  void add_chain(const Request& r) {
    const uint32_t first_new_key = t_.num_keys();
    PreparedTrace::Entry e;
    e.offset = t_.keys.size();
    e.num_keys = static_cast<uint32_t>(chain_.hashes().size());
    e.prompt_len = r.prompt_len;
    e.total_len = r.prompt_len + r.output_len;
    for (const BlockHash& h : chain_.hashes()) t_.keys.push_back(interner_.intern(h));
    if (ideal_) ideal_->account_keys(r, {t_.keys.data() + e.offset, e.num_keys}, first_new_key);
    if (r.warmup) {
      if (t_.warmup != t_.requests.size()) throw InternalError("prepare_trace: a warm-up request after a counted one");
      ++t_.warmup;
    }
    t_.requests.push_back(e);
    t_.prompt_tokens += r.prompt_len;
    t_.output_tokens += r.output_len;
  }

  PreparedTrace t_;
  HashInterner interner_;
  IdealHitSource* ideal_;
  BlockHashChain chain_;
  std::vector<int32_t> scratch_;
};

// The two ways a replay sees a request's chain: hashes looked up in the hash
// index, or interned keys looked up in the dense index.
struct HashChain {
  std::span<const BlockHash> hashes;
  size_t size() const { return hashes.size(); }
  std::span<const uint32_t> keys_or_none() const { return {}; }
  BlockId find(const BlockPool& pool, size_t i) const { return pool.find(hashes[i]); }
  void cache(BlockPool& pool, std::span<const BlockId> table, size_t from, size_t to) const {
    pool.cache_chain(table, hashes, from, to);
  }
};
struct KeyChain {
  std::span<const uint32_t> keys;
  std::span<const BlockHash> key_hashes;
  std::span<const BlockHash> hashes;  // none: tiers name blocks by key too
  size_t size() const { return keys.size(); }
  std::span<const uint32_t> keys_or_none() const { return keys; }
  BlockId find(const BlockPool& pool, size_t i) const { return pool.find_key(keys[i]); }
  void cache(BlockPool& pool, std::span<const BlockId> table, size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i) {
      CachedBlockInfo info;
      info.key = keys[i];
      info.hash = key_hashes[keys[i]];
      if (i > 0) {
        info.parent_key = keys[i - 1];
        info.parent = key_hashes[keys[i - 1]];
      }
      info.has_parent = i > 0;
      info.depth = static_cast<uint32_t>(i);
      pool.cache(table[i], info);
    }
  }
};

int32_t pool_blocks(int64_t num_blocks) {
  if (num_blocks > INT32_MAX)
    throw InputError("kv blocks: " + std::to_string(num_blocks) + " blocks is more than a pool can hold (2^31-1)");
  return static_cast<int32_t>(num_blocks);
}

}  // namespace

std::span<const uint32_t> PreparedTrace::lookup_keys(size_t i) const {
  const Entry& e = requests[i];
  const uint64_t cap = static_cast<uint64_t>((e.prompt_len - 1) / block_size);
  return {keys.data() + e.offset, static_cast<size_t>(std::min<uint64_t>(e.num_keys, cap))};
}

PreparedTrace prepare_trace(RequestSource& src, int32_t block_size, IdealHitSource* ideal) {
  Preparer p(block_size, ideal);
  Request r;
  while (src.next(r)) p.add(r);
  return p.take();
}

PreparedTrace prepare_trace(std::span<const Request> requests, int32_t block_size) {
  Preparer p(block_size);
  for (const Request& r : requests) p.add(r);
  return p.take();
}

CacheReplayer::CacheReplayer(int32_t block_size, int64_t num_blocks, std::unique_ptr<EvictionPolicy> policy,
                             bool check_invariants, uint32_t num_keys)
    : block_size_(block_size),
      pool_(pool_blocks(num_blocks), true, std::move(policy), num_keys),
      check_(check_invariants) {
  if (block_size <= 0) throw InputError("block size must be positive");
}

void CacheReplayer::step(std::span<const BlockHash> hashes, int64_t prompt_len, int64_t total_len) {
  if (pool_.keyed()) throw InternalError("cache replay: a keyed replay was given hashes");
  step_impl(HashChain{hashes}, prompt_len, total_len);
}

void CacheReplayer::step_keys(std::span<const uint32_t> keys, std::span<const BlockHash> key_hashes,
                              int64_t prompt_len, int64_t total_len) {
  if (!pool_.keyed()) throw InternalError("cache replay: a hash-indexed replay was given keys");
  step_impl(KeyChain{keys, key_hashes, {}}, prompt_len, total_len);
}

template <class Chain>
void CacheReplayer::step_impl(const Chain& chain, int64_t prompt_len, int64_t total_len) {
  const int64_t B = block_size_;
  pool_.policy().on_request(seq_++);
  // Lookup (KvCacheManager::lookup): walk from block 0, stop at the first
  // miss, never the block holding the last prompt token.
  table_.clear();
  const size_t max_hit = std::min(chain.size(), static_cast<size_t>((prompt_len - 1) / B));
  for (size_t i = 0; i < max_hit; ++i) {
    const BlockId b = chain.find(pool_, i);
    if (b == kNoBlock) break;
    table_.push_back(b);
  }
  const int64_t num_hit = static_cast<int64_t>(table_.size());
  // Below the GPU prefix: the tiers' continuation of it (loaded, then
  // allocated and cached like computed blocks).
  const int64_t num_loaded =
      tiers_ ? static_cast<int64_t>(tiers_->lookup(chain.hashes, chain.keys_or_none(), table_.size(), max_hit, 0)) : 0;
  known_blocks_ = static_cast<size_t>(num_hit + num_loaded);
  // Admission (KvCacheManager::allocate, full sequence must fit): free hit
  // blocks are counted because touching them takes them out of the free set.
  int64_t evictable = 0;
  for (BlockId b : table_) evictable += pool_.ref_count(b) == 0 ? 1 : 0;
  // The request's KV holds its computed tokens only (Request::kv_len): the
  // last sampled token is never fed back, so its slot is never allocated
  // and its block is not cached.
  const int64_t kv_len = Request::kv_len(prompt_len, total_len);
  const int64_t need_total = (kv_len + B - 1) / B;
  if (need_total - num_hit + evictable > pool_.num_free()) {
    ++r_.refused_requests;
    r_.refused_prompt_tokens += prompt_len;
    return;
  }
  ++r_.requests;
  r_.prompt_tokens += prompt_len;
  r_.output_tokens += total_len - prompt_len;
  r_.hit_tokens += num_hit * B;
  r_.queried_blocks += static_cast<uint64_t>((prompt_len + B - 1) / B);
  r_.hit_blocks += static_cast<uint64_t>(num_hit);
  r_.tier_hit_tokens += num_loaded * B;
  r_.tier_hit_blocks += static_cast<uint64_t>(num_loaded);
  if (tiers_) tiers_->load(0);
  // Touch the hits, pop the rest, cache every full block not yet cached.
  pool_.touch(table_);
  pool_.allocate(static_cast<int32_t>(need_total - num_hit), table_);
  r_.allocated_blocks += static_cast<uint64_t>(need_total - num_hit);
  const size_t full = std::min(chain.size(), static_cast<size_t>(kv_len / B));
  if (full > static_cast<size_t>(num_hit)) chain.cache(pool_, table_, static_cast<size_t>(num_hit), full);
  // vLLM's connector offers the request's GPU hits too (a tier may have
  // evicted them while the GPU kept them).
  if (tiers_) tiers_->offer(chain.hashes, chain.keys_or_none(), 0, static_cast<size_t>(num_hit));
  // The request finishes: free its blocks last to first.
  for (auto it = table_.rbegin(); it != table_.rend(); ++it) pool_.release(*it);
  if (check_) {
    const std::string err = pool_.check_invariants();
    std::string tier_err;
    for (size_t k = 0; tiers_ && k < tiers_->size(); ++k) tier_err += tiers_->tier(k).check_invariants();
    if (!err.empty() || !tier_err.empty())
      throw InternalError("cache replay, request " + std::to_string(seq_ - 1) + ", policy " +
                          pool_.policy().name() + ": " + err + tier_err);
  }
}

CacheReplayResult CacheReplayer::result() const {
  CacheReplayResult r = r_;
  r.evictions = pool_.evictions() - evictions_before_;
  r.hit_rate = r.prompt_tokens > 0 ? static_cast<double>(r.hit_tokens) / static_cast<double>(r.prompt_tokens) : 0;
  r.block_hit_rate =
      r.queried_blocks > 0 ? static_cast<double>(r.hit_blocks) / static_cast<double>(r.queried_blocks) : 0;
  return r;
}

CacheReplayResult run_cache_replay(const PreparedTrace& trace, int64_t num_blocks,
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants,
                                   const CacheReplayHook& after_each, KvTierStack* tiers) {
  CacheReplayer rep(trace.block_size, num_blocks, std::move(policy), check_invariants,
                    std::max<uint32_t>(trace.num_keys(), 1));
  rep.set_tiers(tiers);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (i == trace.warmup) rep.start_counting();  // the warm-up requests come first
    rep.step_keys(trace.keys_of(i), trace.key_hashes, trace.requests[i].prompt_len, trace.requests[i].total_len);
    if (after_each && !after_each(rep)) break;
  }
  if (!rep.counting()) rep.start_counting();  // the whole trace warmed the cache: nothing counted
  return rep.result();
}

CacheReplayResult run_cache_replay(std::span<const Request> requests, int32_t block_size, int64_t num_blocks,
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants) {
  CacheReplayer rep(block_size, num_blocks, std::move(policy), check_invariants);
  BlockHashChain chain;
  std::vector<int32_t> scratch;
  for (const Request& r : requests) {
    hash_request(r, block_size, chain, scratch);
    rep.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
  }
  return rep.result();
}

CacheReplayResult run_cache_replay(RequestSource& src, int32_t block_size, int64_t num_blocks,
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants,
                                   const CacheReplayHook& after_each, KvTierStack* tiers, IdealHitSource* ideal) {
  CacheReplayer rep(block_size, num_blocks, std::move(policy), check_invariants);
  rep.set_tiers(tiers);
  BlockHashChain chain;
  std::vector<int32_t> scratch;
  Request r;
  bool counting = false;
  while (src.next(r)) {
    if (!r.warmup && !counting) rep.start_counting(), counting = true;  // warm-up requests come first
    take_request_chain(r, block_size, chain, scratch);
    rep.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
    if (ideal) ideal->account(r, chain, rep.known_blocks());
    if (after_each && !after_each(rep)) break;
  }
  if (!counting) rep.start_counting();  // the whole trace warmed the cache: nothing counted
  return rep.result();
}

}  // namespace prefixsim
