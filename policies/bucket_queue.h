// An exact min-queue of blocks keyed like IndexedHeap, for keys that crowd
// near the current minimum: GreedyDual's L + f*cost (new content starts
// just above the last evicted key), belady's next-use request or depth. A
// heap pays a cache miss per level on every hit and eviction; here a push
// appends to one array and the next eviction is the next entry of another.
//
// Layout (a calendar queue, Brown, CACM 1988, with a sorted front bucket):
//   - bucket i holds the keys with floor(primary / width) == i;
//   - a ring of `slots` arrays holds buckets front_ .. front_ + slots - 1,
//     unsorted except the front one, which is sorted by the full key
//     (primary, secondary) when it becomes the front and is then consumed in
//     order; a push that would break that order goes to the heap instead;
//   - a push below the front moves the front back to it when the ring still
//     spans every key it holds, so keys that do not drift upwards (belady's)
//     stay in the ring too;
//   - an IndexedHeap holds the rest: keys beyond the ring's reach, and,
//     when width is 0, every key (the reference mode).
// The minimum is the smaller of the front's next entry and the heap's top:
// every other bucket lies above the front one. Removal is lazy: an entry
// whose block has left, or was pushed again since, is skipped (a per-block
// stamp tells), and all arrays are swept when mostly dead. Buckets filled in
// key order (equal primaries pushed in release order: lfu-da, belady's depth
// classes) are never sorted at all.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "policies/indexed_heap.h"

namespace prefixsim {

class BucketQueue {
 public:
  // width <= 0: a plain heap. slots: rounded up to a power of two >= 64.
  void reset(int32_t num_blocks, double width, int32_t slots) {
    width_ = width;
    heap_.reset(num_blocks);
    meta_.assign(static_cast<size_t>(num_blocks), Meta{});
    size_ = 0;
    ring_size_ = 0;
    if (width_ <= 0) return;
    slots_ = static_cast<int32_t>(std::bit_ceil(static_cast<uint32_t>(std::max(slots, 64))));
    bucket_.assign(static_cast<size_t>(slots_), {});
    live_.assign(static_cast<size_t>(slots_), 0);
    bits_.assign(static_cast<size_t>(slots_) / 64, 0);
    summary_.assign((bits_.size() + 63) / 64, 0);
    heads_.assign(static_cast<size_t>(slots_), 0);
    entries_ = 0;
    sweep_slack_ = static_cast<size_t>(num_blocks) / 2 + 64;
    front_ = 0;
    front_ready_ = true;
  }

  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }
  bool contains(BlockId b) const { return meta_[b].where != kOut; }
  // Key of the block the last top() returned.
  const HeapKey& top_key() const { return top_key_; }
  size_t bytes() const {
    size_t n = heap_.bytes() + meta_.capacity() * sizeof(Meta) + (live_.capacity() + heads_.capacity()) * sizeof(int32_t) +
               (bits_.capacity() + summary_.capacity()) * sizeof(uint64_t);
    for (const auto& v : bucket_) n += sizeof(v) + v.capacity() * sizeof(Entry);
    return n;
  }

  void push(BlockId b, HeapKey k) {
    Meta& m = meta_[b];
    ++m.stamp;
    ++size_;
    if (width_ > 0) {
      const int64_t i = bucket_of(k.primary);
      if (ring_size_ == 0) {  // an empty ring starts at the new key
        if (i != front_) {
          drop_front();
          front_ = i;
          front_ready_ = false;
        }
        hi_ = i;
      }
      int64_t d = i - front_;
      if (d < 0 && hi_ - i < slots_) {  // below the front, but the ring still spans every key
        front_ = i;
        front_ready_ = false;
        d = 0;
      }
      if (d > 0 ? d < slots_ : d == 0 && fits_front(k)) {
        const int32_t s = slot(d);
        auto& v = bucket_[static_cast<size_t>(s)];
        v.push_back({k, b, m.stamp});
        m.where = s;
        if (live_[s]++ == 0) set_bit(s);
        ++ring_size_;
        hi_ = std::max(hi_, i);
        if (++entries_ > 2 * static_cast<size_t>(ring_size_) + sweep_slack_) sweep();
        return;
      }
    }
    m.where = kHeap;
    heap_.push(b, k);
  }

