// An exact min-queue of blocks keyed like IndexedHeap, for keys that come
// in sorted runs. A request releases its blocks together, last to first,
// and the policies that need an order usually give them keys sorted along
// the chain: gdsf's L + cost(depth) falls as the depth does, belady's
// (farthest next use, deepest) rises, lfu-da's L + f rises. So the queue
// stores each maximal sorted stretch of pushes as a run, and merges the
// runs with a tournament over each run's head: a push is an append to one
// array, an eviction the next entry of a run plus one replay of the
// tournament (a few thousand nodes, in cache), where a heap over blocks
// would pay a cache miss per level and a calendar queue a scattered write
// per push. (The k-way merge of sorted runs; Knuth, TAOCP vol. 3, 5.4.1.)
//
// Layout:
//   - arena_: every entry pushed, in push order, its key encoded as one
//     unsigned 128-bit number ordered like HeapKey (so every comparison is
//     two integer instructions, no branch on doubles); a run is a stretch
//     [lo, hi) of it, ascending (consumed from lo) or descending (consumed
//     from hi - 1); its direction is set by its second entry;
//   - the open run is the one pushes append to: the arena's tail, never
//     consumed from. A push whose key breaks its order closes it (into the
//     tournament) and opens a new one; top() closes it too, so runs are
//     only read once closed (a request's releases stay one run: its blocks
//     are released together, between two requests' evictions);
//   - win_, key_, leaf_: a winner tree over the closed runs that may
//     still hold entries, one leaf per run holding its head key (the
//     leaves of finished runs hold +infinity), each inner node the leaf
//     with the smallest key below it. Taking a run's head replays one
//     leaf-to-root path whose addresses do not depend on the comparisons,
//     so the loads of every level go out together, one compare a level.
//     (It was a binary heap of runs: a sift-down's loads wait on the
//     previous level's comparison, and its exit branch is unpredictable;
//     the merge was a quarter of gdsf's time.) The entry after each leaf's
//     head is prefetched as the head is taken: runs interleave finely, so
//     by the time a run is consumed again its arena line would have left
//     the cache;
//   - front_: the next evictions, merged out of the runs a batch at a
//     time. Every key left in a run is at or above front_'s last, so the
//     merge only ever appends; a push below it spills front_ back into the
//     arena as one more run. Evicting from a sorted array is what lets the
//     policy fetch its next victims' state early (peek), as the runs
//     themselves interleave too finely to say what comes next.
// Removal is lazy: an entry whose block has left the queue, or was pushed
// again since, is skipped (a per-block stamp tells) when it reaches the
// front or when the arena is compacted, which happens once it holds more
// than twice the live entries plus slack (amortized O(1) per push).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "policies/indexed_heap.h"

namespace prefixsim {

class RunQueue {
 public:
  // reference: every key in one IndexedHeap instead (the order the runs
  // are tested against).
  void reset(int32_t num_blocks, bool reference = false) {
    reference_ = reference;
    ref_heap_.reset(reference ? num_blocks : 0);
    meta_.assign(static_cast<size_t>(num_blocks), Meta{});
    top_block_ = kNoBlock;
    arena_.clear();
    runs_.clear();
    free_runs_.clear();
    leaves_ = 0;
    win_.clear();
    key_.clear();
    leaf_.clear();
    free_leaves_.clear();
    live_leaves_ = 0;
    grow_tree();
    front_.clear();
    front_head_ = 0;
    open_ = kNone;
    size_ = 0;
    slack_ = static_cast<size_t>(num_blocks) / 2 + 64;
  }

  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }
  bool contains(BlockId b) const { return meta_[b].in != 0; }
  // Key of the block the last top() returned.
  const HeapKey& top_key() const { return top_key_; }
  size_t bytes() const {
    return ref_heap_.bytes() + meta_.capacity() * sizeof(Meta) + (arena_.capacity() + front_.capacity()) * sizeof(Entry) +
           runs_.capacity() * sizeof(Run) + free_runs_.capacity() * sizeof(uint32_t) + win_.capacity() * sizeof(uint32_t) +
           key_.capacity() * sizeof(Key) + leaf_.capacity() * sizeof(Leaf) +
           (free_leaves_.capacity() + order_.capacity()) * sizeof(uint32_t);
  }

