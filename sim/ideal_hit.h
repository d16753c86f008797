// The ideal prefix hit rate: what an unbounded cache would give with vLLM's
// semantics (requests in order; only full blocks cached; a lookup walks from
// block 0 to the first miss and hits at most floor((len-1)/B) blocks; every
// full block the request computed is inserted after it: its prompt and its
// outputs but the last, which is sampled and never computed -- so a
// multi-turn conversation re-sending earlier answers can hit them, as it does
// in the engine). A RequestSource wrapper
// so a replay can count it while streaming, without a second pass.
#pragma once

#include <unordered_set>

#include "sim/block_hash.h"
#include "sim/request_source.h"

namespace prefixsim {

class IdealHitSource final : public RequestSource {
 public:
  IdealHitSource(RequestSource& inner, int32_t block_size) : inner_(inner), block_size_(block_size) {}

  bool next(Request& out) override {
    if (!inner_.next(out)) return false;
    chain_.reset(block_size_, &out.extras);
    out.append_prompt_to(chain_);
    const auto& hashes = chain_.hashes();
    const size_t max_hit = static_cast<size_t>((out.prompt_len - 1) / block_size_);
    size_t hit = 0;
    while (hit < max_hit && hit < hashes.size() && seen_.count(hashes[hit])) ++hit;
    outputs_.clear();
    for (int64_t k = 0; k + 1 < out.output_len; ++k) outputs_.push_back(out.output_token(k));
    chain_.append_tokens(outputs_);
    for (const BlockHash& h : chain_.hashes()) seen_.insert(h);
    prompt_tokens_ += out.prompt_len;
    hit_tokens_ += static_cast<int64_t>(hit) * block_size_;
    return true;
  }
  std::string format() const override { return inner_.format(); }
  std::string origin() const override { return inner_.origin(); }

  double hit_rate() const {
    return prompt_tokens_ ? static_cast<double>(hit_tokens_) / static_cast<double>(prompt_tokens_) : 0.0;
  }
  int64_t prompt_tokens() const { return prompt_tokens_; }

 private:
  RequestSource& inner_;
  int32_t block_size_;
  BlockHashChain chain_;
  std::vector<int32_t> outputs_;
  std::unordered_set<BlockHash, BlockHashHasher> seen_;
  int64_t prompt_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace prefixsim