  // Lazy in the ring: the bucket's entry stays and is skipped (its stamp no
  // longer matches) when the front reaches it or a compaction drops it.
  void erase(BlockId b) {
    const int32_t s = meta_[b].where;
    meta_[b].where = kOut;
    --size_;
    if (s == kHeap) {
      heap_.erase(b);
      return;
    }
    --ring_size_;
    if (--live_[s] == 0) clear_bit(s);
  }

  // The smallest key's block; the queue must not be empty. Not const: it
  // may move the front to the next bucket and sort it.
  BlockId top() {
    if (ring_size_ == 0) return heap_top();
    if (live_[slot(0)] == 0) {
      const int64_t d = distance_to_next_bucket();
      drop_front();
      front_ += d;
      front_ready_ = false;
    }
    const int32_t s = slot(0);
    auto& v = bucket_[static_cast<size_t>(s)];
    uint32_t& h = heads_[static_cast<size_t>(s)];
    if (!front_ready_) {
      // Dead entries may stay: they sort like any other and are skipped.
      auto less = [](const Entry& a, const Entry& b) { return a.key < b.key; };
      const auto from = v.begin() + h;
      if (!std::is_sorted(from, v.end(), less)) std::sort(from, v.end(), less);
      front_ready_ = true;
    }
    while (!valid(v[h], s)) ++h;
    // A front that keeps taking pushes (belady's deepest class) would
    // otherwise keep its consumed entries for as long as it is the front.
    if (h >= kTrimAfter && 2 * static_cast<size_t>(h) >= v.size()) {
      v.erase(v.begin(), v.begin() + h);
      entries_ -= h;
      h = 0;
    }
    // The next entries are the next evictions: fetch their blocks' state.
    if (h + kLookahead < v.size()) __builtin_prefetch(&meta_[v[h + kLookahead].block]);
    top_key_ = v[h].key;
    if (!heap_.empty() && heap_.key(heap_.top()) < top_key_) return heap_top();
    return v[h].block;
  }
  // The block `ahead` entries past the front's next one (it may have left
  // the queue since), or kNoBlock: a prefetch hint for the coming pops.
  BlockId peek(size_t ahead) const {
    if (ring_size_ == 0 || !front_ready_) return kNoBlock;
    const int32_t s = slot(0);
    const auto& v = bucket_[static_cast<size_t>(s)];
    const size_t i = heads_[static_cast<size_t>(s)] + ahead;
    return i < v.size() ? v[i].block : kNoBlock;
  }
  BlockId pop() {
    const BlockId b = top();
    erase(b);
    return b;
  }

 private:
  static constexpr int32_t kOut = -1;
  static constexpr int32_t kHeap = -2;
  // Bucket numbers are clamped so that differences never overflow; keys
  // this far out (belady's "never", say) simply live in the heap.
  static constexpr double kMaxBucket = 0x1p60;

  struct Entry {
    HeapKey key;
    BlockId block;
    uint32_t stamp;  // the block's push count when this entry was made
  };

  BlockId heap_top() {
    const BlockId b = heap_.top();
    top_key_ = heap_.key(b);
    return b;
  }
  int64_t bucket_of(double primary) const {
    const double q = std::floor(primary / width_);
    return static_cast<int64_t>(std::clamp(q, -kMaxBucket, kMaxBucket));
  }
  int32_t slot(int64_t d) const { return static_cast<int32_t>((front_ + d) & (slots_ - 1)); }
  bool valid(const Entry& e, int32_t s) const { return meta_[e.block].where == s && meta_[e.block].stamp == e.stamp; }

