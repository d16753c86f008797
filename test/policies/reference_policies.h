// Test-only reference caches: each policy written the plain textbook way,
// over single-block objects (a std::list or std::map per queue, O(n) where
// that is simplest), with no knowledge of block pools. The differential test
// (test_policy_differential.cpp) replays the same object stream through a
// real policy in a cache-mode pool and through its reference, and compares
// hits access for access and the cached set after every access.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/base/types.h"

namespace prefixsim::test {

class ReferenceCache {
 public:
  virtual ~ReferenceCache() = default;
  // Accesses object x; returns whether it was cached.
  virtual bool access(uint64_t x) = 0;
  virtual bool cached(uint64_t x) const = 0;
  virtual size_t size() const = 0;
};

// The frequency estimate W-TinyLFU's admission uses. The differential test
// plugs in the real Count-Min sketch (so that queues are compared eviction
// for eviction) or exact aged counts (to bound what the sketch's error costs).
class FrequencyOracle {
 public:
  virtual ~FrequencyOracle() = default;
  virtual void add(uint64_t x) = 0;
  virtual uint32_t estimate(uint64_t x) const = 0;
};
// Exact counts, saturating at 15, all halved after every `period` additions:
// the counts a Count-Min sketch without collisions would hold.
std::unique_ptr<FrequencyOracle> exact_aged_counts(int64_t period);
// The real CountMinSketch, keyed by ObjectCache::hash(x).
std::unique_ptr<FrequencyOracle> count_min_oracle(int64_t capacity, int64_t sample);

// Textbook LRU: the C most recently used objects.
std::unique_ptr<ReferenceCache> reference_lru(size_t capacity);
// vLLM's free queue in a single-block stream, in closed form: every request
// also takes a scratch block (its partial last block) that is freed just
// before its object, and vLLM takes free blocks from the queue's head cached
// or not. An object is cached iff, since its last access, the accesses plus
// the distinct objects accessed number at most C (see the .cpp).
std::unique_ptr<ReferenceCache> reference_vllm_lru(size_t capacity);
std::unique_ptr<ReferenceCache> reference_fifo(size_t capacity);
std::unique_ptr<ReferenceCache> reference_sieve(size_t capacity);
// LFU: evict the least count; ties by least recent access.
std::unique_ptr<ReferenceCache> reference_lfu(size_t capacity);
// GreedyDual (Cao & Irani 1997; Cherkasova 1998), size 1: priority
// K = L + frequency x cost set at each access (frequency 1 when cached);
// evict the least K, ties by least recent access; L rises to the evicted K.
// cost 1 is LFU-DA (Arlitt et al. 2000), cost c a single-block GDSF.
std::unique_ptr<ReferenceCache> reference_greedy_dual(size_t capacity, double cost);
// Belady's MIN over a known stream: evict the object next used farthest
// ahead; objects never used again go first, least recently used first.
std::unique_ptr<ReferenceCache> reference_belady(size_t capacity, const std::vector<uint64_t>& stream);
// ARC as in Megiddo & Modha, FAST 2003, Figure 4 (T1, T2, B1, B2, p).
std::unique_ptr<ReferenceCache> reference_arc(size_t capacity);
// Full 2Q as in Johnson & Shasha, VLDB 1994: A1in FIFO (the oldest goes
// while it holds more than kin_blocks: the paper's Kin = 0.25 c), A1out
// ghosts (kout_hashes: Kout = 0.5 c), Am LRU.
std::unique_ptr<ReferenceCache> reference_2q(size_t capacity, double kin_blocks, size_t kout_hashes);
// S3-FIFO as in Yang et al., SOSP 2023, Algorithm 1 (S of small x C, M, ghost
// G of `ghosts` entries, 2-bit counters, promotion from S at >= 1 hit).
std::unique_ptr<ReferenceCache> reference_s3fifo(size_t capacity, double small, size_t ghosts);
// W-TinyLFU as Caffeine: window LRU of window_max, main SLRU (probation,
// protected of protected_max), window LRU vs probation LRU duel on the
// oracle's estimate when the window overflows on a miss with a full cache.
std::unique_ptr<ReferenceCache> reference_tinylfu(size_t capacity, size_t window_max, size_t protected_max,
                                                  std::unique_ptr<FrequencyOracle> oracle);
// The same with Caffeine's hill climber (BoundedLocalCache.climb), run
// after every access: samples of sample_size accesses once the cache has
// held maximum / 2 objects, step 0.0625 x maximum (first towards a smaller
// window), restarted at a hit-rate change of 0.05, else decayed by 0.98;
// the window grows from protected's maximum and shrinks to 1 at least.
// `maximum` is Caffeine's maximum size (here the pool's capacity).
class ClimbingReference : public ReferenceCache {
 public:
  virtual size_t window_max() const = 0;
  virtual size_t protected_max() const = 0;
};
std::unique_ptr<ClimbingReference> reference_tinylfu_climbing(size_t capacity, size_t window_max, size_t protected_max,
                                                              int64_t maximum, int64_t sample_size,
                                                              std::unique_ptr<FrequencyOracle> oracle);

}  // namespace prefixsim::test
