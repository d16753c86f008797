// tinylfu: W-TinyLFU (Einziger, Friedman, Manes, "TinyLFU: A Highly
// Efficient Cache Admission Policy", ACM TOS 2017, section 4.3), laid out as
// Caffeine lays it out (BoundedLocalCache: evictFromWindow, evictFromMain,
// admit; FrequencySketch). Three segments of cached blocks:
//   window     LRU, new content enters here (0.01 of the cache at first;
//              moved by the hill climber, or fixed by window=F)
//   probation  main's LRU segment for content that left the window
//   protected  main's LRU segment (0.8 of main) for content hit in probation;
//              its overflow is demoted to probation's MRU end
// Every access of a block hash is counted in a Count-Min sketch (4 rows of
// saturating 4-bit counters) halved every sample x cache-size additions
// (sample=10). When new content needs a block and the window is full, the
// window's LRU block is the candidate and probation's LRU block (protected's
// when probation has none free) the victim: the candidate is admitted to
// probation, and the victim evicted, only if the sketch estimates it strictly
// more frequent; otherwise the candidate is evicted. A hit in probation
// promotes to protected. So one-off content passes through the window
// and leaves without displacing main.
//
// Parameters, ours | Caffeine | paper (libCacheSim's WTinyLFU follows Caffeine):
//   window       adaptive from 0.01 (window=F: fixed at F; adaptive=1
//                with window=F: adaptive from F) | adaptive from 0.01 |
//                fixed 0.01
//   climber      Caffeine's, as in BoundedLocalCache (climb,
//                determineAdjustment, increaseWindow, decreaseWindow; the
//                constants HILL_CLIMBER_RESTART_THRESHOLD 0.05,
//                HILL_CLIMBER_STEP_PERCENT 0.0625, HILL_CLIMBER_STEP_DECAY_RATE
//                0.98, QUEUE_TRANSFER_THRESHOLD 1000, first step -0.0625 x
//                maximum): samples of sample x capacity accesses, the
//                window kept >= 1 and protected >= 0 | the same | none
//   protected    0.8 of main | 0.8 | 0.8 (SLRU, as Caffeine)
//   sample       10 x cache size | 10 x maximum size | W = 10 x C
//   sketch       4 rows, 4-bit counters, 4 x capacity counters a row |
//                same layout (16 counters per 64-bit word, 1 word per
//                capacity) | Count-Min with 4-bit counters
//   doorkeeper   none | none | optional Bloom filter (not used here)
//   admission    estimate(candidate) > estimate(victim) | same, plus a
//                random 1/128 admission of candidates >= 6 against hash
//                flooding (not done here: the simulator is deterministic)
// The window size is capacity - floor((1 - window) x capacity), protected's
// floor(0.8 x (capacity - window)), as Caffeine computes them; the climber
// moves blocks of protected's maximum to the window's and back.
//
// Adapted to a paged KV cache: only free (ref count 0) blocks can be
// candidates or victims; the segments keep their free blocks in release
// order, and a block in use is counted in its segment but cannot move until
// it is released (a promotion overflow or a window overflow that finds no
// free block waits for the next release). Blocks handed out and not yet
// cached ("pending") count in the window they will join, so the window is
// full when window + pending > its size. Never-used blocks are still reused
// first (CachedFirstPolicy), so evictions, and the candidate/victim duel,
// start only when the pool is full; until then window overflow moves to
// probation as in Caffeine's fill phase. The test reference
// (test/policies/reference_policies.h) runs the same rules on objects.
//
// On requests: a request's blocks are handed out together and
// pinned until it ends, so once the window's free blocks are spent its
// remaining blocks take main's victims undueled (Caffeine would evict the
// candidates, but they are the request's own, pinned), and the window
// holds the whole request when it ends. That overflow is dueled on release,
// once the pool is full, like any other; a loser (candidate, or main's
// victim) is "rejected": Caffeine would have evicted it, here it stays
// findable (a hit brings it back into the window as new content) and its
// block is the first reused, before any new duel. Before, the overflow
// went into probation undueled, so each one-off request larger than the
// window flushed main: on a trace of a 32-block system prompt every
// 788 blocks with one-off 188-block prompts between (513 blocks), the prompt got
// 0 of 7,936 hits from its third occurrence on, on requests, and 7,936
// block by block; now 7,936 both ways. Pinning still binds where a request
// needs more blocks than the window and the rejected hold: main's victim
// goes undueled, as Caffeine's evictFromMain does when it has no candidate
// (test_policy_request_form.cpp works one such case by hand). The order of
// duels and sketch additions within one request differs from block by
// block; with exact counts the evictions are the same wherever pinning
// never binds (the request-vs-block differential test).
//
// Layout, for speed (the sketch, 4 MB at 3M tokens, and the victims' lines
// were most of its time): the three segments' free lists are threaded
// through one node array that also holds each block's sketch key (one line
// per block for a duel or a move, no pool hash read); sketch additions wait
// in a short FIFO with their line prefetched and are applied, in order,
// before any estimate, so the estimates, and every decision, are those of
// adding at once.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "policies/cached_first.h"
#include "sim/base/mix.h"

