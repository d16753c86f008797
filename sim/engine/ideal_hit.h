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
// `prefixsim analyze` computes it for any trace size. Where the replay
// interns every distinct block anyway (belady's pre-pass, PreparedTrace),
// the ideal has no table at all: account_keys() compares each key with the
// count before the request.
//
// Speed: cache mode on small requests with many distinct blocks is where
// the ideal's share of a replay shows. Each request costs one
// probe per entry, not a lookup then an insert, prefetched a few entries
// ahead; a run of one block (a Mooncake-form trace whose ids are one block
// each) is probed in the 8-byte table; in cache mode the chain handed on
// holds the computed output too, so the replay hashes nothing again, and
// the streaming replay accounts each request after its lookup (defer()),
// so the blocks its pool already holds are not probed at all. The table is
// dense (every page touched): mapped with huge pages when large, and filled
// to 3/4 before it doubles (ZeroedArray; the faults and the clearing of
// each doubled table were half of its cost).
#pragma once

#include <algorithm>
#include <span>
#include <type_traits>
#include <vector>

#include "sim/base/error.h"
#include "sim/base/zeroed_array.h"
#include "sim/kv/block_hash.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

// Open-addressing table of 64-bit fingerprints (0 = empty slot, so a
// fingerprint of 0 is stored as 1), with a 32-bit value each when kValued
// (8 or 16 bytes a slot). Linear probing (8 or 4 slots a cache line, so a
// longer probe rarely costs another miss); doubles at load 3/4.
template <bool kValued>
class FingerprintTable {
 private:
  struct Plain {
    uint64_t fp = 0;
  };
  struct Valued {
    uint64_t fp = 0;
    uint32_t value = 0;
  };

 public:
  using Slot = std::conditional_t<kValued, Valued, Plain>;
  struct Found {
    Slot* slot = nullptr;  // nullptr: absent and not added
    bool existed = false;
  };

  FingerprintTable() { slots_.reset(1 << 12, true); }
  static uint64_t fingerprint(const BlockHash& h) { return h.lo ? h.lo : 1; }
  void prefetch(uint64_t f) const { __builtin_prefetch(&slots_[f & (slots_.size() - 1)]); }
  // f's slot; when absent and `may_add`, f is added (value 0). The table
  // grows (at load 3/4) only for an entry it adds, so one at a cap never
  // doubles for an entry it already holds.
  Found find_or_add(uint64_t f, bool may_add) {
    size_t i = probe(f);
    if (slots_[i].fp != 0) return {&slots_[i], true};
    if (!may_add) return {};
    if ((size_ + 1) * 4 > slots_.size() * 3) {
      grow();
      i = probe(f);
    }
    slots_[i].fp = f;
    ++size_;
    return {&slots_[i], false};
  }
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.bytes(); }
  void release() {
    slots_.reset(0);
    size_ = 0;
  }

 private:
  // The slot holding f, or the empty slot where it would go.
  size_t probe(uint64_t f) const {
    const uint64_t mask = slots_.size() - 1;
    uint64_t i = f & mask;
    while (slots_[i].fp != f && slots_[i].fp != 0) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    ZeroedArray<Slot> old(std::move(slots_));
    slots_.reset(old.size() * 2, true);
    for (size_t k = 0; k < old.size(); ++k)
      if (old[k].fp) slots_[probe(old[k].fp)] = old[k];
  }
  ZeroedArray<Slot> slots_;
  size_t size_ = 0;
};

class IdealHitSource final : public RequestSource {
 public:
  static constexpr size_t kMaxDistinctBlocks = size_t{1} << 24;

  // hand_on_chain: give each request its computed sequence's hash chain
  // (Request::prompt_chain), for a consumer that hashes every request at
  // once (cache mode); the engine hashes a request only when it is looked up.
  // max_distinct: the cap (tests give a small one).
  IdealHitSource(RequestSource& inner, int32_t block_size, bool hand_on_chain = true,
                 size_t max_distinct = kMaxDistinctBlocks)
      : inner_(inner), block_size_(block_size), hand_on_chain_(hand_on_chain), max_distinct_(max_distinct) {}

  // Cache mode's streaming replay: next() only hashes and hands the chain
  // on, and the replay calls account() for each request once it has looked
  // it up, with how many leading blocks its pool and tiers held. Those are
  // in the set already (every block cached was inserted when it was
  // computed, and the set forgets nothing), so the walk starts past them:
  // on a trace that hits often, most of the ideal's probes never happen.
  void defer() {
    if (!hand_on_chain_) throw InternalError("ideal hit rate: deferred without handing the chain on");
    deferred_ = true;
  }

