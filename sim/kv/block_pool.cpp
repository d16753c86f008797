#include "sim/kv/block_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/base/error.h"
#include "sim/kv/block_ops.h"

namespace prefixsim {

double pool_memory_limit_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page) / 2;
}

std::string gib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

void check_pool_fits_memory(int64_t num_blocks, const std::string& flag) {
  const double limit = pool_memory_limit_bytes();
  if (limit <= 0) return;  // unknown: nothing to check against
  const double needed = static_cast<double>(num_blocks) * kMinPoolBytesPerBlock;
  if (needed <= limit) return;
  throw InputError(flag + ": a pool of " + std::to_string(num_blocks) + " blocks needs at least " + gib_text(needed) +
                   " GiB of this machine's memory to simulate, more than half of its " + gib_text(2 * limit) +
                   " GiB; give a smaller pool");
}

// Debug builds (PREFIXSIM_DEBUG_INVARIANTS) check, after every operation, the
// part of the invariant (block_pool.h) that the operation touched: O(1) per
// block, so whole test suites run with it. check_invariants() is the full,
// O(N) check (--check-invariants, the property tests).
#ifdef PREFIXSIM_DEBUG_INVARIANTS
#define POOL_INVARIANT(cond, what)                                                                       \
  do {                                                                                                   \
    if (!(cond)) throw InternalError(std::string("block pool invariant broken: ") + (what));            \
  } while (0)
#else
#define POOL_INVARIANT(cond, what) \
  do {                             \
  } while (0)
#endif

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching, std::unique_ptr<EvictionPolicy> policy,
                     uint32_t num_keys)
    : num_blocks_(num_blocks), enable_caching_(enable_caching), policy_(std::move(policy)), keyed_(num_keys > 0) {
  if (num_blocks < 2) throw InputError("num_blocks must be at least 2 (block 0 is the null block)");
  // Every count 0, every hash zero, the index empty: all zero bytes, so a
  // pool costs memory only for the blocks its run uses (zeroed_array.h).
  ref_.reset(static_cast<size_t>(num_blocks));
  hashes_.reset(static_cast<size_t>(num_blocks));
  if (keyed_)
    keys_.reset(num_blocks, num_keys);
  else
    index_.reset(num_blocks, hashes_.data());
  num_free_ = num_blocks - 1;
  policy_->reset(*this, num_blocks);
}

BlockOpCounts& block_op_counts() {
  static thread_local BlockOpCounts counts;
  return counts;
}

void BlockPool::touch(std::span<const BlockId> blocks) {
  block_op_counts().allocated += blocks.size();
  for (BlockId b : blocks) {
    const bool was_free = ref_[b] == 0;
    if (was_free) --num_free_;
    policy_->on_hit(b, was_free);
    ++ref_[b];
    POOL_INVARIANT(b > 0 && !policy_->is_free(b), "a touched block is still in the free set");
  }
  POOL_INVARIANT(num_free_ == policy_->num_free(), "free count differs from the policy's after touch");
}

void BlockPool::allocate(int32_t n, std::vector<BlockId>& out) {
  const bool tell = policy_->observes_contents();
  block_op_counts().allocated += static_cast<uint64_t>(std::max(n, 0));
  for (int32_t i = 0; i < n; ++i) {
    const BlockId b = policy_->pop_free();
    if (b <= 0 || ref_[b] != 0) throw InternalError("eviction policy handed out a block that is not free");
    if (is_cached(b)) {  // lazy eviction at reuse
      if (keyed_)
        keys_.erase(b);
      else
        index_.erase(b);
      ++evictions_;
      if (tell) policy_->on_evicted(b, hashes_[b], keyed_ ? keys_.key_of(b) : kNoKey);
      if (listener_) listener_->on_pool_evicted(hashes_[b], keyed_ ? keys_.key_of(b) : kNoKey);
    }
    ref_[b] = 1;
    --num_free_;
    POOL_INVARIANT(!policy_->is_free(b) && !is_cached(b), "an allocated block is free or still cached");
    out.push_back(b);
  }
  POOL_INVARIANT(num_free_ == policy_->num_free(), "free count differs from the policy's after allocate");
}

