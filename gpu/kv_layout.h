// Host-side planning for a real prefill step: the paged KV pool layout of
// vLLM, its size, and the export of a sim Batch into the flat arrays the
// kernels read (the three-array block-table form of FlashInfer / vLLM:
// indptr, indices, last_page_len, plus the slot of every new token).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/batch.h"

namespace prefixsim::gpu {

// vLLM's paged layout: per layer, a K and a V tensor, each
// [num_blocks, block_size, kv_heads, head_dim] in bf16. The pool keeps them
// as one allocation ordered [layer][K|V][block][slot][head][dim].
struct KvPoolLayout {
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  int64_t num_kv_heads = 0;  // per tensor-parallel shard
  int64_t head_dim = 0;
  int64_t num_layers = 0;
  int64_t dtype_bytes = 2;   // bf16

  // Elements of one block of one tensor (K or V of one layer).
  int64_t block_elems() const { return block_size * num_kv_heads * head_dim; }
  // Elements of one tensor (K or V of one layer) over all blocks.
  int64_t tensor_elems() const { return num_blocks * block_elems(); }
  // DESIGN.md: 2 * block_size * kv_heads * head_dim * dtype_bytes * layers.
  int64_t bytes_per_block() const { return 2 * block_elems() * dtype_bytes * num_layers; }
  int64_t pool_bytes() const { return bytes_per_block() * num_blocks; }
  int64_t pool_elems() const { return 2 * num_layers * tensor_elems(); }
  // Element offset of (layer, kv: 0 = K / 1 = V, block, slot in block, head, dim).
  int64_t offset(int64_t layer, int kv, int64_t block, int64_t slot, int64_t head, int64_t dim) const {
    return (((((layer * 2 + kv) * num_blocks + block) * block_size + slot) * num_kv_heads + head) * head_dim) + dim;
  }
  // Throws InputError when a field is out of range.
  void validate() const;
};

// As many blocks as fit in `kv_bytes` (floor), at least 0.
int64_t blocks_that_fit(int64_t kv_bytes, const KvPoolLayout& per_block_shape);

// A Batch flattened for the kernels. Sequence b has kv_len[b] =
// num_computed_tokens + num_new_tokens tokens of context, stored in pages
// kv_indices[kv_indptr[b] .. kv_indptr[b+1]); the last page holds
// kv_last_page_len[b] of them (1..block_size; 0 only for an empty context).
// Its new tokens are rows qo_indptr[b] .. qo_indptr[b+1] of the step.
struct PagedBatch {
  int32_t block_size = 0;
  std::vector<int32_t> qo_indptr{0};
  std::vector<int32_t> kv_indptr{0};
  std::vector<int32_t> kv_indices;
  std::vector<int32_t> kv_last_page_len;
  std::vector<int32_t> kv_len;
  // Per new token of the step (row order): its position in its sequence, and
  // the pool slot (block * block_size + offset) its K/V is written to.
  std::vector<int32_t> positions;
  std::vector<int64_t> slot_mapping;

  int64_t num_seqs() const { return static_cast<int64_t>(kv_len.size()); }
  int64_t num_tokens() const { return qo_indptr.back(); }
};

// Flattens `batch`. Each block table must cover its context (extra trailing
// blocks are ignored, as vLLM's model runner does) and hold ids in
// [0, num_blocks); otherwise InternalError.
PagedBatch export_paged_batch(const Batch& batch, int32_t block_size, int64_t num_blocks);

// Work items of the attention kernel: one per (sequence, tile of up to
// q_per_tile consecutive new tokens).
struct AttnTile {
  int32_t seq = 0;
  int32_t q_begin = 0;  // row in the step (absolute, not relative to the sequence)
  int32_t q_end = 0;
};
std::vector<AttnTile> plan_attention_tiles(const PagedBatch& pb, int32_t q_per_tile);

// Keys seen by the last query of the tile that sees the most (causal, bottom
// right): the longest key range any CTA of the plan walks. 0 for no tiles.
int32_t max_tile_kv_end(const PagedBatch& pb, const std::vector<AttnTile>& tiles);

// Split-KV (flash-decoding) choice for an attention launch of `ctas` CTAs
// (KV heads x query tiles) whose longest tile reads `max_kv_tiles` key tiles,
// on a GPU holding `cta_slots` CTAs at once: into how many chunks of whole key
// tiles each tile's key range is cut (1 = single pass, no merge). Decode and
// short queries over long contexts give a few CTAs each walking the whole
// context while most SMs idle; splitting trades that for a merge of fp32
// partials. Chosen by a wave model of the launch (kv_layout.cpp).
int32_t choose_kv_splits(int64_t ctas, int64_t max_kv_tiles, int64_t cta_slots);
inline constexpr int32_t kMinKvTilesPerSplit = 4;  // 256 keys of K2's 64-key tiles
inline constexpr int32_t kMaxKvSplits = 64;

}  // namespace prefixsim::gpu
