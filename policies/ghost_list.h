// A bounded FIFO of evicted block hashes ("ghosts") with O(1) membership and
// removal: ARC's B1/B2, 2Q's A1out and S3-FIFO's G. A ring holds the hashes
// in insertion order; a flat open-addressing table (linear probing,
// backward-shift deletion) maps a hash to its ring slot. Both are sized in
// reset(), so nothing allocates afterwards; when full, the oldest ghost goes.
//
// Keyed mode (num_keys > 0, a pool replaying an interned trace): every hash
// has a dense key, and a per-key array replaces the hash table, so
// membership is one load instead of a probe. Callers pass (hash, key) and
// the list uses whichever it indexes by; both modes give the same answers.
// The keyed ring holds bare keys (4 bytes, not a 24-byte slot): a slot is
// live exactly when its key's entry still points back at it, so a ghost hit
// writes nothing to the ring, and dropping the oldest ghosts (a sequential
// walk) can fetch their per-key entries, random loads, ahead of time.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/base/error.h"
#include "sim/base/types.h"

namespace prefixsim {

class GhostList {
 public:
  void reset(int64_t capacity, uint32_t num_keys = 0) {
    cap_ = capacity < 1 ? 1 : capacity;
    keyed_ = num_keys > 0;
    if (keyed_) {
      key_ring_.assign(static_cast<size_t>(cap_), kNoKey);
      by_key_.assign(num_keys, kEmpty);
      std::vector<Slot>().swap(ring_);
      std::vector<int32_t>().swap(table_);
      mask_ = 0;
    } else {
      ring_.assign(static_cast<size_t>(cap_), Slot{});
      std::vector<uint32_t>().swap(key_ring_);
      std::vector<int32_t>().swap(by_key_);
      uint64_t t = 16;
      while (t < static_cast<uint64_t>(cap_) * 2) t <<= 1;
      table_.assign(t, kEmpty);
      mask_ = t - 1;
    }
    head_ = 0;
    count_ = 0;
    live_ = 0;
  }
  int64_t size() const { return live_; }
  int64_t capacity() const { return cap_; }
  bool contains(const BlockHash& h, uint32_t key = kNoKey) const {
    if (keyed_) return by_key_[checked(key)] != kEmpty;
    return lookup(h) != kEmpty;
  }

  // Remembers h as the newest ghost (dropping the oldest when full).
  void push(const BlockHash& h, uint32_t key = kNoKey) {
    if (contains(h, key)) return;
    if (count_ == cap_) pop_oldest();
    const int64_t slot = wrap(head_ + count_);
    ++count_;
    ++live_;
    if (keyed_) {
      key_ring_[static_cast<size_t>(slot)] = key;
      by_key_[key] = static_cast<int32_t>(slot);
      return;
    }
    ring_[static_cast<size_t>(slot)] = Slot{h, true};
    uint64_t i = home(h);
    while (table_[i] != kEmpty) i = (i + 1) & mask_;
    table_[i] = static_cast<int32_t>(slot);
  }
  // Forgets h if present (a ghost hit); returns whether it was there.
  bool erase(const BlockHash& h, uint32_t key = kNoKey) {
    if (keyed_) {
      int32_t& s = by_key_[checked(key)];
      if (s == kEmpty) return false;
      s = kEmpty;  // its ring slot is dead now: the key no longer points at it
      --live_;
      return true;
    }
    const uint64_t i = table_index(h);
    if (i == kNone) return false;
    ring_[static_cast<size_t>(table_[i])].live = false;
    --live_;
    remove_at(i);
    return true;
  }
  // Drops the oldest live ghost (no-op when empty).
  void pop_oldest() {
    while (count_ > 0) {
      const int64_t slot = head_;
      head_ = wrap(head_ + 1);
      --count_;
      if (keyed_) {
        // The ring is walked in order, so the per-key entries of the ghosts
        // a few slots on can be fetched now (a hint: no effect on results).
        if (count_ > kAhead) __builtin_prefetch(&by_key_[key_ring_[static_cast<size_t>(wrap(slot + kAhead))]]);
        const uint32_t key = key_ring_[static_cast<size_t>(slot)];
        if (by_key_[key] == static_cast<int32_t>(slot)) {
          by_key_[key] = kEmpty;
          --live_;
          return;
        }
        continue;
      }
      Slot& s = ring_[static_cast<size_t>(slot)];
      if (s.live) {
        erase(s.hash);
        return;
      }
    }
  }
  size_t bytes() const {
    return ring_.capacity() * sizeof(Slot) + key_ring_.capacity() * sizeof(uint32_t) +
           (table_.capacity() + by_key_.capacity()) * sizeof(int32_t);
  }

 private:
  struct Slot {  // hash mode
    BlockHash hash;
    bool live = false;
  };
  uint32_t checked(uint32_t key) const {
    if (key >= by_key_.size()) throw InternalError("ghost list: a keyed list was given no key");
    return key;
  }
  int64_t wrap(int64_t i) const { return i >= cap_ ? i - cap_ : i; }
  static constexpr int32_t kEmpty = -1;
  static constexpr uint64_t kNone = ~uint64_t{0};
  static constexpr int64_t kAhead = 8;

  uint64_t home(const BlockHash& h) const { return (h.lo ^ (h.hi >> 7)) & mask_; }
  uint64_t table_index(const BlockHash& h) const {
    for (uint64_t i = home(h);; i = (i + 1) & mask_) {
      const int32_t s = table_[i];
      if (s == kEmpty) return kNone;
      const Slot& slot = ring_[static_cast<size_t>(s)];
      if (slot.live && slot.hash == h) return i;
    }
  }
  int32_t lookup(const BlockHash& h) const {
    const uint64_t i = table_index(h);
    return i == kNone ? kEmpty : table_[i];
  }
  // Backward-shift deletion keeps every probe chain unbroken.
  void remove_at(uint64_t i) {
    uint64_t hole = i;
    for (uint64_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      const int32_t s = table_[j];
      if (s == kEmpty) break;
      const uint64_t want = home(ring_[static_cast<size_t>(s)].hash);
      // Move s into the hole if its home is not cyclically in (hole, j].
      if (((j - want) & mask_) >= ((j - hole) & mask_)) {
        table_[hole] = s;
        hole = j;
      }
    }
    table_[hole] = kEmpty;
  }

  std::vector<Slot> ring_;          // hash mode: ghosts in insertion order
  std::vector<int32_t> table_;      // hash mode: hash -> ring slot
  std::vector<uint32_t> key_ring_;  // keyed mode: the ghosts' keys in insertion order
  std::vector<int32_t> by_key_;     // keyed mode: ring slot of each key's live ghost, or kEmpty
  bool keyed_ = false;
  uint64_t mask_ = 0;
  int64_t cap_ = 1;
  int64_t head_ = 0;   // ring index of the oldest slot
  int64_t count_ = 0;  // ring slots in use (live or dead)
  int64_t live_ = 0;
};

}  // namespace prefixsim