namespace prefixsim {

// Count-Min sketch with 4-bit saturating counters (kept one per byte) and
// periodic halving ("reset" in the paper). Blocked, as Caffeine's
// FrequencySketch: a key's four counters, one per row, lie in one 64-byte
// block chosen by its hash (16 counters of each row per block), so an add or
// an estimate touches one cache line instead of four. Each row has at least
// 4 x capacity counters: Caffeine's table is one 64-bit word (16 counters)
// per cached entry, split over its 4 rows.
class CountMinSketch {
 public:
  void reset(int64_t capacity, int64_t sample) {
    uint64_t w = 64;  // counters per row
    while (w < 4 * static_cast<uint64_t>(std::max<int64_t>(capacity, 1))) w <<= 1;
    blocks_.assign(w / kPerRow, Block{});
    block_mask_ = w / kPerRow - 1;
    window_ = std::max<int64_t>(sample * capacity, 16);
    added_ = 0;
  }
  void add(const BlockHash& h) { add_mixed(mix(h)); }
  uint32_t estimate(const BlockHash& h) const { return estimate_mixed(mix(h)); }
  // The same, given mix(h): a caller that knows a key's counters ahead of
  // time fetches their line first (prefetch).
  void add_mixed(uint64_t x) {
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
  uint32_t estimate_mixed(uint64_t x) const {
    const Block& blk = blocks_[block_of(x)];
    uint32_t m = 15;
    for (uint32_t r = 0; r < kRows; ++r) m = std::min<uint32_t>(m, blk.c[slot(x, r)]);
    return m;
  }
  // estimate_mixed(x) as it will be once the n adds pending(0..n-1) are
  // made, without making them; only while they cannot halve the counters
  // (!halves_within(n)), as then their order does not matter.
  template <class Pending>
  uint32_t estimate_after(uint64_t x, uint32_t n, const Pending& pending) const {
    const size_t bx = block_of(x);
    const Block& blk = blocks_[bx];
    uint32_t c[kRows];
    for (uint32_t r = 0; r < kRows; ++r) c[r] = blk.c[slot(x, r)];
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t y = pending(i);
      if (block_of(y) != bx) continue;
      for (uint32_t r = 0; r < kRows; ++r) c[r] += slot(y, r) == slot(x, r) ? 1 : 0;
    }
    uint32_t m = 15;
    for (uint32_t r = 0; r < kRows; ++r) m = std::min(m, c[r]);
    return m;
  }
  bool halves_within(uint32_t n) const { return added_ + n >= window_; }
  // Hints the CPU to fetch the line holding x's four counters.
  void prefetch(uint64_t x) const { __builtin_prefetch(&blocks_[block_of(x)], 1); }
  size_t bytes() const { return blocks_.capacity() * sizeof(Block); }
  // Both halves, through mix64: every output bit depends on every input bit.
  static uint64_t mix(const BlockHash& h) { return mix64(h.lo ^ std::rotl(h.hi, 32)); }

