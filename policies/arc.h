// arc: Adaptive Replacement Cache (Megiddo & Modha, "ARC: A Self-Tuning, Low
// Overhead Replacement Cache", FAST 2003). Cached blocks are in T1 (seen
// once since caching) or T2 (hit at least once); evicted hashes are
// remembered in ghost lists B1 / B2. A miss on a B1 ghost means T1 was too
// small (recency pays): the target size p of T1 grows; a miss on a B2 ghost
// means frequency pays: p shrinks. Eviction takes T1's LRU free block while
// T1 is larger than p, else T2's.
//
// Adapted to a paged KV cache: T1/T2 sizes count every cached block of the
// class (in use or free) plus the blocks being filled right now (they will
// land in T1); only free blocks can be evicted, in the order they were
// released; each ghost list holds at most c hashes (c = usable blocks).
//
// Parameters: none (paper and libCacheSim ARC alike); p starts at 0. Also
// unlike the paper (Figure 4): p adapts when the block re-enters (after the
// eviction it caused), where the paper adapts before REPLACE, and the ghost
// bounds are checked after each eviction. Within 1.5 points of the paper's
// algorithm on single-block streams (test_policy_differential.cpp).
#pragma once

#include <algorithm>
#include <vector>

#include "policies/cached_first.h"
#include "policies/ghost_list.h"

namespace prefixsim {

class ArcPolicy final : public CachedFirstPolicy {
 public:
  std::string name() const override { return "arc"; }
  double target_t1() const { return p_; }
  int64_t t1_size() const { return t1_size_; }
  int64_t t2_size() const { return t2_size_; }
  bool in_t2(BlockId b) const { return t2_[b] != 0; }
  const GhostList& b1() const { return b1_; }
  const GhostList& b2() const { return b2_; }

 protected:
  void init(int32_t num_blocks) override {
    t1_free_.reset(num_blocks);
    t2_free_.reset(num_blocks);
    t2_.assign(static_cast<size_t>(num_blocks), 0);
    b1_.reset(capacity(), pool().num_keys());
    b2_.reset(capacity(), pool().num_keys());
    t1_size_ = t2_size_ = 0;
    p_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    const double b1 = static_cast<double>(b1_.size()), b2 = static_cast<double>(b2_.size());
    if (b1_.erase(info.hash, info.key)) {
      p_ = std::min(p_ + std::max(1.0, b2 / b1), static_cast<double>(capacity()));
      t2_[b] = 1;
    } else if (b2_.erase(info.hash, info.key)) {
      p_ = std::max(p_ - std::max(1.0, b1 / b2), 0.0);
      t2_[b] = 1;
    } else {
      t2_[b] = 0;
    }
    ++(t2_[b] ? t2_size_ : t1_size_);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) (t2_[b] ? t2_free_ : t1_free_).unlink(b);
    if (!t2_[b]) {
      t2_[b] = 1;
      --t1_size_;
      ++t2_size_;
    }
  }
  void on_release(BlockId b) override { (t2_[b] ? t2_free_ : t1_free_).push_back(b); }
  BlockId evict() override {
    const bool from_t1 =
        !t1_free_.empty() && (t2_free_.empty() || static_cast<double>(t1_size_ + num_pending()) > p_);
    const BlockId b = from_t1 ? t1_free_.pop_front() : t2_free_.pop_front();
    --(from_t1 ? t1_size_ : t2_size_);
    return b;
  }
  void on_gone(BlockId b, const BlockHash& hash, uint32_t key) override {
    if (t2_[b]) {
      b2_.push(hash, key);
    } else {
      b1_.push(hash, key);
    }
    t2_[b] = 0;
    // ARC's bounds: |T1| + |B1| <= c and |T1|+|T2|+|B1|+|B2| <= 2c.
    const int64_t c = capacity();
    while (b1_.size() > 0 && t1_size_ + b1_.size() > c) b1_.pop_oldest();
    while (b2_.size() > 0 && t1_size_ + t2_size_ + b1_.size() + b2_.size() > 2 * c) b2_.pop_oldest();
  }
  // |T1| + |T2| + |B1| + |B2| <= 2c: with the cache full, c ghosts in all.
  int64_t ghost_capacity() const override { return capacity(); }
  size_t policy_bytes() const override {
    return t1_free_.bytes() + t2_free_.bytes() + t2_.capacity() + b1_.bytes() + b2_.bytes();
  }

 private:
  IntrusiveList t1_free_, t2_free_;  // free blocks of each class, by release time
  std::vector<uint8_t> t2_;          // class of each cached block: 0 = T1, 1 = T2
  GhostList b1_, b2_;
  int64_t t1_size_ = 0, t2_size_ = 0;
  double p_ = 0;  // target size of T1
};

}  // namespace prefixsim
