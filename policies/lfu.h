// lfu: evict the free block used the fewest times; ties go to the one
// released longest ago (LRU). A block's count starts at 1 when its content
// is cached and grows with every hit; it dies with the content.
//
// Optional aging (`half_life=H`, in block accesses; 0 = off): counts decay
// exponentially, f <- f * 2^(-dt/H) + 1 per access, so yesterday's hot
// prefix fades. Comparing decayed counts at any common time is comparing
// log2(f) + t_last/H, a key that stays fixed while a block waits, so the
// heap never needs a rebuild. (Frequency-based replacement: e.g. O'Neil et
// al., "The LRU-K page replacement algorithm", SIGMOD 1993, and the
// decayed-count variants surveyed by Podlipnig & Böszörmenyi, 2003.)
//
// Without aging the order (count, release time) is kept in O(1) per access,
// as in Shah, Mitra & Matani, "An O(1) algorithm for implementing the LFU
// cache eviction scheme" (2010): one list per count, each in release order
// (a count never changes while its block is free), and a bitmap of the
// non-empty lists; counts of kBuckets and more (rare, very hot blocks) wait
// in a heap keyed the same way. The heap alone (`buckets=false`, and always
// with aging) gives the same evictions and serves as the reference.
//
// Parameters, ours | libCacheSim LFU (cpp/LFU.cpp) | the literature:
//   half_life   0 = off, in block accesses | none: plain counts | decayed
//               counts, e.g. LRFU's lambda (Lee et al., 1999)
//   ties        released longest ago | least recent access | unspecified
//   count       from 1 at caching, +1 per hit | the same | the same
// Adapted to a paged KV cache: only free blocks (ref count 0) can go, so a
// block held by running requests is not a candidate however low its count;
// its count still grows with every lookup that hits it. A block's count
// dies with its content (no memory of evicted hashes, unlike tinylfu's
// sketch). Never-used free blocks are handed out before any cached one
// (CachedFirstPolicy), so nothing is evicted while they last. Equal to the
// textbook LFU eviction for eviction on single-block streams
// (test/policies/test_policy_differential.cpp).
// Without aging a block hit once is kept while any never-hit block is free:
// on agentic sessions half the pool ends up holding contexts of sessions
// that ended (test/policies/test_policy_agentic.cpp; half_life ages them).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "policies/cached_first.h"
#include "policies/indexed_heap.h"
#include "sim/kv/intrusive_list.h"

namespace prefixsim {

class LfuPolicy final : public CachedFirstPolicy {
 public:
  static constexpr int32_t kBuckets = 1024;  // counts 1..kBuckets-1 in lists

  explicit LfuPolicy(double half_life, bool buckets = true)
      : half_life_(half_life), buckets_(buckets && half_life <= 0) {}
  std::string name() const override { return "lfu"; }
  double count(BlockId b) const { return count_[b]; }

 protected:
  void init(int32_t num_blocks) override {
    count_.assign(static_cast<size_t>(num_blocks), 0.0);
    last_.assign(static_cast<size_t>(num_blocks), 0);
    now_ = 0;
    tick_ = 0;
    heap_.reset(num_blocks);
    if (buckets_) lists_.reset(num_blocks, kBuckets);
  }
  void on_insert(BlockId b, const CachedBlockInfo&) override {
    count_[b] = 0;
    last_[b] = now_;
    bump(b);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) remove(b);
    bump(b);
  }
  void on_release(BlockId b) override {
    ++tick_;
    const int32_t c = bucket_of(b);
    if (c < 0) {
      heap_.push(b, key(b));
      return;
    }
    lists_.push_back(c, b);
  }
  BlockId evict() override {
    // Every listed count is below every heaped one, so a list wins if any.
    const int32_t c = buckets_ ? lists_.first_nonempty() : -1;
    if (c < 0) return heap_.pop();
    const BlockId b = lists_.front(c);
    lists_.unlink(c, b);
    return b;
  }
  size_t policy_bytes() const override {
    return heap_.bytes() + lists_.bytes() + count_.capacity() * sizeof(double) + last_.capacity() * sizeof(uint64_t);
  }

 private:
  // The list of a free block with this count, or -1 for the heap.
  int32_t bucket_of(BlockId b) const {
    if (!buckets_ || count_[b] >= kBuckets) return -1;
    return static_cast<int32_t>(count_[b]);
  }
  HeapKey key(BlockId b) const {
    const double k = half_life_ > 0 ? std::log2(count_[b]) + static_cast<double>(last_[b]) / half_life_ : count_[b];
    return {k, tick_};
  }
  void remove(BlockId b) {
    const int32_t c = bucket_of(b);
    if (c < 0)
      heap_.erase(b);
    else
      lists_.unlink(c, b);
  }
  void bump(BlockId b) {
    ++now_;
    if (half_life_ > 0) count_[b] *= std::exp2(-static_cast<double>(now_ - last_[b]) / half_life_);
    count_[b] += 1;
    last_[b] = now_;
  }

  double half_life_;
  bool buckets_;
  std::vector<double> count_;
  std::vector<uint64_t> last_;  // access clock at the last access
  uint64_t now_ = 0;            // one tick per block access
  uint64_t tick_ = 0;           // one tick per release: the LRU tie-break
  IndexedHeap heap_;            // aging, or counts >= kBuckets
  IntrusiveLists lists_;        // by count, each in release order
};

}  // namespace prefixsim