void BlockPool::index_block(BlockId b, const BlockHash& hash, uint32_t key) {
  POOL_INVARIANT(b > 0 && ref_[b] > 0, "only a block in use can be filled and cached");
  hashes_[b] = hash;
  if (keyed_) {
    if (key == kNoKey) throw InternalError("keyed block pool: a block was cached without its key");
    keys_.insert(b, key);
  } else {
    index_.insert(b);
  }
  if (listener_) listener_->on_pool_cached(hash, key);
}

void BlockPool::cache(BlockId b, const CachedBlockInfo& info) {
  ++block_op_counts().cached;
  index_block(b, info.hash, info.key);
  policy_->on_cached(b, info);
}

void BlockPool::cache_chain(std::span<const BlockId> blocks, std::span<const BlockHash> chain, size_t from,
                            size_t to) {
  if (keyed_) throw InternalError("block pool: a keyed pool was given hashes to cache");
  // Bucket heads are random accesses: fetch a few ahead.
  constexpr size_t kAhead = 8;
  for (size_t i = from; i < std::min(to, from + kAhead); ++i) index_.prefetch(chain[i]);
  const bool describe = policy_->observes_contents();
  if (!describe && to > from) block_op_counts().cached += to - from;  // cache() counts the others
  // Inserting also stores to the chain's old head: its node is fetched
  // kAhead / 2 blocks ahead, once its bucket has arrived.
  for (size_t i = from; i < std::min(to, from + kAhead / 2); ++i) index_.prefetch_chain(chain[i]);
  for (size_t i = from; i < to; ++i) {
    if (i + kAhead < to) index_.prefetch(chain[i + kAhead]);
    if (i + kAhead / 2 < to) index_.prefetch_chain(chain[i + kAhead / 2]);
    const BlockId b = blocks[i];
    if (describe) {
      CachedBlockInfo info;
      info.hash = chain[i];
      info.has_parent = i > 0;
      if (i > 0) info.parent = chain[i - 1];
      info.depth = static_cast<uint32_t>(i);
      cache(b, info);
    } else {
      index_block(b, chain[i], kNoKey);
    }
  }
}

void BlockPool::release(BlockId b) {
  POOL_INVARIANT(b > 0 && ref_[b] > 0, "released a block that is not in use");
  if (--ref_[b] == 0) {
    ++num_free_;
    policy_->on_free(b);
    POOL_INVARIANT(policy_->is_free(b) && num_free_ == policy_->num_free(), "a released block is not in the free set");
  }
}

std::string BlockPool::check_invariants() const {
  std::ostringstream err;
  if (ref_[0] != 0 || policy_->is_free(0) || is_cached(0)) err << "the null block was used; ";
  int32_t free_seen = 0;
  size_t cached = 0;
  for (BlockId b = 1; b < num_blocks_; ++b) {
    const bool in_free = policy_->is_free(b);
    if (ref_[b] < 0) err << "block " << b << " has ref_count " << ref_[b] << "; ";
    if (ref_[b] > 0 && in_free) err << "block " << b << " is referenced but in the free set; ";
    if (ref_[b] == 0 && !in_free) err << "block " << b << " is unreferenced but not in the free set; ";
    free_seen += in_free ? 1 : 0;
    if (is_cached(b)) {
      ++cached;
      // Findable: the chain under its hash (or key) reaches it.
      BlockId c = keyed_ ? keys_.find(keys_.key_of(b)) : index_.find(hashes_[b]);
      while (c != kNoBlock && c != b) c = keyed_ ? keys_.next_duplicate(c) : index_.next_duplicate(c);
      if (c != b) err << "cached block " << b << " is not findable by its hash; ";
    }
    if (!err.str().empty() && err.str().size() > 400) break;
  }
  if (free_seen != num_free_ || policy_->num_free() != num_free_)
    err << "num_free " << num_free_ << " but the free set holds " << free_seen << " (policy says "
        << policy_->num_free() << "); ";
  (void)cached;
  return err.str();
}

size_t BlockPool::metadata_bytes() const {
  return ref_.bytes() + hashes_.bytes() + index_.bytes() + keys_.bytes() +
         policy_->bytes();
}

}  // namespace prefixsim
