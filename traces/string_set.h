// The request ids an agentic-Mooncake trace has seen (to check wait_for
// and uniqueness), a lookup that gains an entry on every line: open
// addressing with linear probing in one array (power-of-two size, at most
// half full), the ids' text in one arena, so no allocation per entry, where
// std::unordered_set<std::string> allocates a node each (~20% of the
// agentic reader's time went to its set). Memory: 16 bytes a slot, two
// slots an id at most, plus the ids' text.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/mix.h"

namespace prefixsim {

// A set of strings (request ids).
class StringSet {
 public:
  bool contains(std::string_view s) const {
    if (slots_.empty()) return false;
    const uint32_t h = hash(s);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& e = slots_[i];
      if (e.len == kEmpty) return false;
      if (e.tag == h && text(e) == s) return true;
    }
  }
  // Adds `s`; false when it was there already.
  bool insert(std::string_view s) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const uint32_t h = hash(s);
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      const Slot& e = slots_[i];
      if (e.len == kEmpty) break;
      if (e.tag == h && text(e) == s) return false;
    }
    slots_[i] = Slot{arena_.size(), static_cast<uint32_t>(s.size()), h};
    arena_.append(s);
    ++size_;
    return true;
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t offset = 0;  // into arena_
    uint32_t len = kEmpty;  // no id is 4 GiB long (--max-line-bytes bounds a line)
    uint32_t tag = 0;  // the hash (its home slot, and most mismatches end here)
  };
  static constexpr uint32_t kEmpty = UINT32_MAX;

  // 32 bits: tables stay far below 2^32 slots.
  static uint32_t hash(std::string_view s) {
    uint64_t h = s.size();
    size_t k = 0;
    for (; k + 8 <= s.size(); k += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + k, 8);
      h = mix64(h ^ w);
    }
    uint64_t tail = 0;
    if (k < s.size()) std::memcpy(&tail, s.data() + k, s.size() - k);
    return static_cast<uint32_t>(mix64(h ^ tail ^ 0x9e3779b97f4a7c15ULL));
  }
  std::string_view text(const Slot& e) const { return std::string_view(arena_).substr(e.offset, e.len); }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& e : old) {
      if (e.len == kEmpty) continue;
      size_t i = e.tag & mask_;  // the tag is the hash's low bits: no rehashing
      while (slots_[i].len != kEmpty) i = (i + 1) & mask_;
      slots_[i] = e;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
  std::string arena_;
};

}  // namespace prefixsim