  bool next(Request& out) override {
    if (!inner_.next(out)) return false;
    if (!out.warmup) prompt_tokens_ += out.prompt_len;
    if (overflowed_) {
      out.prompt_chain = BlockHashChain{};
      return true;
    }
    // The whole computed sequence (Request::prompt_chain says so by its
    // length), so the replay hashes neither prompt nor output again.
    BlockHashChain& chain = deferred_ ? out.prompt_chain : chain_;
    chain.reset(block_size_, &out.extras);
    out.append_prompt_to(chain);
    outputs_.clear();
    const uint64_t key = out.output_key();
    for (int64_t k = 0; k + 1 < out.output_len; ++k) outputs_.push_back(out.output_token(key, k));  // kv_len()
    chain.append_tokens(outputs_);
    if (deferred_) return true;
    if (hand_on_chain_) out.prompt_chain = chain_;
    account(out, chain_, 0);
    return true;
  }
  // Counts r, whose computed sequence is `chain`, and inserts its blocks;
  // `known`: its leading blocks known to be in the set (deferred mode).
  void account(const Request& r, const BlockHashChain& chain, size_t known) {
    if (overflowed_) return;
    const size_t hit = walk_and_insert(chain, static_cast<size_t>((r.prompt_len - 1) / block_size_), known);
    if (r.warmup) return;  // its blocks warm the ideal cache; its hits are not counted
    hit_tokens_ += static_cast<int64_t>(hit) * block_size_;
    counted_tokens_ += r.prompt_len;
  }
  // Counts r from its computed sequence's keys in an interner that numbers
  // distinct blocks 0, 1, ... in the order they are first seen (the
  // prepared trace's, prepare_trace): a block was computed before r iff its
  // key is below `first_new_key`, the count before r's blocks were
  // interned, so the ideal set is the interner itself and costs a compare
  // a block (deferred mode, no table of its own; never past a cap).
  void account_keys(const Request& r, std::span<const uint32_t> keys, uint32_t first_new_key) {
    if (!deferred_) throw InternalError("ideal hit rate: counted by keys without defer()");
    const size_t n = std::min(keys.size(), static_cast<size_t>((r.prompt_len - 1) / block_size_));
    size_t hit = 0;
    while (hit < n && keys[hit] < first_new_key) ++hit;
    if (r.warmup) return;
    hit_tokens_ += static_cast<int64_t>(hit) * block_size_;
    counted_tokens_ += r.prompt_len;
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
  static constexpr size_t kAhead = 16;

  // The chain as the tables hold it: single blocks, and runs of an identity
  // (BlockHashChain::runs) as one entry each, keyed by the run's first block:
  // a run's blocks depend only on its first and are always inserted as a
  // prefix, so the set holds the first block, and runs_ how many of the
  // run's blocks were ever inserted when that is more than one. A run of one
  // block (a trace whose ids are one block each) is then a single block:
  // one probe of the 8-byte table, the smaller and more often cached one.
  struct Entry {
    uint64_t fp = 0;
    uint32_t first = 0;  // its first block in the chain
    uint32_t count = 1;  // its blocks (1: a single block)
  };
  void make_entries(const BlockHashChain& chain) {
    entries_.clear();
    const auto& h = chain.hashes();
    const auto& runs = chain.runs();
    size_t r = 0;
    for (size_t i = 0; i < h.size();) {
      const uint64_t fp = FingerprintTable<false>::fingerprint(h[i]);
      if (r < runs.size() && runs[r].first == i) {
        entries_.push_back({fp, runs[r].first, runs[r].count});
        i += runs[r++].count;
      } else {
        entries_.push_back({fp, static_cast<uint32_t>(i), 1});
        ++i;
      }
    }
  }
  void prefetch(const Entry& e) const {
    blocks_.prefetch(e.fp);
    if (e.count > 1) runs_.prefetch(e.fp);
  }

  // One pass over the chain: the leading blocks already in the set, at most
  // max_hit, are the hit, and every block of the chain is in the set after
  // (those past the first miss are added; none before it is new, and a
  // chain's blocks are distinct, so adding as we walk changes no lookup).
  // Entries wholly inside the first `known` blocks are not probed.
  size_t walk_and_insert(const BlockHashChain& chain, size_t max_hit, size_t known) {
    make_entries(chain);
    const size_t n = std::min(max_hit, chain.hashes().size());
    size_t e0 = 0;
    while (e0 < entries_.size() && entries_[e0].first + entries_[e0].count <= known) ++e0;
#ifdef PREFIXSIM_DEBUG_INVARIANTS
    for (size_t e = 0; e < e0; ++e)
      if (!blocks_.find_or_add(entries_[e].fp, false).slot)
        throw InternalError("ideal hit rate: block " + std::to_string(entries_[e].first) +
                            " was held by the pool but never inserted into the ideal set");
#endif
    size_t hit = e0 < entries_.size() ? std::min<size_t>(entries_[e0].first, n) : n;
    bool in_prefix = hit < n;
    for (size_t e = e0; e < std::min(entries_.size(), e0 + kAhead); ++e) prefetch(entries_[e]);
    for (size_t e = e0; e < entries_.size(); ++e) {
      if (e + kAhead < entries_.size()) prefetch(entries_[e + kAhead]);
      const Entry& x = entries_[e];
      const auto f = blocks_.find_or_add(x.fp, !full());
      if (!f.slot) return overflow(), hit;
      size_t have = f.existed ? 1 : 0;  // leading blocks of the entry in the set before this request
      if (x.count > 1) {  // one probe: no run entry means none or one block of the run was inserted
        const auto r = runs_.find_or_add(x.fp, !full());
        if (!r.slot) return overflow(), hit;
        if (r.existed) have = r.slot->value;
        if (have < x.count) r.slot->value = x.count;
      }
      if (in_prefix) {
        hit = std::min(x.first + std::min<size_t>(have, x.count), n);
        in_prefix = have >= x.count && x.first + x.count < n;
      }
    }
    peak_bytes_ = std::max(peak_bytes_, table_bytes());
    return hit;
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
  bool deferred_ = false;
  size_t max_distinct_;
  size_t peak_bytes_ = 0;
  BlockHashChain chain_;
  std::vector<int32_t> outputs_;
  std::vector<Entry> entries_;
  FingerprintTable<false> blocks_;  // single blocks and runs' first blocks
  FingerprintTable<true> runs_;     // identity runs: first block -> blocks inserted, when more than one
  bool overflowed_ = false;
  int64_t prompt_tokens_ = 0, counted_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace prefixsim