  // A push into the front bucket must keep its consumed order: only keys at
  // or above its last entry (live or not) join it.
  bool fits_front(const HeapKey& k) const {
    const auto& v = bucket_[static_cast<size_t>(slot(0))];
    return v.empty() || !(k < v.back().key) || !front_ready_;
  }
  // The front bucket has no live entry left: forget its entries.
  void drop_front() {
    const int32_t s = slot(0);
    auto& v = bucket_[static_cast<size_t>(s)];
    // A bucket may have held a large share of the pool (lfu-da's class of
    // count 1): give its room back, or every slot of the ring would keep
    // the most it ever held. Costs an allocation per bucket, not per push.
    entries_ -= v.size();
    if (v.capacity() > kKeptCapacity)
      std::vector<Entry>().swap(v);
    else
      v.clear();
    heads_[static_cast<size_t>(s)] = 0;
  }
  // Keeps only the live entries of bucket s, in order.
  void compact(int32_t s) {
    auto& v = bucket_[static_cast<size_t>(s)];
    size_t out = 0;
    for (size_t i = heads_[static_cast<size_t>(s)]; i < v.size(); ++i)
      if (valid(v[i], s)) v[out++] = v[i];
    entries_ -= v.size() - out;
    v.resize(out);
    heads_[static_cast<size_t>(s)] = 0;
  }
  // Dead entries outnumber the live ones: drop them everywhere, and the
  // room they took. Amortized O(1): a sweep follows at least sweep_slack_
  // new dead entries.
  void sweep() {
    for (int32_t s = 0; s < slots_; ++s) {
      auto& v = bucket_[static_cast<size_t>(s)];
      if (v.empty()) continue;
      compact(s);
      if (v.capacity() > 2 * v.size() + 64) v.shrink_to_fit();
    }
  }

  void set_bit(int32_t s) {
    const auto w = static_cast<size_t>(s) / 64;
    bits_[w] |= uint64_t{1} << (s % 64);
    summary_[w / 64] |= uint64_t{1} << (w % 64);
  }
  void clear_bit(int32_t s) {
    const auto w = static_cast<size_t>(s) / 64;
    bits_[w] &= ~(uint64_t{1} << (s % 64));
    if (!bits_[w]) summary_[w / 64] &= ~(uint64_t{1} << (w % 64));
  }
  // First non-empty slot at or after s (no wrap), or slots_ if none.
  int32_t first_set_from(int32_t s) const {
    size_t w = static_cast<size_t>(s) / 64;
    const uint64_t here = bits_[w] & (~uint64_t{0} << (s % 64));
    if (here) return static_cast<int32_t>(w * 64) + std::countr_zero(here);
    ++w;
    for (size_t sw = w / 64; sw < summary_.size(); ++sw) {
      uint64_t m = summary_[sw];
      if (sw == w / 64 && w % 64) m &= ~uint64_t{0} << (w % 64);
      if (!m) continue;
      const size_t word = sw * 64 + static_cast<size_t>(std::countr_zero(m));
      return static_cast<int32_t>(word * 64) + std::countr_zero(bits_[word]);
    }
    return slots_;
  }
  // Ring distance from the (empty) front slot to the nearest non-empty one;
  // the ring is not empty.
  int64_t distance_to_next_bucket() const {
    const int32_t s0 = slot(0);
    int32_t s = first_set_from(s0);
    if (s == slots_) s = first_set_from(0);
    return (s - s0 + slots_) & (slots_ - 1);
  }

  double width_ = 0;
  int32_t slots_ = 0;
  IndexedHeap heap_;
  struct Meta {
    int32_t where = kOut;  // ring slot, kHeap or kOut
    uint32_t stamp = 0;    // pushes so far
  };
  static constexpr size_t kLookahead = 8;
  static constexpr size_t kKeptCapacity = 64;  // entries
  static constexpr uint32_t kTrimAfter = 256;     // consumed entries
  std::vector<Meta> meta_;  // per block
  std::vector<std::vector<Entry>> bucket_;  // per ring slot, lazily pruned
  std::vector<int32_t> live_;    // per slot: entries still in the queue
  std::vector<uint64_t> bits_;     // slots with live entries
  std::vector<uint64_t> summary_;  // non-zero words of bits_
  int32_t size_ = 0;
  int32_t ring_size_ = 0;
  int64_t front_ = 0;   // bucket number of the front slot
  int64_t hi_ = 0;      // highest bucket pushed into the ring since it was last empty
  size_t entries_ = 0;      // in all buckets, dead ones included
  size_t sweep_slack_ = 0;  // dead entries tolerated beyond one per live one
  std::vector<uint32_t> heads_;  // per slot: entries before it are consumed (dead)
  bool front_ready_ = true;      // the front bucket is sorted from its head on
  HeapKey top_key_;
};

}  // namespace prefixsim
