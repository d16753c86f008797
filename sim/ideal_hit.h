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
// it is capped at kMaxDistinctBlocks (64-bit fingerprints in a flat table,
// at most 256 MiB). Past the cap the ideal rate is reported as not available
// (valid() == false) instead of letting a long replay grow without bound;
// `prefixsim analyze` computes it for any trace size.
#pragma once

#include <algorithm>
#include <bit>
#include <vector>

#include "sim/block_hash.h"
#include "sim/request_source.h"

namespace prefixsim {

class IdealHitSource final : public RequestSource {
 public:
  static constexpr size_t kMaxDistinctBlocks = size_t{1} << 24;

  IdealHitSource(RequestSource& inner, int32_t block_size) : inner_(inner), block_size_(block_size) {
    slots_.assign(1 << 16, 0);
  }

  bool next(Request& out) override {
    if (!inner_.next(out)) return false;
    prompt_tokens_ += out.prompt_len;
    if (overflowed_) {
      out.prompt_chain = BlockHashChain{};
      return true;
    }
    chain_.reset(block_size_, &out.extras);
    out.append_prompt_to(chain_);
    out.prompt_chain = chain_;  // handed on, so the replay does not hash the prompt again
    const size_t max_hit = static_cast<size_t>((out.prompt_len - 1) / block_size_);
    const auto& prompt = chain_.hashes();
    // The probes are cache misses in a table of up to 128 MiB: fetch a few
    // ahead so they overlap (prefetching does not change any result).
    constexpr size_t kAhead = 8;
    for (size_t i = 0; i < std::min(kAhead, prompt.size()); ++i) prefetch(prompt[i]);
    size_t hit = 0;
    while (hit < max_hit && hit < prompt.size()) {
      if (hit + kAhead < prompt.size()) prefetch(prompt[hit + kAhead]);
      if (!contains(prompt[hit])) break;
      ++hit;
    }
    outputs_.clear();
    const uint64_t key = out.output_key();
    for (int64_t k = 0; k + 1 < out.output_len; ++k) outputs_.push_back(out.output_token(key, k));
    chain_.append_tokens(outputs_);
    // The first `hit` blocks are in the set already.
    const auto& all = chain_.hashes();
    for (size_t i = hit; i < std::min(hit + kAhead, all.size()); ++i) prefetch(all[i]);
    for (size_t i = hit; i < all.size(); ++i) {
      if (i + kAhead < all.size()) prefetch(all[i + kAhead]);
      insert(all[i]);
      if (overflowed_) break;
    }
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

 private:
  // 0 marks an empty slot, so a fingerprint of 0 is stored as 1.
  static uint64_t fingerprint(const BlockHash& h) { return h.lo ? h.lo : 1; }
  void prefetch(const BlockHash& h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[fingerprint(h) & (slots_.size() - 1)]);
  }
  bool contains(const BlockHash& h) const {
    const uint64_t f = fingerprint(h), mask = slots_.size() - 1;
    for (uint64_t i = f & mask;; i = (i + 1) & mask) {
      if (slots_[i] == f) return true;
      if (slots_[i] == 0) return false;
    }
  }
  void insert(const BlockHash& h) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    if (overflowed_) return;
    const uint64_t f = fingerprint(h), mask = slots_.size() - 1;
    for (uint64_t i = f & mask;; i = (i + 1) & mask) {
      if (slots_[i] == f) return;
      if (slots_[i] == 0) {
        slots_[i] = f;
        ++size_;
        return;
      }
    }
  }
  void grow() {
    if (size_ >= kMaxDistinctBlocks) {
      overflowed_ = true;
      std::vector<uint64_t>().swap(slots_);
      return;
    }
    std::vector<uint64_t> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, 0);
    const uint64_t mask = slots_.size() - 1;
    for (uint64_t f : old) {
      if (!f) continue;
      for (uint64_t i = f & mask;; i = (i + 1) & mask)
        if (slots_[i] == 0) {
          slots_[i] = f;
          break;
        }
    }
  }

  RequestSource& inner_;
  int32_t block_size_;
  BlockHashChain chain_;
  std::vector<int32_t> outputs_;
  std::vector<uint64_t> slots_;
  size_t size_ = 0;
  bool overflowed_ = false;
  int64_t prompt_tokens_ = 0, counted_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace prefixsim
