#include "sim/engine/request.h"

#include <xxhash.h>

#include <utility>

namespace prefixsim {

void Request::append_prompt_to(BlockHashChain& chain) const {
  if (!identity_form()) {
    chain.append_tokens(tokens);
    return;
  }
  int64_t left = prompt_len;
  for (uint64_t id : hash_ids) {
    const int64_t len = left < trace_block_size ? left : trace_block_size;
    chain.append_identity(id, len);
    left -= len;
  }
}

namespace {
bool chain_fits(const BlockHashChain& c, int32_t block_size, int64_t prompt_len) {
  return c.block_size() == block_size && c.num_tokens() == prompt_len;
}
}  // namespace

void Request::hash_prompt(BlockHashChain& chain, int32_t block_size) const {
  if (chain_fits(prompt_chain, block_size, prompt_len)) {
    chain = prompt_chain;
    chain.set_extras(&extras);
    return;
  }
  chain.reset(block_size, &extras);
  append_prompt_to(chain);
}

const BlockHashChain& Request::ensure_prompt_chain(int32_t block_size) {
  if (!chain_fits(prompt_chain, block_size, prompt_len)) {
    prompt_chain.reset(block_size, &extras);
    append_prompt_to(prompt_chain);
  }
  return prompt_chain;
}

bool Request::has_prompt_chain(int32_t block_size) const { return chain_fits(prompt_chain, block_size, prompt_len); }

void Request::take_prompt_chain(BlockHashChain& chain, int32_t block_size) {
  if (chain_fits(prompt_chain, block_size, prompt_len)) {
    std::swap(chain, prompt_chain);  // chain's old buffers go with prompt_chain
    chain.set_extras(&extras);
  } else {
    hash_prompt(chain, block_size);
  }
  prompt_chain = BlockHashChain{};
}

uint64_t Request::output_key() const { return XXH3_64bits_withSeed(id.data(), id.size(), 0x6f75747075ULL); }

int32_t Request::output_token(int64_t k) const {
  if (k >= 0 && static_cast<size_t>(k) < output_tokens.size()) return output_tokens[static_cast<size_t>(k)];
  return output_token(output_key(), k);
}

std::string Request::validate() const {
  if (prompt_len <= 0) return "prompt is empty";
  if (output_len < 0) return "output length is negative";
  if (identity_form()) {
    if (trace_block_size <= 0) return "trace block size must be positive";
    const int64_t k = static_cast<int64_t>(hash_ids.size());
    // k == ceil(prompt_len / trace_block_size), without a division on the
    // path every request of a trace takes (k <= 2^32 and a block size below
    // 2^31 keep the products within int64).
    if (k <= (int64_t{1} << 32) && (k - 1) * trace_block_size < prompt_len && prompt_len <= k * trace_block_size)
      return {};
    const int64_t want = (prompt_len + trace_block_size - 1) / trace_block_size;
    if (k != want)
      return "hash_ids has " + std::to_string(k) + " ids but input_length " + std::to_string(prompt_len) +
             " needs ceil(" + std::to_string(prompt_len) + "/" + std::to_string(trace_block_size) +
             ") = " + std::to_string(want);
  } else if (static_cast<int64_t>(tokens.size()) != prompt_len) {
    return "prompt length does not match its tokens";
  }
  return {};
}

// clear() resets HashExtras field by field (keeping the salt's buffer for
// the next request a reader parses); a new field must be reset there too.
static_assert(sizeof(HashExtras) == sizeof(std::string) + 8 + sizeof(std::vector<MultimodalInput>));

void Request::clear() {
  id.clear();
  arrival = 0;
  tokens.clear();
  hash_ids.clear();
  trace_block_size = 0;
  prompt_len = 0;
  output_len = 0;
  output_tokens.clear();
  session.clear();
  extras.salt.clear();  // field by field: the buffers stay for the next request
  extras.lora = 0;
  extras.mm.clear();
  warmup = false;
  wait_for.clear();
  wait_after = 0;
  awaitable = false;
  leg = Leg::kWhole;
  ticket = 0;
  prompt_chain.reset(prompt_chain.block_size(), nullptr);
}

}  // namespace prefixsim