 private:
  static constexpr uint32_t kRows = 4;
  static constexpr uint32_t kPerRow = 16;  // counters of one row in a block
  struct alignas(64) Block {
    uint8_t c[kRows * kPerRow] = {};
  };
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
  // kRejected: lost an admission duel. Caffeine evicts such an entry at
  // once; a paged cache keeps it findable until its block is reused (lazy
  // eviction), and reuses these blocks first, in the order they lost.
  enum Segment : uint8_t { kWindow = 0, kProbation = 1, kProtected = 2, kRejected = 3 };
  // adaptive: the window starts at `window` and the hill climber moves it.
  TinyLfuPolicy(int64_t sample, double window, bool adaptive = false)
      : sample_(sample), window_(window), adaptive_(adaptive) {}
  std::string name() const override { return "tinylfu"; }
  bool in_main(BlockId b) const { return seg_[b] != kWindow; }
  Segment segment(BlockId b) const { return static_cast<Segment>(seg_[b]); }
  uint32_t estimate(const BlockHash& h) const {
    apply_counts();
    return sketch_.estimate(h);
  }
  int64_t window_max() const { return window_max_; }
  int64_t protected_max() const { return protected_max_; }
  int64_t sample() const { return sample_; }
  bool adaptive() const { return adaptive_; }
  // The climber's state: samples completed, the step it will take next.
  int64_t climbs() const { return climbs_; }
  double step() const { return step_; }

 protected:
  void init(int32_t num_blocks) override {
    node_.assign(static_cast<size_t>(num_blocks) + kSegments, Node{});
    sentinel_ = num_blocks;
    for (int32_t s = 0; s < kSegments; ++s) {
      node_[sentinel_ + s].prev = node_[sentinel_ + s].next = sentinel_ + s;
      free_size_[s] = 0;
    }
    seg_.assign(static_cast<size_t>(num_blocks), kWindow);
    count_[0] = count_[1] = count_[2] = count_[3] = 0;
    filled_ = false;
    const int64_t cap = capacity();
    window_max_ = cap - static_cast<int64_t>((1.0 - window_) * static_cast<double>(cap));
    protected_max_ = static_cast<int64_t>(0.8 * static_cast<double>(cap - window_max_));
    sketch_.reset(cap, sample_);
    deferred_head_ = deferred_size_ = 0;
    sample_size_ = sample_ * cap;  // Caffeine: FrequencySketch.sampleSize = 10 x maximum
    hits_in_sample_ = misses_in_sample_ = adjustment_ = climbs_ = 0;
    previous_hit_rate_ = 0;
    step_ = -kStepPercent * static_cast<double>(cap);
    climbing_ = false;
  }
  void on_insert(BlockId b, const CachedBlockInfo& info) override {
    seg_[b] = kWindow;
    ++count_[kWindow];
    node_[b].key = CountMinSketch::mix(info.hash);
    count(node_[b].key);
    // Only the window grew. Block by block it overflows only while the pool
    // fills (afterwards evict() made room in it for this block); a request
    // that allocated more blocks than the window had free overflows it.
    if (count_[kWindow] > window_max_) rebalance();
    if (adaptive_) climb(false);
  }
  void on_access(BlockId b, bool was_free) override {
    if (was_free) unlink(b);
    count(node_[b].key);
    if (seg_[b] == kRejected) {  // evicted in Caffeine's terms: back as new content
      --count_[kRejected];
      seg_[b] = kWindow;
      if (++count_[kWindow] > window_max_) rebalance();
    } else if (seg_[b] == kProbation) {  // a second use in main: promote
      --count_[kProbation];
      ++count_[kProtected];
      seg_[b] = kProtected;
      rebalance();
    }
    if (adaptive_) climb(true);
  }
  void on_release(BlockId b) override {
    push_back(seg_[b], b);
    // An overflow that found no free block waited for this one.
    if (count_[kProtected] > protected_max_ || count_[kWindow] > window_max_) rebalance();
  }
  BlockId evict() override {
    filled_ = true;
    BlockId out;
    if (!empty(kRejected)) {  // already lost its duel: no new decision
      out = take(front(kRejected));
    } else if (count_[kWindow] + num_pending() > window_max_ && !empty(kWindow)) {
      duel(front(kWindow));
      out = take(front(kRejected));
    } else {
      // Pinning binds (the window's blocks are all in use, its candidates
      // among them) or the window has room: main's victim, without a duel.
      const BlockId victim = main_victim();
      out = victim != kNoBlock ? take(victim) : take(front(kWindow));
    }
    // Prefetch only (no effect on any result): main's victim, whose counters
    // the next duel reads, the node behind it, and what the pool touches
    // to evict them (prefetch_victims). Main's LRU end changes after an
    // admission or an eviction without a duel, and its blocks, old, are
    // then a miss each; the window's candidates were cached lately, hot.
    if (const BlockId f = main_victim(); f != kNoBlock) {
      sketch_.prefetch(node_[f].key);
      const int32_t n = node_[f].next;
      if (n < sentinel_) __builtin_prefetch(&node_[n]);
      prefetch_victims(n < sentinel_ ? n : kNoBlock, f);
    }
    return out;
  }
  size_t policy_bytes() const override { return node_.capacity() * sizeof(Node) + seg_.capacity() + sketch_.bytes(); }

