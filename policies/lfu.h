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
#pragma once

#include <cmath>
#include <vector>

#include "policies/heap_policy.h"

namespace prefixsim {

class LfuPolicy final : public HeapPolicy {
 public:
  explicit LfuPolicy(double half_life) : half_life_(half_life) {}
  std::string name() const override { return "lfu"; }
  double count(BlockId b) const { return count_[b]; }

 protected:
  void init_state(int32_t num_blocks) override {
    count_.assign(static_cast<size_t>(num_blocks), 0.0);
    last_.assign(static_cast<size_t>(num_blocks), 0);
    now_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo&) override {
    count_[b] = 0;
    last_[b] = now_;
    bump(b);
  }
  void on_access(BlockId b, bool was_free) override {
    HeapPolicy::on_access(b, was_free);
    bump(b);
  }
  HeapKey release_key(BlockId b) override {
    const double k = half_life_ > 0 ? std::log2(count_[b]) + static_cast<double>(last_[b]) / half_life_ : count_[b];
    return {k, tick()};
  }
  size_t state_bytes() const override {
    return count_.capacity() * sizeof(double) + last_.capacity() * sizeof(uint64_t);
  }

 private:
  void bump(BlockId b) {
    ++now_;
    if (half_life_ > 0) count_[b] *= std::exp2(-static_cast<double>(now_ - last_[b]) / half_life_);
    count_[b] += 1;
    last_[b] = now_;
  }

  double half_life_;
  std::vector<double> count_;
  std::vector<uint64_t> last_;  // access clock at the last access
  uint64_t now_ = 0;            // one tick per block access
};

}  // namespace prefixsim
