#include "sim/cache_replay.h"

#include <algorithm>

#include "sim/error.h"

namespace prefixsim {

namespace {

// Feeds prompt + output of r into chain (reset first). `out` is scratch.
void hash_request(const Request& r, int32_t block_size, BlockHashChain& chain, std::vector<int32_t>& out) {
  chain.reset(block_size, &r.extras);
  r.append_prompt_to(chain);
  out.clear();
  for (int64_t k = 0; k < r.output_len; ++k) out.push_back(r.output_token(k));
  chain.append_tokens(out);
}

class Preparer {
 public:
  explicit Preparer(int32_t block_size) { t_.block_size = block_size; }
  void add(const Request& r) {
    hash_request(r, t_.block_size, chain_, scratch_);
    PreparedTrace::Entry e;
    e.offset = t_.hashes.size();
    e.num_hashes = static_cast<uint32_t>(chain_.hashes().size());
    e.prompt_len = r.prompt_len;
    e.total_len = r.prompt_len + r.output_len;
    t_.hashes.insert(t_.hashes.end(), chain_.hashes().begin(), chain_.hashes().end());
    t_.requests.push_back(e);
    t_.prompt_tokens += r.prompt_len;
    t_.output_tokens += r.output_len;
  }
  PreparedTrace take() { return std::move(t_); }

 private:
  PreparedTrace t_;
  BlockHashChain chain_;
  std::vector<int32_t> scratch_;
};

int32_t pool_blocks(int64_t num_blocks) {
  if (num_blocks > INT32_MAX)
    throw InputError("kv blocks: " + std::to_string(num_blocks) + " blocks is more than a pool can hold (2^31-1)");
  return static_cast<int32_t>(num_blocks);
}

}  // namespace

std::span<const BlockHash> PreparedTrace::lookup_hashes(size_t i) const {
  const Entry& e = requests[i];
  const uint64_t cap = static_cast<uint64_t>((e.prompt_len - 1) / block_size);
  return {hashes.data() + e.offset, static_cast<size_t>(std::min<uint64_t>(e.num_hashes, cap))};
}

PreparedTrace prepare_trace(RequestSource& src, int32_t block_size) {
  Preparer p(block_size);
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
                             bool check_invariants)
    : block_size_(block_size), pool_(pool_blocks(num_blocks), true, std::move(policy)), check_(check_invariants) {
  if (block_size <= 0) throw InputError("block size must be positive");
}

void CacheReplayer::step(std::span<const BlockHash> hashes, int64_t prompt_len, int64_t total_len) {
  const int64_t B = block_size_;
  pool_.policy().on_request(seq_++);
  // Lookup (KvCacheManager::lookup): walk from block 0, stop at the first
  // miss, never the block holding the last prompt token.
  table_.clear();
  const size_t max_hit = std::min(hashes.size(), static_cast<size_t>((prompt_len - 1) / B));
  for (size_t i = 0; i < max_hit; ++i) {
    const BlockId b = pool_.find(hashes[i]);
    if (b == kNoBlock) break;
    table_.push_back(b);
  }
  const int64_t num_hit = static_cast<int64_t>(table_.size());
  // Admission (KvCacheManager::allocate, full sequence must fit): free hit
  // blocks are counted because touching them takes them out of the free set.
  int64_t evictable = 0;
  for (BlockId b : table_) evictable += pool_.ref_count(b) == 0 ? 1 : 0;
  const int64_t need_total = (total_len + B - 1) / B;
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
  // Touch the hits, pop the rest, cache every full block not yet cached.
  pool_.touch(table_);
  pool_.allocate(static_cast<int32_t>(need_total - num_hit), table_);
  r_.allocated_blocks += static_cast<uint64_t>(need_total - num_hit);
  const size_t full = std::min(hashes.size(), static_cast<size_t>(total_len / B));
  for (size_t i = static_cast<size_t>(num_hit); i < full; ++i) {
    CachedBlockInfo info;
    info.hash = hashes[i];
    info.has_parent = i > 0;
    if (i > 0) info.parent = hashes[i - 1];
    info.depth = static_cast<uint32_t>(i);
    pool_.cache(table_[i], info);
  }
  // The request finishes: free its blocks last to first.
  for (auto it = table_.rbegin(); it != table_.rend(); ++it) pool_.release(*it);
  if (check_) {
    const std::string err = pool_.check_invariants();
    if (!err.empty())
      throw InternalError("cache replay, request " + std::to_string(seq_ - 1) + ", policy " +
                          pool_.policy().name() + ": " + err);
  }
}

CacheReplayResult CacheReplayer::result() const {
  CacheReplayResult r = r_;
  r.evictions = pool_.evictions();
  r.hit_rate = r.prompt_tokens > 0 ? static_cast<double>(r.hit_tokens) / static_cast<double>(r.prompt_tokens) : 0;
  r.block_hit_rate =
      r.queried_blocks > 0 ? static_cast<double>(r.hit_blocks) / static_cast<double>(r.queried_blocks) : 0;
  return r;
}

CacheReplayResult run_cache_replay(const PreparedTrace& trace, int64_t num_blocks,
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants) {
  CacheReplayer rep(trace.block_size, num_blocks, std::move(policy), check_invariants);
  for (size_t i = 0; i < trace.size(); ++i)
    rep.step(trace.hashes_of(i), trace.requests[i].prompt_len, trace.requests[i].total_len);
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
                                   std::unique_ptr<EvictionPolicy> policy, bool check_invariants) {
  CacheReplayer rep(block_size, num_blocks, std::move(policy), check_invariants);
  BlockHashChain chain;
  std::vector<int32_t> scratch;
  Request r;
  while (src.next(r)) {
    hash_request(r, block_size, chain, scratch);
    rep.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
  }
  return rep.result();
}

}  // namespace prefixsim
