#include "gpu/kv_layout.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "sim/base/error.h"

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

std::vector<int32_t> tile_key_tiles(const PagedBatch& pb, const std::vector<AttnTile>& tiles, int32_t keys_per_tile) {
  if (keys_per_tile < 1) throw InternalError("tile_key_tiles: keys_per_tile < 1");
  std::vector<int32_t> out;
  out.reserve(tiles.size());
  for (const AttnTile& t : tiles) {
    const int64_t q0 = pb.qo_indptr[static_cast<size_t>(t.seq)];
    const int64_t cached = pb.kv_len[static_cast<size_t>(t.seq)] - (pb.qo_indptr[static_cast<size_t>(t.seq) + 1] - q0);
    const int64_t kv_end = cached + (t.q_end - q0);
    out.push_back(static_cast<int32_t>((kv_end + keys_per_tile - 1) / keys_per_tile));
  }
  return out;
}

namespace {
constexpr int64_t kCtaOverheadTiles = 1;  // Q load, pipeline fill and output store of one CTA
constexpr int64_t kMergeTiles = 3;        // the merge kernel: its launch and the fp32 partials' round trip
constexpr double kMinGain = 0.8;          // split only for a predicted saving of 20 % or more

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t max_of(const std::vector<int32_t>& v) {
  int64_t m = 0;
  for (const int32_t x : v) m = std::max<int64_t>(m, x);
  return m;
}
}  // namespace

int64_t predicted_launch_tiles(const std::vector<int32_t>& key_tiles, int64_t kv_heads, int64_t cta_slots,
                               int64_t chunk_tiles) {
  if (key_tiles.empty() || kv_heads <= 0 || cta_slots <= 0) return 0;
  const int64_t max_t = max_of(key_tiles);
  const bool split = chunk_tiles > 0 && chunk_tiles < max_t;
  const int64_t len = split ? chunk_tiles : std::max<int64_t>(max_t, 1);
  // CTA lengths (one per chunk; kv_heads CTAs each), longest first.
  std::vector<int64_t> ctas;
  for (const int32_t t : key_tiles) {
    if (t <= 0) {
      ctas.push_back(kCtaOverheadTiles);
      continue;
    }
    for (int64_t b = 0; b < t; b += len) ctas.push_back(std::min(len, t - b) + kCtaOverheadTiles);
  }
  std::sort(ctas.begin(), ctas.end(), std::greater<>());
  int64_t end = 0;
  if (static_cast<int64_t>(ctas.size()) * kv_heads <= cta_slots) {
    end = ctas.front();  // one wave
  } else {
    // Slot end times, a min-heap; a slot not used yet ends at 0.
    std::vector<int64_t> slots;
    slots.reserve(static_cast<size_t>(cta_slots));
    for (const int64_t c : ctas) {
      for (int64_t h = 0; h < kv_heads; ++h) {
        if (static_cast<int64_t>(slots.size()) < cta_slots) {
          slots.push_back(c);
          std::push_heap(slots.begin(), slots.end(), std::greater<>());
        } else {
          std::pop_heap(slots.begin(), slots.end(), std::greater<>());
          slots.back() += c;
          std::push_heap(slots.begin(), slots.end(), std::greater<>());
        }
      }
    }
    end = *std::max_element(slots.begin(), slots.end());
  }
  return end + (split ? kMergeTiles : 0);
}

KvSplitChoice choose_kv_splits(const std::vector<int32_t>& key_tiles, int64_t kv_heads, int64_t cta_slots) {
  if (key_tiles.empty() || kv_heads <= 0 || cta_slots <= 0) return {};
  const int64_t max_t = max_of(key_tiles);
  int64_t work = 0;
  for (const int32_t t : key_tiles) work += std::max<int32_t>(t, 0);
  work *= kv_heads;
  // Chunks shorter than kMinKvTilesPerSplit spend more on their prologue and
  // partial store than on keys; and when the work spread evenly over the
  // slots is already as long as the longest tile, nothing is gained.
  const int64_t min_len = std::max<int64_t>(kMinKvTilesPerSplit, ceil_div(max_t, kMaxKvSplits));
  if (std::max(min_len, ceil_div(work, cta_slots)) >= max_t) return {};
  const int64_t unsplit = predicted_launch_tiles(key_tiles, kv_heads, cta_slots, 0);
  const auto worth = static_cast<int64_t>(kMinGain * static_cast<double>(unsplit));  // slowest split kept
  int64_t best_len = 0, best = unsplit;
  int64_t prev = -1;
  for (int64_t k = 2; k <= kMaxKvSplits; ++k) {
    const int64_t len = ceil_div(max_t, k);
    if (len < min_len) break;
    if (len == prev) continue;
    prev = len;
    // No launch beats its work spread evenly over the slots; that bound only
    // grows as the chunks shorten (more CTAs, each with its fixed cost), so
    // once it loses, every shorter chunk loses too.
    int64_t ctas = 0;
    for (const int32_t t : key_tiles) ctas += std::max<int64_t>(ceil_div(t, len), 1);
    if (ceil_div(work + ctas * kv_heads * kCtaOverheadTiles, cta_slots) + kMergeTiles > std::min(best - 1, worth)) break;
    const int64_t t = predicted_launch_tiles(key_tiles, kv_heads, cta_slots, len);
    if (t < best) {  // strict: the longest chunks among equals (fewer partials to merge)
      best = t;
      best_len = len;
    }
  }
  if (best_len == 0 || static_cast<double>(best) > kMinGain * static_cast<double>(unsplit)) return {};
  return {static_cast<int32_t>(best_len), static_cast<int32_t>(ceil_div(max_t, best_len))};
}

KvSplitChoice forced_kv_splits(const std::vector<int32_t>& key_tiles, int32_t n) {
  const int64_t max_t = max_of(key_tiles);
  if (n <= 1 || max_t <= 1) return {};
  const int64_t len = ceil_div(max_t, n);
  const int64_t chunks = ceil_div(max_t, len);
  if (chunks <= 1) return {};
  return {static_cast<int32_t>(len), static_cast<int32_t>(chunks)};
}

std::vector<KvChunk> kv_split_chunks(const std::vector<int32_t>& key_tiles, int32_t chunk_tiles) {
  if (chunk_tiles < 1) throw InternalError("kv_split_chunks: chunk_tiles < 1");
  std::vector<std::pair<int32_t, KvChunk>> by_len;  // (key tiles the chunk walks, chunk)
  for (size_t i = key_tiles.size(); i-- > 0;) {    // later tiles first, as the single pass
    const int32_t t = key_tiles[i];
    for (int32_t c = 0; static_cast<int64_t>(c) * chunk_tiles < t; ++c)
      by_len.push_back({std::min(chunk_tiles, t - c * chunk_tiles), {static_cast<int32_t>(i), c}});
  }
  std::stable_sort(by_len.begin(), by_len.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<KvChunk> out;
  out.reserve(by_len.size());
  for (const auto& [len, chunk] : by_len) out.push_back(chunk);
  return out;
}

}  // namespace prefixsim::gpu