  void push(BlockId b, HeapKey key) {
    top_block_ = kNoBlock;
    const Key k = encode(key);
    if (front_head_ < front_.size() && k < front_.back().key) spill_front();
    Meta& m = meta_[b];
    ++m.stamp;
    m.in = 1;
    ++size_;
    if (reference_) {
      ref_heap_.push(b, key);
      return;
    }
    if (open_ != kNone) {
      Run& r = runs_[open_];
      const bool up = !(k < arena_.back().key);
      if (r.dir == 0) r.dir = up ? 1 : -1;
      if ((r.dir > 0) != up) close_open();
    }
    if (open_ == kNone) open_run();
    arena_.push_back({k, b, m.stamp});
    ++runs_[open_].hi;
    if (arena_.size() > 2 * static_cast<size_t>(size_) + slack_) compact();
  }

  // Lazy: the entry stays where it is and is skipped when it reaches the
  // front, except the top's own (an eviction), which goes at once.
  void erase(BlockId b) {
    meta_[b].in = 0;
    --size_;
    if (reference_) {
      ref_heap_.erase(b);
    } else if (b == top_block_) {
      top_block_ = kNoBlock;
      ++front_head_;
    }
  }

  // The smallest key's block; the queue must not be empty. Not const: it
  // closes the open run, merges more of the runs into the front and drops
  // dead entries there.
  BlockId top() {
    if (reference_) {
      top_key_ = ref_heap_.key(ref_heap_.top());
      return ref_heap_.top();
    }
    if (open_ != kNone) close_open();
    for (;;) {
      if (front_.size() - front_head_ < kMergeBelow) merge_more();
      if (front_head_ == front_.size()) return kNoBlock;  // empty: a caller's mistake
      const Entry& e = front_[front_head_];
      if (valid(e)) {
        // The next entries are the next evictions: fetch their state.
        if (front_head_ + kLookahead < front_.size()) __builtin_prefetch(&meta_[front_[front_head_ + kLookahead].block]);
        top_key_ = decode(e.key);
        top_block_ = e.block;
        return e.block;
      }
      ++front_head_;
    }
  }
  // The block `ahead` entries past the next one (it may have left the
  // queue since), or kNoBlock: a prefetch hint.
  BlockId peek(size_t ahead) const {
    const size_t i = front_head_ + ahead;
    return i < front_.size() ? front_[i].block : kNoBlock;
  }
  BlockId pop() {
    const BlockId b = top();
    erase(b);
    return b;
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr size_t kLookahead = 8;
  // The front is topped up by kMergeBatch entries once fewer than
  // kMergeBelow are left: more than the farthest peek a policy makes.
  static constexpr size_t kMergeBelow = 32, kMergeBatch = 2048;

  // Keys as one unsigned 128-bit number ordered like HeapKey: the
  // primary's bits made to sort as unsigned integers, then the secondary.
  // Kept as two words (8-byte aligned: an entry is 24 bytes, not 32) and
  // compared as one number.
  __extension__ typedef unsigned __int128 Key128;
  struct Key {
    uint64_t hi, lo;
    Key128 value() const { return (static_cast<Key128>(hi) << 64) | lo; }
    friend bool operator<(const Key& a, const Key& b) { return a.value() < b.value(); }
  };
  static constexpr Key kInfinity = {~uint64_t{0}, ~uint64_t{0}};  // an empty leaf (no HeapKey encodes to it)
  static Key encode(const HeapKey& k) {
    const double p = k.primary == 0 ? 0.0 : k.primary;  // -0 and +0 are one key, as for <
    const uint64_t bits = std::bit_cast<uint64_t>(p);
    return {(bits >> 63) ? ~bits : bits | (uint64_t{1} << 63), k.secondary};
  }
  static HeapKey decode(const Key& k) {
    const uint64_t bits = (k.hi >> 63) ? k.hi & ~(uint64_t{1} << 63) : ~k.hi;
    return {std::bit_cast<double>(bits), k.lo};
  }
  struct Entry {
    Key key;
    BlockId block;
    uint32_t stamp;  // the block's push count when this entry was made
  };
  struct Run {
    uint64_t lo = 0, hi = 0;  // arena_[lo, hi): entries not yet consumed
    int32_t dir = 0;          // 1 ascending, -1 descending, 0 one entry so far
  };
  // A leaf's run and its head entry's block, so taking the head reads no
  // arena line (by then long gone from the cache).
  struct Leaf {
    uint32_t run = kNone;
    BlockId block = kNoBlock;
    uint32_t stamp = 0;
  };
  struct Meta {
    uint32_t stamp = 0;  // pushes so far
    uint32_t in = 0;     // in the queue
  };

  bool valid(const Entry& e) const { return meta_[e.block].in != 0 && meta_[e.block].stamp == e.stamp; }
  static uint64_t head(const Run& r) { return r.dir >= 0 ? r.lo : r.hi - 1; }

  // Moves up to kMergeBatch entries, smallest first, from the runs to the
  // front (dead ones too: checking them here would be a cache miss each).
  void merge_more() {
    if (front_head_ >= kMergeBatch) {  // drop the consumed prefix
      front_.erase(front_.begin(), front_.begin() + static_cast<std::ptrdiff_t>(front_head_));
      front_head_ = 0;
    }
    for (size_t i = 0; i < kMergeBatch && live_leaves_ > 0; ++i) {
      const uint32_t l = win_[1];
      Leaf& leaf = leaf_[l];
      front_.push_back({key_[l], leaf.block, leaf.stamp});
      Run& r = runs_[leaf.run];
      if (r.dir >= 0)
        ++r.lo;
      else
        --r.hi;
      if (r.lo == r.hi) {
        free_runs_.push_back(leaf.run);
        clear_leaf(l);
      } else {
        set_leaf(l, arena_[head(r)]);
        // The run's next head, read when this one is taken.
        if (r.hi - r.lo >= 2) __builtin_prefetch(arena_.data() + (r.dir >= 0 ? r.lo + 1 : r.hi - 2));
      }
      replay(l);
    }
  }
  // A key below the front's last is pushed: the front's unconsumed entries
  // go back to the arena as a closed ascending run.
  void spill_front() {
    if (open_ != kNone) close_open();
    open_run();
    Run& r = runs_[open_];
    for (size_t i = front_head_; i < front_.size(); ++i)
      if (valid(front_[i])) arena_.push_back(front_[i]);
    r.hi = arena_.size();
    r.dir = 1;
    front_.clear();
    front_head_ = 0;
    if (r.lo == r.hi) {
      free_runs_.push_back(open_);
      open_ = kNone;
    } else {
      close_open();
    }
  }

  void open_run() {
    if (free_runs_.empty()) {
      open_ = static_cast<uint32_t>(runs_.size());
      runs_.emplace_back();
    } else {
      open_ = free_runs_.back();
      free_runs_.pop_back();
    }
    runs_[open_] = {arena_.size(), arena_.size(), 0};
  }
  // The open run joins the tournament, on a free leaf.
  void close_open() {
    if (free_leaves_.empty()) grow_tree();
    const uint32_t l = free_leaves_.back();
    free_leaves_.pop_back();
    leaf_[l].run = open_;
    set_leaf(l, arena_[head(runs_[open_])]);
    replay(l);
    ++live_leaves_;
    open_ = kNone;
  }

  // Leaf l's key and head from entry e; clear_leaf: its run is done.
  void set_leaf(uint32_t l, const Entry& e) {
    key_[l] = e.key;
    leaf_[l].block = e.block;
    leaf_[l].stamp = e.stamp;
  }
  void clear_leaf(uint32_t l) {
    key_[l] = kInfinity;
    leaf_[l].run = kNone;
    free_leaves_.push_back(l);
    --live_leaves_;
  }
  // Leaf l's key changed: recompute the winners on its path to the root.
  // Each level reads the sibling's winner, at an address known in advance,
  // and its key. (A select by conditional moves, which makes each level
  // wait for the comparison below it, was 13% slower on gdsf than this
  // branch.)
  void replay(uint32_t l) {
    Key k = key_[l];
    uint32_t w = l;
    for (size_t v = leaves_ + l; v > 1; v >>= 1) {
      const uint32_t s = win_[v ^ 1];
      const Key sk = key_[s];
      const bool lt = sk < k;
      k = lt ? sk : k;
      w = lt ? s : w;
      win_[v >> 1] = w;
    }
  }
  // Doubles the leaves (the first call makes 64); the new ones are free.
  void grow_tree() {
    const uint32_t old = leaves_;
    leaves_ = old == 0 ? 64 : 2 * old;
    win_.assign(2 * static_cast<size_t>(leaves_), 0);
    for (uint32_t l = 0; l < leaves_; ++l) win_[leaves_ + l] = l;
    key_.resize(leaves_, kInfinity);
    leaf_.resize(leaves_);
    for (uint32_t l = leaves_; l-- > old;) free_leaves_.push_back(l);  // lowest first out
    rebuild_tree();
  }
  // Every inner node from its children: O(leaves).
  void rebuild_tree() {
    for (size_t v = leaves_; v-- > 1;) {
      const uint32_t a = win_[2 * v], b = win_[2 * v + 1];
      win_[v] = key_[b] < key_[a] ? b : a;
    }
  }

  // Keeps only the live entries of every run, in order, and the runs that
  // still hold one; the open run stays open, at the tail. In place, runs
  // taken in arena order (an entry only ever moves down): a new arena each
  // time cost a page fault per 4 KiB and a copy when it next grew.
  void compact() {
    order_.clear();
    for (uint32_t l = 0; l < leaves_; ++l)
      if (leaf_[l].run != kNone) order_.push_back(l);
    std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) { return runs_[leaf_[a].run].lo < runs_[leaf_[b].run].lo; });
    uint64_t out = 0;
    auto keep = [&](uint32_t id) {
      Run& r = runs_[id];
      const uint64_t lo = out;
      for (uint64_t i = r.lo; i < r.hi; ++i) {
        // Stamps are random reads: fetch them a little ahead.
        if (i + kLookahead < r.hi) __builtin_prefetch(&meta_[arena_[i + kLookahead].block]);
        if (valid(arena_[i])) arena_[out++] = arena_[i];
      }
      r.lo = lo;
      r.hi = out;
      return r.lo < r.hi;
    };
    for (const uint32_t l : order_) {
      if (keep(leaf_[l].run)) {
        set_leaf(l, arena_[head(runs_[leaf_[l].run])]);
      } else {
        free_runs_.push_back(leaf_[l].run);
        clear_leaf(l);
      }
    }
    if (open_ != kNone && !keep(open_)) {
      free_runs_.push_back(open_);
      open_ = kNone;
    }
    arena_.resize(out);
    rebuild_tree();
  }

  bool reference_ = false;
  IndexedHeap ref_heap_;    // reference mode only
  std::vector<Meta> meta_;  // per block
  std::vector<Entry> arena_;
  std::vector<Run> runs_;
  std::vector<uint32_t> free_runs_;
  uint32_t leaves_ = 0;             // a power of two
  std::vector<uint32_t> win_;       // by tree node: the leaf with the smallest key below it;
                                    // [1] the root, [leaves_ + l] leaf l itself
  std::vector<Key> key_;            // by leaf: its run's head key, kInfinity if none
  std::vector<Leaf> leaf_;          // by leaf
  std::vector<uint32_t> order_;     // compact()'s scratch
  std::vector<uint32_t> free_leaves_;
  uint32_t live_leaves_ = 0;        // leaves holding a run
  std::vector<Entry> front_;  // merged: the smallest keys, ascending
  size_t front_head_ = 0;     // entries before it are consumed
  uint32_t open_ = kNone;
  int32_t size_ = 0;
  size_t slack_ = 0;
  HeapKey top_key_;
  BlockId top_block_ = kNoBlock;  // what the last top() returned, while it is front_'s head
};

}  // namespace prefixsim