 private:
  // Caffeine's hill climber (BoundedLocalCache.climb: determineAdjustment,
  // increaseWindow, decreaseWindow), run after every block access as
  // Caffeine runs it after each maintenance. A hit or a miss is counted in
  // the sample; while the cache holds under half its capacity (Caffeine's
  // sketch not yet initialized) the sample restarts at every access. After
  // sample x capacity accesses: if the sample's hit rate is not below the
  // previous one, the window moves by the step in the same direction, else
  // in the other; the next step is 0.0625 x capacity (direction kept) when
  // the hit rate changed by 0.05 or more, else 0.98 x this one. The window
  // grows by taking from protected's maximum (free blocks move from main's
  // LRU end into the window, probation's first) and shrinks to 1 at least
  // (free blocks move from the window's LRU end to probation); what blocks
  // in use keep from moving is carried to the next access.
  void climb(bool hit) {
    ++(hit ? hits_in_sample_ : misses_in_sample_);
    if (!climbing_) {
      if (count_[kWindow] + count_[kProbation] + count_[kProtected] < capacity() / 2) {
        hits_in_sample_ = misses_in_sample_ = 0;
        previous_hit_rate_ = 0;
        return;
      }
      climbing_ = true;
    }
    if (hits_in_sample_ + misses_in_sample_ >= sample_size_) {
      const double rate = static_cast<double>(hits_in_sample_) / static_cast<double>(hits_in_sample_ + misses_in_sample_);
      const double change = rate - previous_hit_rate_;
      const double amount = change >= 0 ? step_ : -step_;
      step_ = std::abs(change) >= kRestartThreshold
                  ? kStepPercent * static_cast<double>(capacity()) * (amount >= 0 ? 1 : -1)
                  : kStepDecayRate * amount;
      previous_hit_rate_ = rate;
      adjustment_ = static_cast<int64_t>(amount);
      hits_in_sample_ = misses_in_sample_ = 0;
      ++climbs_;
    }
    if (adjustment_ > 0)
      grow_window();
    else if (adjustment_ < 0)
      shrink_window();
  }
  void grow_window() {
    if (protected_max_ == 0) return;
    int64_t quota = std::min(adjustment_, protected_max_);
    protected_max_ -= quota;
    window_max_ += quota;
    while (count_[kProtected] > protected_max_ && !empty(kProtected)) move(front(kProtected), kProbation);
    for (int i = 0; i < kTransfers && quota > 0; ++i) {
      const BlockId b = !empty(kProbation) ? front(kProbation) : front(kProtected);
      if (b == kNoBlock) break;
      move(b, kWindow);
      --quota;
    }
    protected_max_ += quota;
    window_max_ -= quota;
    adjustment_ = quota;
  }
  void shrink_window() {
    if (window_max_ <= 1) return;
    int64_t quota = std::min(-adjustment_, window_max_ - 1);
    protected_max_ += quota;
    window_max_ -= quota;
    for (int i = 0; i < kTransfers && quota > 0 && !empty(kWindow); ++i) {
      move(front(kWindow), kProbation);
      --quota;
    }
    protected_max_ -= quota;
    window_max_ += quota;
    adjustment_ = -quota;
  }

