// tinylfu: an LRU cache behind the TinyLFU admission filter (Einziger,
// Friedman, Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", ACM
// TOS 2017). Every access of a block hash is counted in a Count-Min sketch
// (4 rows of saturating 4-bit counters) whose counters are halved every W
// accesses (W = sample x cache size, default 10), so it estimates recent
// frequency in a few bits per block. New content is admitted only if its
// estimate beats that of the block LRU would evict next.
//
// Adapted to a paged KV cache: content must be computed into a block anyway,
// so "refusing admission" means the block, once free, does not join the LRU
// queue but a probation queue that is evicted first. The test is made when a
// block becomes free (and again at each later release, so content that
// earns hits gets in). Never-used blocks are still reused before any of them.
#pragma once

#include <algorithm>
#include <vector>

#include "policies/cached_first.h"

namespace prefixsim {

// Count-Min sketch with 4-bit saturating counters (kept one per byte) and
// periodic halving ("reset" in the paper).
class CountMinSketch {
 public:
  void reset(int64_t capacity, int64_t sample) {
    uint64_t w = 64;
    while (w < static_cast<uint64_t>(capacity)) w <<= 1;
    width_mask_ = w - 1;
    counters_.assign(w * kRows, 0);
    window_ = std::max<int64_t>(sample * capacity, 16);
    added_ = 0;
  }
  void add(const BlockHash& h) {
    for (uint32_t r = 0; r < kRows; ++r) {
      uint8_t& c = counters_[r * (width_mask_ + 1) + index(h, r)];
      if (c < 15) ++c;
    }
    if (++added_ >= window_) {
      for (uint8_t& c : counters_) c = static_cast<uint8_t>(c >> 1);
      added_ = 0;
    }
  }
  uint32_t estimate(const BlockHash& h) const {
    uint32_t m = 15;
    for (uint32_t r = 0; r < kRows; ++r)
      m = std::min<uint32_t>(m, counters_[r * (width_mask_ + 1) + index(h, r)]);
    return m;
  }
  size_t bytes() const { return counters_.capacity(); }

 private:
  static constexpr uint32_t kRows = 4;
  uint64_t index(const BlockHash& h, uint32_t r) const {
    static constexpr uint64_t kSeeds[kRows] = {0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL,
                                               0xd6e8feb86659fd93ULL};
    uint64_t x = (h.lo ^ (h.hi + kSeeds[r])) * kSeeds[(r + 1) % kRows];
    x ^= x >> 29;
    return x & width_mask_;
  }
  std::vector<uint8_t> counters_;
  uint64_t width_mask_ = 0;
  int64_t window_ = 16;
  int64_t added_ = 0;
};

class TinyLfuPolicy final : public CachedFirstPolicy {
 public:
  explicit TinyLfuPolicy(int64_t sample) : sample_(sample) {}
  std::string name() const override { return "tinylfu"; }
  bool admitted(BlockId b) const { return admitted_[b] != 0; }
  uint32_t estimate(const BlockHash& h) const { return sketch_.estimate(h); }

 protected:
  void init(int32_t num_blocks) override {
    lru_.reset(num_blocks);
    probation_.reset(num_blocks);
    admitted_.assign(static_cast<size_t>(num_blocks), 0);
    sketch_.reset(capacity(), sample_);
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    admitted_[b] = 0;
    sketch_.add(info.hash);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) (admitted_[b] ? lru_ : probation_).unlink(b);
    sketch_.add(pool().hash_of(b));
  }
  void on_release(BlockId b) override {
    if (!admitted_[b]) {
      const BlockId victim = lru_.front();
      admitted_[b] = victim == kNoBlock ||
                     sketch_.estimate(pool().hash_of(b)) > sketch_.estimate(pool().hash_of(victim));
    }
    (admitted_[b] ? lru_ : probation_).push_back(b);
  }
  BlockId evict() override { return probation_.empty() ? lru_.pop_front() : probation_.pop_front(); }
  void on_gone(BlockId b, const BlockHash&) override { admitted_[b] = 0; }
  size_t policy_bytes() const override {
    return lru_.bytes() + probation_.bytes() + admitted_.capacity() + sketch_.bytes();
  }

 private:
  int64_t sample_;
  IntrusiveList lru_;        // admitted free blocks, by release time
  IntrusiveList probation_;  // refused free blocks: evicted first
  std::vector<uint8_t> admitted_;
  CountMinSketch sketch_;
};

}  // namespace prefixsim
