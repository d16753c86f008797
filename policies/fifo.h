// fifo: evict the free block whose content was cached longest ago, whatever
// happened to it since (hits do not refresh it). The classic baseline of
// every caching paper (e.g. Belady, "A study of replacement algorithms for a
// virtual-storage computer", IBM Systems Journal 1966, compares against it).
#pragma once

#include <vector>

#include "policies/heap_policy.h"

namespace prefixsim {

class FifoPolicy final : public HeapPolicy {
 public:
  std::string name() const override { return "fifo"; }

 protected:
  void init_state(int32_t num_blocks) override {
    inserted_.assign(static_cast<size_t>(num_blocks), 0);
    seq_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo&) override { inserted_[b] = ++seq_; }
  HeapKey release_key(BlockId b) override { return {0.0, inserted_[b]}; }
  size_t state_bytes() const override { return inserted_.capacity() * sizeof(uint64_t); }

 private:
  std::vector<uint64_t> inserted_;  // caching order of each block's content
  uint64_t seq_ = 0;
};

}  // namespace prefixsim