  // Main's eviction order: probation's LRU, then protected's.
  BlockId main_victim() const { return !empty(kProbation) ? front(kProbation) : front(kProtected); }
  // Removes free block b from its segment; it is evicted.
  BlockId take(BlockId b) {
    unlink(b);
    --count_[seg_[b]];
    return b;
  }
  // Moves free block b to the MRU end of segment s.
  void move(BlockId b, Segment s) {
    unlink(b);
    --count_[seg_[b]];
    seg_[b] = s;
    ++count_[s];
    push_back(s, b);
  }
  // The admission duel (Caffeine's evictFromMain/admit): window candidate
  // against main's victim; the one the sketch does not find strictly more
  // frequent is rejected, the candidate, if admitted, joins probation.
  void duel(BlockId candidate) {
    const BlockId victim = main_victim();
    if (victim != kNoBlock && estimate_key(node_[candidate].key) > estimate_key(node_[victim].key)) {
      move(candidate, kProbation);
      move(victim, kRejected);
    } else {
      move(candidate, kRejected);
    }
  }
  // Caffeine's maintenance: protected's overflow is demoted to probation;
  // the window's overflow goes to probation while the pool fills
  // (Caffeine's cache below its maximum) and duels once it is full. Block
  // by block, evict() makes room in the window before each new block
  // joins it, so the window overflows only while the pool fills. A request
  // allocates all its blocks at once, and they are pinned: when the
  // window's free blocks are spent, evict() must take main's victim, the
  // window holds the whole request, and on release its overflow is dueled
  // here. Moving that overflow into probation undueled (as before) let
  // every one-off request of more blocks than the window flush main, a
  // recurring prefix with it.
  void rebalance() {
    while (count_[kProtected] > protected_max_ && !empty(kProtected)) move(front(kProtected), kProbation);
    while (count_[kWindow] > window_max_ && !empty(kWindow)) {
      if (filled_)
        duel(front(kWindow));
      else
        move(front(kWindow), kProbation);
    }
  }
  // The free blocks of each segment, by release time: doubly linked lists
  // threaded through node_ (segment s's sentinel is node_[sentinel_ + s]).
  bool empty(int32_t s) const { return free_size_[s] == 0; }
  BlockId front(int32_t s) const { return empty(s) ? kNoBlock : node_[sentinel_ + s].next; }
  void push_back(int32_t s, BlockId b) {
    Node& t = node_[sentinel_ + s];
    node_[b].prev = t.prev;
    node_[b].next = sentinel_ + s;
    node_[t.prev].next = b;
    t.prev = b;
    ++free_size_[s];
  }
  void unlink(BlockId b) {
    Node& x = node_[b];
    node_[x.prev].next = x.next;
    node_[x.next].prev = x.prev;
    x.prev = x.next = -1;
    --free_size_[seg_[b]];
  }

