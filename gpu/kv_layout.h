// Host-side planning for a real prefill step: the paged KV pool layout of
// vLLM, its size, and the export of a sim Batch into the flat arrays the
// kernels read (the three-array block-table form of FlashInfer / vLLM:
// indptr, indices, last_page_len, plus the slot of every new token).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/batch.h"

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

// Key tiles of keys_per_tile keys each that every tile of the plan walks
// (ceil of the keys its last query sees), in plan order.
std::vector<int32_t> tile_key_tiles(const PagedBatch& pb, const std::vector<AttnTile>& tiles, int32_t keys_per_tile);

// Split-KV (flash-decoding) of an attention launch: every tile's key range
// is cut into chunks of the same length, chunk_tiles key tiles (the last
// chunk of a tile shorter), one CTA per (KV head, chunk), whose fp32
// partials a second kernel merges. A tile of T key tiles gets
// ceil(T / chunk_tiles) chunks: a long context among short ones is spread
// over the GPU while the short ones stay whole. chunks = ceil(max T /
// chunk_tiles), the most partials a row has; chunks = 1 (chunk_tiles 0) is
// the single pass, no merge.
struct KvSplitChoice {
  int32_t chunk_tiles = 0;
  int32_t chunks = 1;
  bool split() const { return chunks > 1; }
};
inline constexpr int32_t kMinKvTilesPerSplit = 4;  // 256 keys of K2's 64-key tiles
inline constexpr int32_t kMaxKvSplits = 64;        // chunks of the longest tile at most

// The automatic choice for a launch of kv_heads CTAs per tile whose tiles
// walk key_tiles[i] key tiles (plan order), on a GPU holding cta_slots CTAs
// at once. With W = kv_heads x sum key_tiles: no split when
// max(kMinKvTilesPerSplit, ceil(W / cta_slots)) >= max key_tiles (the
// launch is long enough for every slot, prefill); otherwise each chunk
// length ceil(max T / k), k = 2..kMaxKvSplits chunks of the longest tile, at
// least kMinKvTilesPerSplit, is timed with predicted_launch_tiles and the
// fastest kept if it saves 20 % or more over the single pass.
KvSplitChoice choose_kv_splits(const std::vector<int32_t>& key_tiles, int64_t kv_heads, int64_t cta_slots);
// n chunks forced (tests, bench): chunk_tiles = ceil(max T / n); a single
// pass when that leaves one chunk (n = 1, or a longest tile of one key tile).
KvSplitChoice forced_kv_splits(const std::vector<int32_t>& key_tiles, int32_t n);

// The wave model behind the choice, in units of one CTA walking one key tile:
// each tile's chunks of chunk_tiles (chunk_tiles >= max T or 0: the single
// pass, one CTA per tile and KV head) cost their key tiles plus a fixed 1
// (Q load, pipeline fill, output store); CTAs, longest first, start on the
// slot that frees first (cta_slots of them); the launch lasts until the last
// ends, plus 3 for the merge when split.
int64_t predicted_launch_tiles(const std::vector<int32_t>& key_tiles, int64_t kv_heads, int64_t cta_slots,
                               int64_t chunk_tiles);

// The work items of a split launch: (tile in plan order, chunk index) for
// every non-empty chunk, longest chunk first (ties: later tiles of the plan
// first, as the single pass launches them). Chunk c of tile i walks key
// tiles [c L, min((c + 1) L, key_tiles[i])).
struct KvChunk {
  int32_t tile;
  int32_t chunk;
};
std::vector<KvChunk> kv_split_chunks(const std::vector<int32_t>& key_tiles, int32_t chunk_tiles);

}  // namespace prefixsim::gpu
