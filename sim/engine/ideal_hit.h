// The ideal prefix hit rate: what an unbounded cache would give with vLLM's
// semantics (requests in order; only full blocks cached; a lookup walks from
// block 0 to the first miss and hits at most floor((len-1)/B) blocks; every
// full block the request computed is inserted after it: its prompt and its
// outputs but the last, which is sampled and never computed -- so a
// multi-turn conversation re-sending earlier answers can hit them, as it does
// in the engine). A RequestSource wrapper so a replay can count it while
// streaming, without a second pass.
//
// Memory: the set of blocks seen grows with the trace's distinct content, so
// it is capped at kMaxDistinctBlocks entries (64-bit fingerprints in flat
// tables, at most 256 MiB for single blocks, 384 MiB for the moment the table
// doubles to that size; a run of an identity trace's blocks is one entry).
// The cap is checked before an entry is added, so a table never grows past
// it (it used to grow once more, to 512 MiB, before noticing: a 768 MiB
// peak). Past the cap the ideal rate is reported as not available
// (valid() == false) instead of letting a long replay grow without bound;
// `prefixsim analyze` computes it for any trace size.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "sim/kv/block_hash.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

// Open-addressing table of 64-bit fingerprints (0 = empty slot, so a
// fingerprint of 0 is stored as 1), with a 32-bit value each when kValued
// (8 or 16 bytes a slot). Linear probing; doubles at load 1/2.
template <bool kValued>
class FingerprintTable {
 public:
  FingerprintTable() { slots_.assign(1 << 12, Slot{}); }
  static uint64_t fingerprint(const BlockHash& h) { return h.lo ? h.lo : 1; }
  void prefetch(const BlockHash& h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[fingerprint(h) & (slots_.size() - 1)]);
  }
  bool contains(const BlockHash& h) const { return slots_[probe(fingerprint(h))].fp != 0; }
  // The value under h; 0 if absent.
  uint32_t value(const BlockHash& h) const
    requires kValued
  {
    return slots_[probe(fingerprint(h))].value;
  }
  // Inserts h if absent; when valued, its value becomes max(value, v).
  void insert(const BlockHash& h, uint32_t v = 0) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint64_t f = fingerprint(h);
    Slot& s = slots_[probe(f)];
    if (s.fp == 0) {
      s.fp = f;
      ++size_;
    }
    if constexpr (kValued) s.value = std::max(s.value, v);
  }
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }
  void release() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
  }

 private:
  struct Plain {
    uint64_t fp = 0;
  };
  struct Valued {
    uint64_t fp = 0;
    uint32_t value = 0;
  };
  using Slot = std::conditional_t<kValued, Valued, Plain>;
  // The slot holding f, or the empty slot where it would go.
  size_t probe(uint64_t f) const {
    const uint64_t mask = slots_.size() - 1;
    uint64_t i = f & mask;
    while (slots_[i].fp != f && slots_[i].fp != 0) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Slot{});
    for (const Slot& s : old)
      if (s.fp) slots_[probe(s.fp)] = s;
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

class IdealHitSource final : public RequestSource {
 public:
  static constexpr size_t kMaxDistinctBlocks = size_t{1} << 24;

  // hand_on_chain: give each request its prompt's hash chain
  // (Request::prompt_chain), for a consumer that hashes every request at
  // once (cache mode); the engine hashes a request only when it is looked up.
  // max_distinct: the cap (tests give a small one).
  IdealHitSource(RequestSource& inner, int32_t block_size, bool hand_on_chain = true,
                 size_t max_distinct = kMaxDistinctBlocks)
      : inner_(inner), block_size_(block_size), hand_on_chain_(hand_on_chain), max_distinct_(max_distinct) {}