  // Counts an access of the hash whose sketch key is x. The add waits in a
  // short FIFO, its counters' line fetched as it enters, and is applied
  // kDeferred adds later or before the next estimate, whichever comes
  // first: every estimate sees the same counts, in the same order of adds
  // and halvings, as adding at once would give, but an add no longer stalls
  // on its line (the sketch is 4 MB at 3M tokens: most adds were a miss).
  void count(uint64_t x) {
    sketch_.prefetch(x);
    if (deferred_size_ == kDeferred) {
      sketch_.add_mixed(deferred_[deferred_head_]);
      deferred_[deferred_head_] = x;
      deferred_head_ = (deferred_head_ + 1) % kDeferred;
    } else {
      deferred_[(deferred_head_ + deferred_size_++) % kDeferred] = x;
    }
  }
  // The estimate of sketch key x once the waiting adds are made. They are
  // counted, not made (a duel on release or insert comes right after the
  // adds of the blocks just cached, whose lines are still on their way),
  // unless one of them would halve the counters.
  uint32_t estimate_key(uint64_t x) const {
    if (sketch_.halves_within(deferred_size_)) apply_counts();
    return sketch_.estimate_after(x, deferred_size_,
                                  [this](uint32_t i) { return deferred_[(deferred_head_ + i) % kDeferred]; });
  }
  // Applies the waiting adds, oldest first. Const: it changes when the
  // counts are written, not what an estimate returns.
  void apply_counts() const {
    for (; deferred_size_ > 0; --deferred_size_) {
      sketch_.add_mixed(deferred_[deferred_head_]);
      deferred_head_ = (deferred_head_ + 1) % kDeferred;
    }
  }

  int64_t sample_;
  double window_;
  bool adaptive_;
  // The hill climber (Caffeine's constants: HILL_CLIMBER_RESTART_THRESHOLD,
  // HILL_CLIMBER_STEP_PERCENT, HILL_CLIMBER_STEP_DECAY_RATE,
  // QUEUE_TRANSFER_THRESHOLD).
  static constexpr double kRestartThreshold = 0.05, kStepPercent = 0.0625, kStepDecayRate = 0.98;
  static constexpr int kTransfers = 1000;
  int64_t sample_size_ = 0;
  int64_t hits_in_sample_ = 0, misses_in_sample_ = 0;
  double previous_hit_rate_ = 0, step_ = 0;
  int64_t adjustment_ = 0;  // window blocks still to move (+ grow, - shrink)
  int64_t climbs_ = 0;
  bool climbing_ = false;  // the cache has held half its capacity
  int64_t window_max_ = 0;
  int64_t protected_max_ = 0;
  // Per block, side by side, so that a duel's read of a block's sketch key
  // and the unlink that follows fetch one line: its links in its segment's
  // free list and CountMinSketch::mix of its hash (set when it is cached,
  // so a hit or a duel reads no hash from the pool). One array for the
  // three lists: a block moving between segments stays on its line.
  struct Node {
    int32_t prev = -1, next = -1;  // -1: in no free list (in use)
    uint64_t key = 0;
  };
  std::vector<Node> node_;
  int32_t sentinel_ = 0;       // node_[sentinel_ + s]: segment s's list head
  static constexpr int32_t kSegments = 4;
  int32_t free_size_[kSegments] = {};  // free blocks of each segment
  int64_t count_[kSegments] = {};      // cached blocks of each segment, in use or free
  bool filled_ = false;                // evict() has run: the pool is full
  std::vector<uint8_t> seg_;   // Segment of each cached block
  // Mutable for apply_counts(): the sketch and the adds waiting for it.
  static constexpr uint32_t kDeferred = 16;  // adds in flight: enough to cover a miss
  mutable CountMinSketch sketch_;
  mutable uint64_t deferred_[kDeferred] = {};  // sketch keys, oldest at deferred_head_
  mutable uint32_t deferred_head_ = 0, deferred_size_ = 0;
};

}  // namespace prefixsim
