// 2q: the full 2Q algorithm (Johnson & Shasha, "2Q: A Low Overhead High
// Performance Buffer Management Replacement Algorithm", VLDB 1994). New
// content enters A1in, a FIFO; when A1in holds more than Kin blocks its
// oldest goes and its hash is remembered in the ghost list A1out (Kout
// hashes). Content that comes back while its hash is in A1out was reused
// after a while: it enters Am, an LRU list, for good. Hits in A1in do not
// promote (correlated references). Parameters: kin (fraction of the cache,
// default 0.25) and kout (default 0.5), the paper's recommended values.
//
// Adapted to a paged KV cache: A1in's size counts its blocks in use and the
// blocks being filled now; free blocks of each queue leave in release order.
// A1out holds floor(kout x c) + 1 hashes. The new content's hash is looked
// up in A1out after its eviction pushed the victim there (the paper looks
// first), so a ghost about to be dropped is not recognised. Within 4 points
// of the paper's algorithm at 5 blocks, 1 on average, on single-block
// streams (test_policy_differential.cpp).
#pragma once

#include <vector>

#include "policies/cached_first.h"
#include "policies/ghost_list.h"

namespace prefixsim {

class TwoQPolicy final : public CachedFirstPolicy {
 public:
  TwoQPolicy(double kin, double kout) : kin_(kin), kout_(kout) {}
  std::string name() const override { return "2q"; }
  bool in_am(BlockId b) const { return am_[b] != 0; }
  const GhostList& a1out() const { return a1out_; }

 protected:
  void init(int32_t num_blocks) override {
    a1_free_.reset(num_blocks);
    am_free_.reset(num_blocks);
    am_.assign(static_cast<size_t>(num_blocks), 0);
    a1out_.reset(static_cast<int64_t>(kout_ * capacity()) + 1, pool().num_keys());
    a1_size_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    am_[b] = a1out_.erase(info.hash, info.key) ? 1 : 0;
    if (!am_[b]) ++a1_size_;
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) (am_[b] ? am_free_ : a1_free_).unlink(b);
  }
  void on_release(BlockId b) override { (am_[b] ? am_free_ : a1_free_).push_back(b); }
  BlockId evict() override {
    const bool from_a1 = !a1_free_.empty() &&
                         (am_free_.empty() || static_cast<double>(a1_size_ + num_pending()) > kin_ * capacity());
    const BlockId b = from_a1 ? a1_free_.pop_front() : am_free_.pop_front();
    if (from_a1) --a1_size_;
    return b;
  }
  void on_gone(BlockId b, const BlockHash& hash, uint32_t key) override {
    if (!am_[b]) a1out_.push(hash, key);
    am_[b] = 0;
  }
  int64_t ghost_capacity() const override { return a1out_.capacity(); }
  size_t policy_bytes() const override { return a1_free_.bytes() + am_free_.bytes() + am_.capacity() + a1out_.bytes(); }

 private:
  double kin_, kout_;
  IntrusiveList a1_free_, am_free_;
  std::vector<uint8_t> am_;  // 1: in Am, 0: in A1in
  GhostList a1out_;
  int64_t a1_size_ = 0;      // cached blocks in A1in, in use or free
};

}  // namespace prefixsim