  bool next(Request& out) override {
    if (!inner_.next(out)) return false;
    if (!out.warmup) prompt_tokens_ += out.prompt_len;
    if (overflowed_) {
      out.prompt_chain = BlockHashChain{};
      return true;
    }
    chain_.reset(block_size_, &out.extras);
    out.append_prompt_to(chain_);
    if (hand_on_chain_) out.prompt_chain = chain_;  // so the replay does not hash the prompt again
    const size_t max_hit = static_cast<size_t>((out.prompt_len - 1) / block_size_);
    const size_t hit = walk(max_hit);
    outputs_.clear();
    const uint64_t key = out.output_key();
    for (int64_t k = 0; k + 1 < out.output_len; ++k) outputs_.push_back(out.output_token(key, k));  // kv_len()
    chain_.append_tokens(outputs_);
    insert_from(hit);
    if (out.warmup) return true;  // its blocks warm the ideal cache; its hits are not counted
    hit_tokens_ += static_cast<int64_t>(hit) * block_size_;
    counted_tokens_ += out.prompt_len;
    return true;
  }
  std::string format() const override { return inner_.format(); }
  std::string origin() const override { return inner_.origin(); }

  // False when the trace had more distinct blocks than the cap.
  bool valid() const { return !overflowed_ && counted_tokens_ > 0; }
  double hit_rate() const { return static_cast<double>(hit_tokens_) / static_cast<double>(counted_tokens_); }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  // The tables' memory now, and the most they ever held together.
  size_t table_bytes() const { return blocks_.bytes() + runs_.bytes(); }
  size_t peak_table_bytes() const { return peak_bytes_; }

 private:
  // The probes are cache misses in tables of up to 256 MiB: fetch a few
  // ahead so they overlap (prefetching does not change any result).
  static constexpr size_t kAhead = 8;

  // Leading blocks of chain_ already in the set, at most max_hit. A run of
  // an identity (BlockHashChain::runs) is one entry, keyed by its first
  // block, holding how many of its blocks were ever inserted: the run's
  // blocks depend only on its first, and are always inserted as a prefix.
  size_t walk(size_t max_hit) const {
    const auto& h = chain_.hashes();
    const auto& runs = chain_.runs();
    const size_t n = std::min(max_hit, h.size());
    size_t r = 0;
    for (size_t i = 0; i < std::min(n, kAhead); ++i) blocks_.prefetch(h[i]);
    for (size_t i = 0; i < n;) {
      if (r < runs.size() && runs[r].first == i) {
        const size_t count = runs[r].count, got = runs_.value(h[i]);
        if (got < count) return std::min(i + got, n);
        i += count;
        ++r;
        continue;
      }
      if (i + kAhead < n) blocks_.prefetch(h[i + kAhead]);
      if (!blocks_.contains(h[i])) return i;
      ++i;
    }
    return n;
  }
  // Inserts every block of chain_ past the first `hit` (those are in the
  // set), runs as their counts.
  void insert_from(size_t hit) {
    const auto& h = chain_.hashes();
    const auto& runs = chain_.runs();
    size_t r = 0;
    for (size_t i = hit; i < h.size();) {
      while (r < runs.size() && runs[r].first + runs[r].count <= i) ++r;
      if (r < runs.size() && runs[r].first <= i) {  // i lies in run r: the run is one entry
        const BlockHash& first = h[runs[r].first];
        if (full() && !runs_.contains(first)) return overflow();
        runs_.insert(first, runs[r].count);
        i = runs[r].first + runs[r].count;
        continue;
      }
      if (i + kAhead < h.size()) blocks_.prefetch(h[i + kAhead]);
      if (full() && !blocks_.contains(h[i])) return overflow();
      blocks_.insert(h[i++]);
    }
    peak_bytes_ = std::max(peak_bytes_, table_bytes());
  }
  // At the cap: one more new entry would pass it (checked before inserting,
  // so the table does not grow for an entry it cannot keep).
  bool full() const { return blocks_.size() + runs_.size() >= max_distinct_; }
  void overflow() {
    peak_bytes_ = std::max(peak_bytes_, table_bytes());
    overflowed_ = true;
    blocks_.release();
    runs_.release();
  }

  RequestSource& inner_;
  int32_t block_size_;
  bool hand_on_chain_;
  size_t max_distinct_;
  size_t peak_bytes_ = 0;
  BlockHashChain chain_;
  std::vector<int32_t> outputs_;
  FingerprintTable<false> blocks_;  // single blocks
  FingerprintTable<true> runs_;     // identity runs: first block -> blocks inserted
  bool overflowed_ = false;
  int64_t prompt_tokens_ = 0, counted_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace prefixsim
