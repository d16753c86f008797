#include "gpu/kv_layout.h"

#include <algorithm>
#include <limits>
#include <string>

#include "sim/error.h"

namespace prefixsim::gpu {

void KvPoolLayout::validate() const {
  auto need = [](bool ok, const char* what) {
    if (!ok) throw InputError(std::string("KV pool layout: ") + what);
  };
  need(num_blocks >= 1, "num_blocks must be >= 1");
  need(block_size >= 1, "block_size must be >= 1");
  need(num_kv_heads >= 1, "kv_heads must be >= 1");
  need(head_dim >= 1, "head_dim must be >= 1");
  need(num_layers >= 1, "layers must be >= 1");
  need(dtype_bytes == 1 || dtype_bytes == 2 || dtype_bytes == 4, "dtype_bytes must be 1, 2 or 4");
  // Slots are addressed with int64 but block ids are int32.
  need(num_blocks <= std::numeric_limits<int32_t>::max(), "num_blocks exceeds int32");
}

int64_t blocks_that_fit(int64_t kv_bytes, const KvPoolLayout& shape) {
  const int64_t per = shape.bytes_per_block();
  if (per <= 0) throw InputError("KV pool layout: bytes per block must be positive");
  return kv_bytes <= 0 ? 0 : kv_bytes / per;
}

PagedBatch export_paged_batch(const Batch& batch, int32_t block_size, int64_t num_blocks) {
  if (block_size < 1) throw InternalError("export_paged_batch: block_size < 1");
  PagedBatch pb;
  pb.block_size = block_size;
  int64_t rows = 0, pages = 0;
  for (size_t b = 0; b < batch.seqs.size(); ++b) {
    const ScheduledSeq& s = batch.seqs[b];
    if (s.num_new_tokens < 0 || s.num_computed_tokens < 0)
      throw InternalError("export_paged_batch: negative token count in sequence " + std::to_string(b));
    const int64_t kv_len = s.num_computed_tokens + s.num_new_tokens;
    const int64_t need = (kv_len + block_size - 1) / block_size;
    if (static_cast<int64_t>(s.block_table.size()) < need)
      throw InternalError("export_paged_batch: sequence " + std::to_string(b) + " has " +
                          std::to_string(s.block_table.size()) + " blocks for " + std::to_string(kv_len) +
                          " tokens");
    if (kv_len > std::numeric_limits<int32_t>::max() || rows + s.num_new_tokens > std::numeric_limits<int32_t>::max())
      throw InternalError("export_paged_batch: step too large for int32 indices");
    for (int64_t i = 0; i < need; ++i) {
      const BlockId id = s.block_table[static_cast<size_t>(i)];
      if (id < 0 || id >= num_blocks)
        throw InternalError("export_paged_batch: block id " + std::to_string(id) + " out of range");
      pb.kv_indices.push_back(id);
    }
    for (int64_t j = 0; j < s.num_new_tokens; ++j) {
      const int64_t pos = s.num_computed_tokens + j;
      const int64_t block = s.block_table[static_cast<size_t>(pos / block_size)];
      pb.positions.push_back(static_cast<int32_t>(pos));
      pb.slot_mapping.push_back(block * block_size + pos % block_size);
    }
    rows += s.num_new_tokens;
    pages += need;
    pb.qo_indptr.push_back(static_cast<int32_t>(rows));
    pb.kv_indptr.push_back(static_cast<int32_t>(pages));
    pb.kv_len.push_back(static_cast<int32_t>(kv_len));
    pb.kv_last_page_len.push_back(kv_len == 0 ? 0 : static_cast<int32_t>(kv_len - (need - 1) * block_size));
  }
  return pb;
}

std::vector<AttnTile> plan_attention_tiles(const PagedBatch& pb, int32_t q_per_tile) {
  if (q_per_tile < 1) throw InternalError("plan_attention_tiles: q_per_tile < 1");
  std::vector<AttnTile> tiles;
  for (int64_t b = 0; b < pb.num_seqs(); ++b) {
    for (int32_t q = pb.qo_indptr[b]; q < pb.qo_indptr[b + 1]; q += q_per_tile)
      tiles.push_back({static_cast<int32_t>(b), q, std::min(q + q_per_tile, pb.qo_indptr[b + 1])});
  }
  return tiles;
}

int32_t max_tile_kv_end(const PagedBatch& pb, const std::vector<AttnTile>& tiles) {
  int32_t most = 0;
  for (const AttnTile& t : tiles) {
    const int32_t q0 = pb.qo_indptr[static_cast<size_t>(t.seq)];
    const int32_t cached = pb.kv_len[static_cast<size_t>(t.seq)] - (pb.qo_indptr[static_cast<size_t>(t.seq) + 1] - q0);
    most = std::max(most, cached + (t.q_end - q0));
  }
  return most;
}

namespace {
// The wave model, in units of one CTA walking one key tile: CTAs run in waves
// of cta_slots and a wave lasts as long as its longest CTA.
constexpr int64_t kCtaOverheadTiles = 1;  // Q load, pipeline fill and output store of one CTA
constexpr int64_t kMergeTiles = 3;        // the merge kernel: its launch and the fp32 partials' round trip
constexpr double kMinGain = 0.8;          // split only for a predicted saving of 20 % or more

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t predicted_launch_tiles(int64_t ctas, int64_t max_kv_tiles, int64_t cta_slots, int64_t splits) {
  const int64_t waves = ceil_div(ctas * splits, cta_slots);
  const int64_t longest_cta = ceil_div(max_kv_tiles, splits) + kCtaOverheadTiles;
  return waves * longest_cta + (splits > 1 ? kMergeTiles : 0);
}
}  // namespace

int32_t choose_kv_splits(int64_t ctas, int64_t max_kv_tiles, int64_t cta_slots) {
  if (ctas <= 0 || cta_slots <= 0 || ctas >= cta_slots) return 1;  // the grid already fills every slot
  // Chunks shorter than kMinKvTilesPerSplit spend more on their prologue and
  // partial store than on keys.
  const int64_t max_splits = std::min<int64_t>(kMaxKvSplits, max_kv_tiles / kMinKvTilesPerSplit);
  const int64_t unsplit = predicted_launch_tiles(ctas, max_kv_tiles, cta_slots, 1);
  int64_t best = 1, best_tiles = unsplit;
  for (int64_t s = 2; s <= max_splits; ++s) {
    const int64_t tiles = predicted_launch_tiles(ctas, max_kv_tiles, cta_slots, s);
    if (tiles < best_tiles) {  // strict: the fewest splits among equals (less to merge)
      best = s;
      best_tiles = tiles;
    }
  }
  return static_cast<double>(best_tiles) <= kMinGain * static_cast<double>(unsplit) ? static_cast<int32_t>(best) : 1;
}

}  // namespace prefixsim::gpu
