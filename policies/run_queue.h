// An exact min-queue of blocks keyed like IndexedHeap, for keys that come
// in sorted runs. A request releases its blocks together, last to first,
// and the policies that need an order usually give them keys sorted along
// the chain: gdsf's L + cost(depth) falls as the depth does, belady's
// (farthest next use, deepest) rises, lfu-da's L + f rises. So the queue
// stores each maximal sorted stretch of pushes as a run, and merges the
// runs with a small heap keyed by each run's head: a push is an append to
// one array, an eviction the next entry of a run plus a sift over a heap of
// runs (a few thousand nodes, in cache), where a heap over blocks would pay
// a cache miss per level and a calendar queue a scattered write per push.
// (The k-way merge of sorted runs; Knuth, TAOCP vol. 3, 5.4.1.)
//
// Layout:
//   - arena_: every entry pushed, in push order; a run is a stretch
//     [lo, hi) of it, ascending (consumed from lo) or descending (consumed
//     from hi - 1); its direction is set by its second entry;
//   - the open run is the one pushes append to: the arena's tail, never
//     consumed from. A push whose key breaks its order closes it (into the
//     heap) and opens a new one; top() closes it too, so runs are only read
//     once closed (a request's releases stay one run: its blocks are
//     released together, between two requests' evictions);
//   - heap_: the closed runs that may still hold entries, by head key;
//     a node carries its run's head entry, and the runs at the heap's
//     second level (consumed next) get the entry after their head
//     prefetched: runs interleave finely, so by the time a run is
//     consumed again its arena line has left the cache;
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
    heap_.clear();
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
           runs_.capacity() * sizeof(Run) + free_runs_.capacity() * sizeof(uint32_t) + heap_.capacity() * sizeof(Node);
  }

  void push(BlockId b, HeapKey k) {
    top_block_ = kNoBlock;
    if (front_head_ < front_.size() && k < front_.back().key) spill_front();
    Meta& m = meta_[b];
    ++m.stamp;
    m.in = 1;
    ++size_;
    if (reference_) {
      ref_heap_.push(b, k);
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
        top_key_ = e.key;
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

  struct Entry {
    HeapKey key;
    BlockId block;
    uint32_t stamp;  // the block's push count when this entry was made
  };
  struct Run {
    uint64_t lo = 0, hi = 0;  // arena_[lo, hi): entries not yet consumed
    int32_t dir = 0;          // 1 ascending, -1 descending, 0 one entry so far
  };
  // Heap keys as one unsigned 128-bit number ordered like HeapKey, so a
  // sift compares without branches on doubles (the sifts' mispredictions
  // were most of a merge's cost).
  __extension__ typedef unsigned __int128 Key128;
  static Key128 encode(const HeapKey& k) {
    const double p = k.primary == 0 ? 0.0 : k.primary;  // -0 and +0 are one key, as for <
    const uint64_t bits = std::bit_cast<uint64_t>(p);
    const uint64_t ordered = (bits >> 63) ? ~bits : bits | (uint64_t{1} << 63);
    return (static_cast<Key128>(ordered) << 64) | k.secondary;
  }
  static HeapKey decode(Key128 k) {
    const uint64_t ordered = static_cast<uint64_t>(k >> 64);
    const uint64_t bits = (ordered >> 63) ? ordered & ~(uint64_t{1} << 63) : ~ordered;
    return {std::bit_cast<double>(bits), static_cast<uint64_t>(k)};
  }
  // A run in the heap carries its head entry, so moving the head to the
  // front reads no arena line (by then long gone from the cache).
  struct Node {
    Key128 key;  // the run's head key (its entry may be dead)
    uint32_t run;
    BlockId block;
    uint32_t stamp;
  };
  static Node node_of(const Entry& e, uint32_t run) { return {encode(e.key), run, e.block, e.stamp}; }
  static Entry entry_of(const Node& n) { return {decode(n.key), n.block, n.stamp}; }
  // Hints the CPU to fetch the entry after r's head, which consuming the
  // head will read.
  void prefetch_after_head(const Run& r) const {
    if (r.hi - r.lo >= 2) __builtin_prefetch(arena_.data() + (r.dir >= 0 ? r.lo + 1 : r.hi - 2));
  }
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
    for (size_t i = 0; i < kMergeBatch && !heap_.empty(); ++i) {
      front_.push_back(entry_of(heap_.front()));
      advance_heap_front();
      // The runs at the heap's second level are consumed next: start
      // fetching the entry each will need then.
      for (size_t c = 1; c < std::min<size_t>(heap_.size(), 3); ++c) prefetch_after_head(runs_[heap_[c].run]);
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
  // Consumes the head of the run at the heap's top: the run's next entry
  // becomes its key in the heap, or the run leaves it.
  void advance_heap_front() {
    Node& t = heap_.front();
    Run& r = runs_[t.run];
    if (r.dir >= 0)
      ++r.lo;
    else
      --r.hi;
    if (r.lo == r.hi) {
      free_runs_.push_back(t.run);
      t = heap_.back();
      heap_.pop_back();
      if (!heap_.empty()) sift_down(0);
    } else {
      t = node_of(arena_[head(r)], t.run);
      sift_down(0);
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
  void close_open() {
    heap_.push_back(node_of(arena_[head(runs_[open_])], open_));
    sift_up(heap_.size() - 1);
    open_ = kNone;
  }

  void sift_up(size_t i) {
    const Node n = heap_[i];
    while (i > 0) {
      const size_t p = (i - 1) / 2;
      if (!(n.key < heap_[p].key)) break;
      heap_[i] = heap_[p];
      i = p;
    }
    heap_[i] = n;
  }
  void sift_down(size_t i) {
    const Node n = heap_[i];
    const size_t size = heap_.size();
    for (;;) {
      size_t c = 2 * i + 1;
      if (c >= size) break;
      if (c + 1 < size) c += heap_[c + 1].key < heap_[c].key;
      if (!(heap_[c].key < n.key)) break;
      heap_[i] = heap_[c];
      i = c;
    }
    heap_[i] = n;
  }

  // Keeps only the live entries of every run, in order, and the runs that
  // still hold one; the open run stays open, at the tail.
  void compact() {
    std::vector<Entry> next;
    next.reserve(2 * static_cast<size_t>(size_) + 64);
    auto keep = [&](uint32_t id) {
      Run& r = runs_[id];
      const uint64_t lo = next.size();
      for (uint64_t i = r.lo; i < r.hi; ++i)
        if (valid(arena_[i])) next.push_back(arena_[i]);
      r.lo = lo;
      r.hi = next.size();
      return r.lo < r.hi;
    };
    std::vector<Node> heap;
    heap.reserve(heap_.size());
    for (const Node& n : heap_) {
      if (keep(n.run))
        heap.push_back(node_of(next[head(runs_[n.run])], n.run));
      else
        free_runs_.push_back(n.run);
    }
    if (open_ != kNone && !keep(open_)) {
      free_runs_.push_back(open_);
      open_ = kNone;
    }
    arena_.swap(next);
    heap_.swap(heap);
    for (size_t i = heap_.size() / 2; i-- > 0;) sift_down(i);
  }

  bool reference_ = false;
  IndexedHeap ref_heap_;    // reference mode only
  std::vector<Meta> meta_;  // per block
  std::vector<Entry> arena_;
  std::vector<Run> runs_;
  std::vector<uint32_t> free_runs_;
  std::vector<Node> heap_;  // closed runs by head key
  std::vector<Entry> front_;  // merged: the smallest keys, ascending
  size_t front_head_ = 0;     // entries before it are consumed
  uint32_t open_ = kNone;
  int32_t size_ = 0;
  size_t slack_ = 0;
  HeapKey top_key_;
  BlockId top_block_ = kNoBlock;  // what the last top() returned, while it is front_'s head
};

}  // namespace prefixsim
