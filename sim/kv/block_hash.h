// Chained block hashes, as vLLM v1 computes them (kv_cache_utils.hash_block_tokens):
//   h_i = H(h_{i-1} or NONE_HASH, tokens of block i, extra keys of block i)
// Only full blocks are hashed. Extra keys: the LoRA id on every block, the
// cache salt on block 0 only (an empty salt is no salt), and the hash of every
// multimodal input whose token range overlaps the block.
//
// H is XXH3-128 over a flat byte image of (parent, tokens, extras). vLLM uses
// sha256 over a pickle; block ids depend only on which hashes are equal, so the
// choice of function does not change any result.
//
// Traces that name blocks instead of giving tokens (Mooncake `hash_ids`) feed
// each id into the same chain with append_identity(). When an id starts on an
// engine block boundary and the request has no extras, its whole engine
// blocks form a *run*: one XXH3 of (parent, id) gives the run's base, and
// block k of the run is a cheap bijective mix of (base, k). Whether a block
// is hashed this way depends only on its content, so equal content still
// means equal hashes; it saves ~30 XXH3 calls per 512-token trace block.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/base/mix.h"
#include "sim/base/types.h"

namespace prefixsim {

struct MultimodalInput {
  BlockHash hash;      // identity of the input (e.g. an image digest, hashed)
  int64_t offset = 0;  // first token position it occupies
  int64_t length = 0;  // number of placeholder tokens
};

// What makes two equal token blocks different: tenant salt, LoRA adapter,
// multimodal content.
struct HashExtras {
  std::string salt;    // empty: no salt
  int32_t lora = 0;    // 0: no LoRA
  std::vector<MultimodalInput> mm;  // sorted by offset
  bool empty() const { return salt.empty() && lora == 0 && mm.empty(); }
};

// The fixed root of every chain (vLLM's NONE_HASH, fixed here for determinism).
BlockHash none_hash();

// Hash one full block of tokens whose first token sits at position `start`.
// `parent` is nullptr for block 0.
BlockHash hash_token_block(const BlockHash* parent, std::span<const int32_t> tokens, int64_t start,
                           const HashExtras& extras);

// Hash block `sub` of trace block `id` (a trace-given identity), chained the
// same way. Extras apply as for token blocks (position = `start`, length `len`).
BlockHash hash_identity_block(const BlockHash* parent, uint64_t id, uint32_t sub, int64_t start,
                              int64_t len, const HashExtras& extras);

// Turns a hash into a short hex string (for reports and debugging).
std::string to_hex(const BlockHash& h);

// Incrementally extended hash chain of one token sequence. Appending tokens
// hashes each block the moment it becomes full; nothing is ever re-hashed.
class BlockHashChain {
 public:
  BlockHashChain() = default;
  BlockHashChain(int32_t block_size, const HashExtras* extras) : block_size_(block_size), extras_(extras) {}

  void reset(int32_t block_size, const HashExtras* extras);
  // Points the chain at (an equal copy of) its extras after the owner moved.
  void set_extras(const HashExtras* extras) { extras_ = extras; }

  // Append token-valued positions.
  void append_tokens(std::span<const int32_t> tokens);
  // Append one token (a decode step's output): inline, hashing only when
  // the block fills.
  void append_token(int32_t token) {
    if (block_size_ <= 0) {
      append_tokens({&token, 1});
      return;
    }
    partial_.push_back(token);
    ++num_tokens_;
    if (static_cast<int32_t>(partial_.size()) == block_size_) complete_block();
  }
  // Append a trace identity covering `len` tokens (Mooncake hash id of a
  // `trace_block_size`-token block). Full engine blocks inside it are hashed
  // from (id, sub-block); a partial tail keeps synthetic tokens derived from
  // (id, position) so that later tokens (decode output) complete it by content.
  void append_identity(uint64_t id, int64_t len);
  // Room for the hashes of a sequence of `tokens` tokens, so appending up to
  // that many allocates nothing more.
  void reserve_tokens(int64_t tokens) {
    if (block_size_ > 0 && tokens > 0) hashes_.reserve(static_cast<size_t>(tokens / block_size_));
  }

  const std::vector<BlockHash>& hashes() const { return hashes_; }
  // Runs of whole engine blocks that one trace identity produced together
  // (aligned, no extras): blocks [first, first+count) are a function of the
  // chain before `first` and the id alone, so if block `first` of two chains
  // is equal, their runs agree up to the shorter count.
  struct Run {
    uint32_t first = 0;
    uint32_t count = 0;
  };
  const std::vector<Run>& runs() const { return runs_; }
  int64_t num_tokens() const { return num_tokens_; }
  int32_t block_size() const { return block_size_; }
  size_t num_full_blocks() const { return hashes_.size(); }

 private:
  void complete_block();
  const BlockHash* parent() const { return hashes_.empty() ? nullptr : &hashes_.back(); }

  int32_t block_size_ = 16;
  const HashExtras* extras_ = nullptr;  // owned by the request; may be null
  static constexpr uint32_t kRunSub = UINT32_MAX;  // sub-block tag of a run's base hash
  std::vector<BlockHash> hashes_;
  std::vector<Run> runs_;
  std::vector<int32_t> partial_;  // tokens of the block being filled
  int64_t num_tokens_ = 0;
};

// The synthetic token at offset `off` of trace block identity `id`: what a
// block straddling identities (or a partial tail) hashes, and what a real
// backend feeds its model at every identity position, so that equal block
// hashes always mean equal model inputs.
inline int32_t identity_token(uint64_t id, int64_t off) {
  return static_cast<int32_t>(mix64(id ^ mix64(static_cast<uint64_t>(off) + 0x7461696cULL)) & 0x7fffffff);
}

}  // namespace prefixsim
