// tinylfu: W-TinyLFU, an LRU cache behind the TinyLFU admission filter
// (Einziger, Friedman, Manes, "TinyLFU: A Highly Efficient Cache Admission
// Policy", ACM TOS 2017, section 4.3 and Caffeine's design). Every access of
// a block hash is counted in a Count-Min sketch (4 rows of saturating 4-bit
// counters) whose counters are halved every W accesses (W = sample x cache
// size, default 10): recent frequency in a few bits per block. New content
// enters a small LRU window (window=0.01 of the cache); a block leaving the
// window is a candidate for the main LRU, admitted only if its estimate
// beats that of main's own victim, which is then evicted instead. Without
// the window, new content could never beat a tie and would always go first.
//
// Adapted to a paged KV cache: the window's size counts its blocks in use
// and the blocks being filled now; only free blocks are candidates or
// victims, in release order. Never-used blocks are still reused first.
#pragma once

#include <algorithm>
#include <bit>
#include <vector>

#include "policies/cached_first.h"
#include "sim/base/mix.h"

namespace prefixsim {

// Count-Min sketch with 4-bit saturating counters (kept one per byte) and
// periodic halving ("reset" in the paper). Blocked, as Caffeine's
// FrequencySketch: a key's four counters, one per row, lie in one 64-byte
// block chosen by its hash (16 counters of each row per block), so an add or
// an estimate touches one cache line instead of four.
class CountMinSketch {
 public:
  void reset(int64_t capacity, int64_t sample) {
    uint64_t w = 64;  // counters per row
    while (w < static_cast<uint64_t>(capacity)) w <<= 1;
    blocks_.assign(w / kPerRow, Block{});
    block_mask_ = w / kPerRow - 1;
    window_ = std::max<int64_t>(sample * capacity, 16);
    added_ = 0;
  }
  void add(const BlockHash& h) {
    const uint64_t x = mix(h);
    Block& blk = blocks_[block_of(x)];
    for (uint32_t r = 0; r < kRows; ++r) {
      uint8_t& c = blk.c[slot(x, r)];
      if (c < 15) ++c;
    }
    if (++added_ >= window_) {
      for (Block& bl : blocks_)
        for (uint8_t& c : bl.c) c = static_cast<uint8_t>(c >> 1);
      added_ = 0;
    }
  }
  uint32_t estimate(const BlockHash& h) const {
    const uint64_t x = mix(h);
    const Block& blk = blocks_[block_of(x)];
    uint32_t m = 15;
    for (uint32_t r = 0; r < kRows; ++r) m = std::min<uint32_t>(m, blk.c[slot(x, r)]);
    return m;
  }
  size_t bytes() const { return blocks_.capacity() * sizeof(Block); }

 private:
  static constexpr uint32_t kRows = 4;
  static constexpr uint32_t kPerRow = 16;  // counters of one row in a block
  struct alignas(64) Block {
    uint8_t c[kRows * kPerRow] = {};
  };
  // Both halves, through mix64: every output bit depends on every input bit.
  static uint64_t mix(const BlockHash& h) { return mix64(h.lo ^ std::rotl(h.hi, 32)); }
  // The block from the high half of the mixed hash, each row's counter from
  // its own 4 bits of the low half.
  size_t block_of(uint64_t x) const { return static_cast<size_t>((x >> 32) & block_mask_); }
  static uint32_t slot(uint64_t x, uint32_t r) { return r * kPerRow + static_cast<uint32_t>((x >> (4 * r)) & 15); }

  std::vector<Block> blocks_;
  uint64_t block_mask_ = 0;
  int64_t window_ = 16;
  int64_t added_ = 0;
};

class TinyLfuPolicy final : public CachedFirstPolicy {
 public:
  TinyLfuPolicy(int64_t sample, double window) : sample_(sample), window_(window) {}
  std::string name() const override { return "tinylfu"; }
  bool in_main(BlockId b) const { return main_[b] != 0; }
  uint32_t estimate(const BlockHash& h) const { return sketch_.estimate(h); }

 protected:
  void init(int32_t num_blocks) override {
    window_free_.reset(num_blocks);
    main_free_.reset(num_blocks);
    main_.assign(static_cast<size_t>(num_blocks), 0);
    sketch_.reset(capacity(), sample_);
    window_size_ = 0;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    main_[b] = 0;
    ++window_size_;
    sketch_.add(info.hash);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) (main_[b] ? main_free_ : window_free_).unlink(b);
    sketch_.add(pool().hash_of(b));
  }
  void on_release(BlockId b) override { (main_[b] ? main_free_ : window_free_).push_back(b); }
  BlockId evict() override {
    for (;;) {
      const bool window_full = static_cast<double>(window_size_ + num_pending()) > window_ * capacity();
      if (window_free_.empty() || (!window_full && !main_free_.empty())) return main_free_.pop_front();
      const BlockId candidate = window_free_.pop_front();
      --window_size_;
      const BlockId victim = main_free_.front();
      if (victim == kNoBlock) {  // nothing in main to compare with: it moves in
        main_[candidate] = 1;
        main_free_.push_back(candidate);
        continue;
      }
      if (sketch_.estimate(pool().hash_of(candidate)) > sketch_.estimate(pool().hash_of(victim))) {
        main_[candidate] = 1;  // admitted: main's victim goes instead
        main_free_.push_back(candidate);
        return main_free_.pop_front();
      }
      return candidate;
    }
  }
  void on_gone(BlockId b, const BlockHash&, uint32_t) override { main_[b] = 0; }
  size_t policy_bytes() const override {
    return window_free_.bytes() + main_free_.bytes() + main_.capacity() + sketch_.bytes();
  }

 private:
  int64_t sample_;
  double window_;
  IntrusiveList window_free_;  // free blocks of the window, by release time
  IntrusiveList main_free_;    // free admitted blocks, by release time
  std::vector<uint8_t> main_;  // 1: admitted to main
  CountMinSketch sketch_;
  int64_t window_size_ = 0;    // cached blocks in the window, in use or free
};

}  // namespace prefixsim
