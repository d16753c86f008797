// One request of a trace or a generated workload: the unit every reader
// produces and every consumer (cache replay, engine, analyze) takes.
//
// The prompt is given either as token ids, or as trace block identities
// (Mooncake-style `hash_ids`): id i names trace_block_size tokens together
// with everything before it; the last id covers the rest of prompt_len, so
// it may be partial. Both forms feed the same hash chain (append_prompt_to).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/kv/block_hash.h"
#include "sim/base/mix.h"
#include "sim/base/types.h"

namespace prefixsim {

struct Request {
  std::string id;
  TimeNs arrival = 0;  // ns since trace start

  std::vector<int32_t> tokens;     // prompt token ids (token form)
  std::vector<uint64_t> hash_ids;  // trace block identities (identity form)
  int32_t trace_block_size = 0;    // tokens per hash id (identity form)
  int64_t prompt_len = 0;          // prompt tokens, in either form

  int64_t output_len = 0;              // tokens to generate
  std::vector<int32_t> output_tokens;  // recorded outputs, if the trace has them
  std::string session;                 // conversation / session id ("" if none)
  HashExtras extras;                   // salt, LoRA, multimodal inputs
  // Replayed to warm the cache, left out of every figure (--warmup): the
  // first part of a trace plays a server that has been running.
  bool warmup = false;

  // Dependencies (Dynamo's agentic Mooncake traces): in engine mode this
  // request arrives `wait_after` ns after the last of the requests named in
  // `wait_for` (by id) has finished, not at `arrival`, which is then only its
  // recorded time (the order of cache mode and analyze). `awaitable`: later
  // requests may name it, so the engine remembers when it finished.
  std::vector<std::string> wait_for;
  TimeNs wait_after = 0;
  bool awaitable = false;

  // Disaggregated serving (sim/fleet/disagg.h): one leg of a request split
  // over a prefill and a decode instance, named by the coordinator's
  // `ticket`. A prefill leg's blocks stay held when it finishes (vLLM's
  // delay_free_blocks under do_remote_decode) until the decode side has read
  // them; a decode leg's prompt KV comes from the prefill instance (vLLM's
  // do_remote_prefill): after its local lookup it allocates the rest and
  // waits for the transfer (WAITING_FOR_REMOTE_KVS).
  enum class Leg : uint8_t { kWhole, kPrefill, kDecode };
  Leg leg = Leg::kWhole;
  uint32_t ticket = 0;

  // The prompt's hash chain, when a stage upstream already computed it (the
  // replay's ideal-hit-rate pass does), so the scheduler does not hash the
  // prompt a second time. Derived data: empty unless set, and used only
  // when its block size and length match (hash_prompt). In cache mode it
  // holds the whole computed sequence, prompt and output (kv_len tokens),
  // which the cache replay takes as it is and the prompt-only readers
  // below, seeing a longer chain, ignore.
  BlockHashChain prompt_chain;

  bool identity_form() const { return !hash_ids.empty(); }

  // Feeds the prompt into `chain` (which must be empty).
  void append_prompt_to(BlockHashChain& chain) const;
  // Resets `chain` to this prompt's chain at `block_size` (extras: this
  // request's): a copy of prompt_chain when it fits, else hashed now.
  void hash_prompt(BlockHashChain& chain, int32_t block_size) const;
  // prompt_chain at `block_size`, hashed now unless it already fits (a
  // router reads the prompt's blocks; the scheduler then takes the chain).
  const BlockHashChain& ensure_prompt_chain(int32_t block_size);
  // The same for the request's new owner: prompt_chain is moved, not
  // copied, and is left empty either way.
  void take_prompt_chain(BlockHashChain& chain, int32_t block_size);
  // Whether prompt_chain holds this prompt at `block_size` (take or copy it).
  bool has_prompt_chain(int32_t block_size) const;

  // The tokens whose KV a vLLM server computes for this request, and so may
  // cache: the prompt and every output token but the last, which is sampled
  // and never fed back. The one rule for the ideal hit rate, cache mode and
  // analyze (the engine follows it by scheduling).
  int64_t kv_len() const { return prompt_len + (output_len > 0 ? output_len - 1 : 0); }
  static int64_t kv_len(int64_t prompt_len, int64_t total_len) {
    return total_len > prompt_len ? total_len - 1 : total_len;
  }

  // The k-th output token: the recorded one when present, else a
  // deterministic function of (id, k) so that replays are reproducible.
  int32_t output_token(int64_t k) const;
  // The same in two halves, for callers asking for many tokens of one
  // request: output_key() hashes the id once, output_token(key, k) is cheap.
  uint64_t output_key() const;
  int32_t output_token(uint64_t key, int64_t k) const {
    if (k >= 0 && static_cast<size_t>(k) < output_tokens.size()) return output_tokens[static_cast<size_t>(k)];
    // Mix of (id hash, k): one id hash per request, not per token.
    return static_cast<int32_t>(mix64(key + (static_cast<uint64_t>(k) + 1) * 0x9e3779b97f4a7c15ULL) & 0x7fffffff);
  }

  // Checks internal consistency (lengths, identity coverage); returns an
  // empty string or what is wrong (the reader adds file:line).
  std::string validate() const;

  void clear();
};

}  // namespace prefixsim
