// Host-side planning of the GPU backend: KV pool layout and sizing, the
// block-table export, slot mapping, attention tiling, bf16 conversion and the
// model shapes. Everything here is checked against values worked out by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "gpu/hd.h"
#include "gpu/kv_layout.h"
#include "gpu/model_shape.h"
#include "sim/base/error.h"

using namespace prefixsim;
using namespace prefixsim::gpu;

TEST_CASE("KV pool bytes per block are 2 x block x kv_heads x head_dim x 2 bytes x layers", "[gpu][layout]") {
  const ModelShape& m8 = *find_model_shape("llama-3.1-8b");
  KvPoolLayout l8{1000, 16, m8.kv_heads, m8.head_dim, m8.layers, 2};
  CHECK(l8.bytes_per_block() == 2LL * 16 * 8 * 128 * 2 * 32);  // 2 MiB
  CHECK(l8.bytes_per_block() == 2 * 1024 * 1024);
  CHECK(l8.pool_bytes() == 1000LL * 2 * 1024 * 1024);
  CHECK(l8.pool_elems() * 2 == l8.pool_bytes());

  const ModelShape& m70 = *find_model_shape("llama-3.1-70b-tp4");
  KvPoolLayout l70{1, 32, m70.kv_heads, m70.head_dim, m70.layers, 2};
  CHECK(l70.bytes_per_block() == 2LL * 32 * 2 * 128 * 2 * 80);
  // 80 GiB of KV memory at block 16 on the 8B model: 40960 blocks.
  CHECK(blocks_that_fit(80LL << 30, KvPoolLayout{0, 16, 8, 128, 32, 2}) == 40960);
  CHECK(blocks_that_fit((2LL << 20) - 1, KvPoolLayout{0, 16, 8, 128, 32, 2}) == 0);
}

TEST_CASE("The pool behind a block manager takes its block count and size and the model's KV shape", "[gpu][layout]") {
  const KvPoolLayout l = pool_layout_for(1025, 32, *find_model_shape("llama-3.1-70b-tp4"));
  CHECK((l.num_blocks == 1025 && l.block_size == 32 && l.num_kv_heads == 2 && l.head_dim == 128 &&
         l.num_layers == 80 && l.dtype_bytes == 2));
  CHECK(l.pool_bytes() == 1025LL * 2 * 32 * 2 * 128 * 2 * 80);
  CHECK_THROWS_AS(pool_layout_for(0, 16, *find_model_shape("llama-3.1-8b")), InputError);
}

TEST_CASE("KV pool offsets follow [layer][K|V][block][slot][head][dim]", "[gpu][layout]") {
  KvPoolLayout l{5, 4, 3, 2, 2, 2};
  CHECK(l.offset(0, 0, 0, 0, 0, 0) == 0);
  CHECK(l.offset(0, 0, 0, 0, 0, 1) == 1);
  CHECK(l.offset(0, 0, 0, 0, 1, 0) == 2);
  CHECK(l.offset(0, 0, 0, 1, 0, 0) == 6);
  CHECK(l.offset(0, 0, 1, 0, 0, 0) == 24);
  CHECK(l.offset(0, 1, 0, 0, 0, 0) == 120);  // V follows all K blocks of the layer
  CHECK(l.offset(1, 0, 0, 0, 0, 0) == 240);
  CHECK(l.offset(1, 1, 4, 3, 2, 1) == l.pool_elems() - 1);
  l.block_size = 0;
  CHECK_THROWS_AS(l.validate(), InputError);
}

TEST_CASE("Block tables export as indptr, indices and last page length, with slots for new tokens", "[gpu][layout]") {
  // Sequence A: 5 tokens cached, 7 new, block size 4 -> 12 tokens in blocks
  // 9, 2, 7 (the fourth block of its table is not needed yet). Sequence B: a
  // fresh one-token prompt in block 4.
  const std::vector<BlockId> ta{9, 2, 7, 11}, tb{4};
  Batch batch;
  batch.seqs.push_back({7, 5, ta});
  batch.seqs.push_back({1, 0, tb});
  const PagedBatch pb = export_paged_batch(batch, 4, 12);
  CHECK(pb.qo_indptr == std::vector<int32_t>{0, 7, 8});
  CHECK(pb.kv_indptr == std::vector<int32_t>{0, 3, 4});
  CHECK(pb.kv_indices == std::vector<int32_t>{9, 2, 7, 4});
  CHECK(pb.kv_last_page_len == std::vector<int32_t>{4, 1});
  CHECK(pb.kv_len == std::vector<int32_t>{12, 1});
  CHECK(pb.positions == std::vector<int32_t>{5, 6, 7, 8, 9, 10, 11, 0});
  // pos 5..7 -> block 2 offsets 1..3; pos 8..11 -> block 7 offsets 0..3; B pos 0 -> block 4.
  CHECK(pb.slot_mapping == std::vector<int64_t>{9, 10, 11, 28, 29, 30, 31, 16});
  CHECK(pb.num_tokens() == 8);
  CHECK(pb.num_seqs() == 2);
}

TEST_CASE("Last page length is the context modulo the block size, a full block when it divides", "[gpu][layout]") {
  const std::vector<BlockId> t{1, 2, 3};
  for (int64_t len : {1, 15, 16, 17, 31, 32, 33, 48}) {
    Batch b;
    b.seqs.push_back({len - len / 2, len / 2, t});
    const PagedBatch pb = export_paged_batch(b, 16, 4);
    CHECK(pb.kv_indptr.back() == (len + 15) / 16);
    CHECK(pb.kv_last_page_len[0] == (len % 16 == 0 ? 16 : len % 16));
  }
}

TEST_CASE("Block-table export rejects short tables and out-of-range block ids", "[gpu][layout]") {
  const std::vector<BlockId> two{1, 2}, bad{1, 9};
  Batch b;
  b.seqs.push_back({9, 0, two});  // 9 tokens need 3 blocks of 4
  CHECK_THROWS_AS(export_paged_batch(b, 4, 8), InternalError);
  b.seqs[0] = {8, 0, bad};
  CHECK_THROWS_AS(export_paged_batch(b, 4, 8), InternalError);
  b.seqs[0] = {8, 0, two};
  CHECK_NOTHROW(export_paged_batch(b, 4, 8));
}

TEST_CASE("Attention tiles cover each sequence's new tokens without crossing sequences", "[gpu][layout]") {
  const std::vector<BlockId> t(8, 1);
  Batch b;
  b.seqs.push_back({5, 3, t});
  b.seqs.push_back({0, 4, t});  // nothing new: no tile
  b.seqs.push_back({2, 0, t});
  const auto tiles = plan_attention_tiles(export_paged_batch(b, 4, 2), 2);
  REQUIRE(tiles.size() == 4);
  CHECK((tiles[0].seq == 0 && tiles[0].q_begin == 0 && tiles[0].q_end == 2));
  CHECK((tiles[1].seq == 0 && tiles[1].q_begin == 2 && tiles[1].q_end == 4));
  CHECK((tiles[2].seq == 0 && tiles[2].q_begin == 4 && tiles[2].q_end == 5));
  CHECK((tiles[3].seq == 2 && tiles[3].q_begin == 5 && tiles[3].q_end == 7));
}

TEST_CASE("Key tiles per attention tile are the keys its last query sees, in whole tiles", "[gpu][layout]") {
  const std::vector<BlockId> t(8, 1);
  Batch b;
  b.seqs.push_back({5, 3, t});  // tiles of 2: keys seen by their last queries 5, 7, 8
  b.seqs.push_back({0, 4, t});
  b.seqs.push_back({2, 0, t});  // 2
  const PagedBatch pb = export_paged_batch(b, 4, 2);
  CHECK(tile_key_tiles(pb, plan_attention_tiles(pb, 2), 4) == std::vector<int32_t>{2, 2, 2, 1});
  CHECK(tile_key_tiles(pb, plan_attention_tiles(pb, 2), 1) == std::vector<int32_t>{5, 7, 8, 2});
  CHECK(tile_key_tiles(pb, {}, 64).empty());
}

namespace {
// The H100 figures: 132 SMs x 2 resident K2 CTAs = 264 slots; llama-3.1-8b
// has 8 KV heads and a GQA group of 4, so a K2 tile holds 32 tokens.
constexpr int64_t kSlots = 264, kHeads8b = 8;
std::vector<int32_t> uniform(size_t tiles, int32_t key_tiles) { return std::vector<int32_t>(tiles, key_tiles); }
// The key tiles of a prefill of n tokens after c cached ones, in 32-token tiles of 64-key tiles.
std::vector<int32_t> prefill_tiles(int32_t n, int32_t c) {
  std::vector<int32_t> v;
  for (int32_t q = 0; q < n; q += 32) v.push_back((c + std::min(q + 32, n) + 63) / 64);
  return v;
}
// ceil(T / L) chunks of the tile of T key tiles.
int32_t chunks_of(int32_t t, const KvSplitChoice& c) { return c.split() ? (t + c.chunk_tiles - 1) / c.chunk_tiles : 1; }
}  // namespace

TEST_CASE("Split-KV cuts a lone decode's or short query's long context into chunks that fill the GPU once",
          "[gpu][layout]") {
  // One decode at 8192 (129 key tiles): 33 chunks of 4 key tiles, 264 CTAs.
  KvSplitChoice c = choose_kv_splits({129}, kHeads8b, kSlots);
  CHECK((c.chunk_tiles == 4 && c.chunks == 33));
  // 32 new tokens after 16384: 33 chunks of 8.
  c = choose_kv_splits({257}, kHeads8b, kSlots);
  CHECK((c.chunk_tiles == 8 && c.chunks == 33));
  // 8 decodes at 8192: 4 chunks of 33 each, 256 CTAs.
  c = choose_kv_splits(uniform(8, 129), kHeads8b, kSlots);
  CHECK((c.chunk_tiles == 33 && c.chunks == 4));
  // One decode at 2048: 9 chunks of 4 key tiles (the last of 1).
  c = choose_kv_splits({33}, kHeads8b, kSlots);
  CHECK((c.chunk_tiles == 4 && c.chunks == 9));
  // llama-3.1-70b at TP 4 (2 KV heads): a decode at 32768 (513 key tiles)
  // stops at 64 chunks.
  c = choose_kv_splits({513}, 2, kSlots);
  CHECK((c.chunk_tiles == 9 && c.chunks == 57));
}

TEST_CASE("Split-KV spreads one long context of an uneven decode batch and leaves the short ones whole",
          "[gpu][layout]") {
  // 27 decodes at ~9.6k (150 key tiles) and one at ~60k (940): 224 CTAs
  // under 264 slots, one of them walking 940 tiles while the rest finish
  // after 150. A uniform cut into S chunks gains nothing; a chunk length
  // near the short contexts' length does.
  std::vector<int32_t> tiles = uniform(27, 150);
  tiles.insert(tiles.begin() + 11, 940);
  const KvSplitChoice c = choose_kv_splits(tiles, kHeads8b, kSlots);
  INFO("chunk length " << c.chunk_tiles << ", chunks " << c.chunks);
  REQUIRE(c.split());
  CHECK(c.chunk_tiles >= 150);
  CHECK(c.chunk_tiles <= 200);
  CHECK((c.chunks >= 5 && c.chunks <= 7));
  CHECK(chunks_of(150, c) == 1);
  CHECK(chunks_of(940, c) == c.chunks);
  CHECK((c.chunk_tiles == 157 && c.chunks == 6));  // 6 x 8 + 27 x 8 = 264 CTAs: one wave of at most 158
  CHECK(predicted_launch_tiles(tiles, kHeads8b, kSlots, 0) == 941);
  CHECK(predicted_launch_tiles(tiles, kHeads8b, kSlots, 157) == 158 + 3);
  // The chunk list: the long tile's chunks first (five of 157, its last of
  // 155), then the 27 whole short tiles.
  const std::vector<KvChunk> list = kv_split_chunks(tiles, c.chunk_tiles);
  REQUIRE(list.size() == 27 + 6);
  for (int i = 0; i < 6; ++i) CHECK((list[static_cast<size_t>(i)].tile == 11 && list[static_cast<size_t>(i)].chunk == i));
  for (size_t i = 6; i < list.size(); ++i) CHECK((list[i].tile != 11 && list[i].chunk == 0));

  // The same long context among more short ones than the GPU holds at once
  // (808 CTAs > 264 slots) still gains: its chunks run beside the waves of
  // short ones instead of after them (and shorter chunks even out the waves).
  std::vector<int32_t> many = uniform(100, 150);
  many.push_back(940);
  const KvSplitChoice m = choose_kv_splits(many, kHeads8b, kSlots);
  INFO("many: chunk length " << m.chunk_tiles << ", chunks " << m.chunks);
  CHECK(m.split());
  CHECK(predicted_launch_tiles(many, kHeads8b, kSlots, m.chunk_tiles) < 600);
  CHECK(predicted_launch_tiles(many, kHeads8b, kSlots, 0) == 941);
  // And among so many that the short ones alone outlast it: single pass.
  std::vector<int32_t> lots = uniform(400, 150);
  lots.push_back(940);
  CHECK(!choose_kv_splits(lots, kHeads8b, kSlots).split());
}

TEST_CASE("Split-KV leaves prefills, full grids, short contexts and small gains single-pass", "[gpu][layout]") {
  CHECK(!choose_kv_splits(prefill_tiles(8192, 0), kHeads8b, kSlots).split());     // big prefill
  CHECK(!choose_kv_splits(prefill_tiles(4096, 0), kHeads8b, kSlots).split());
  CHECK(!choose_kv_splits(prefill_tiles(2048, 16384), kHeads8b, kSlots).split());
  CHECK(!choose_kv_splits(prefill_tiles(512, 0), kHeads8b, kSlots).split());      // 2 chunks save < 20 %
  CHECK(!choose_kv_splits(uniform(32, 129), kHeads8b, kSlots).split());           // 32 decodes at 8192 fill the slots
  CHECK(!choose_kv_splits(uniform(256, 16), kHeads8b, kSlots).split());           // 256 decodes at 1024
  CHECK(!choose_kv_splits({9}, kHeads8b, kSlots).split());                        // one decode at 513
  CHECK(!choose_kv_splits({7}, kHeads8b, kSlots).split());                        // fewer keys than two chunks
  CHECK(!choose_kv_splits({}, kHeads8b, kSlots).split());                         // no tiles
  CHECK(choose_kv_splits(prefill_tiles(512, 2048), kHeads8b, kSlots).split());    // 16 tiles of 33..40 key tiles
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t heads = 1 + rng() % 8;
    std::vector<int32_t> tiles(1 + rng() % 60);
    for (int32_t& t : tiles) t = 1 + static_cast<int32_t>(rng() % (trial % 2 ? 1200 : 200));
    const KvSplitChoice c = choose_kv_splits(tiles, heads, kSlots);
    const int32_t max_t = *std::max_element(tiles.begin(), tiles.end());
    INFO("trial " << trial << ": " << tiles.size() << " tiles up to " << max_t << " key tiles, " << heads
                  << " heads -> chunks of " << c.chunk_tiles << " x " << c.chunks);
    REQUIRE((c.chunks >= 1 && c.chunks <= kMaxKvSplits));
    if (!c.split()) continue;
    CHECK(c.chunk_tiles >= kMinKvTilesPerSplit);  // every chunk but a tile's last keeps the minimum
    CHECK(c.chunks == (max_t + c.chunk_tiles - 1) / c.chunk_tiles);
    CHECK(c.chunk_tiles < max_t);
    // What it picked is predicted 20 % faster than the single pass.
    CHECK(predicted_launch_tiles(tiles, heads, kSlots, c.chunk_tiles) <=
          0.8 * predicted_launch_tiles(tiles, heads, kSlots, 0));
    // The chunk list covers every key tile of every tile once.
    std::vector<int64_t> covered(tiles.size(), 0);
    for (const KvChunk& k : kv_split_chunks(tiles, c.chunk_tiles)) {
      const int32_t t = tiles[static_cast<size_t>(k.tile)];
      REQUIRE(static_cast<int64_t>(k.chunk) * c.chunk_tiles < t);
      covered[static_cast<size_t>(k.tile)] += std::min(c.chunk_tiles, t - k.chunk * c.chunk_tiles);
    }
    for (size_t i = 0; i < tiles.size(); ++i) CHECK(covered[i] == tiles[i]);
  }
}

TEST_CASE("Forced split-KV cuts the longest tile into n chunks and the others into chunks as long", "[gpu][layout]") {
  KvSplitChoice c = forced_kv_splits({129, 10}, 2);
  CHECK((c.chunk_tiles == 65 && c.chunks == 2));
  c = forced_kv_splits({129}, 64);  // chunks of 3 key tiles: 43 of them
  CHECK((c.chunk_tiles == 3 && c.chunks == 43));
  c = forced_kv_splits({5, 2, 9}, 3);
  CHECK((c.chunk_tiles == 3 && c.chunks == 3));
  CHECK(!forced_kv_splits({1, 1}, 64).split());  // one key tile: nothing to cut
  CHECK(!forced_kv_splits({129}, 1).split());
  // Longest chunks first; ties: later tiles of the plan first.
  const std::vector<KvChunk> list = kv_split_chunks({5, 2, 9}, 4);
  const std::vector<std::pair<int32_t, int32_t>> want{{2, 0}, {2, 1}, {0, 0}, {1, 0}, {2, 2}, {0, 1}};
  REQUIRE(list.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK((list[i].tile == want[i].first && list[i].chunk == want[i].second));
}

TEST_CASE("bf16 conversion rounds to nearest even and round-trips every bf16 value", "[gpu][bf16]") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(bits_f32(0x3f808000u)) == 0x3f80);  // tie, even stays
  CHECK(f32_to_bf16(bits_f32(0x3f818000u)) == 0x3f82);  // tie, odd rounds up
  CHECK(f32_to_bf16(bits_f32(0x3f808001u)) == 0x3f81);  // above the tie
  CHECK(f32_to_bf16(bits_f32(0x3f807fffu)) == 0x3f80);  // below the tie
  CHECK(f32_to_bf16(-2.0f) == 0xc000);
  CHECK(f32_to_bf16(bits_f32(0x7f7fffffu)) == 0x7f80);  // FLT_MAX overflows to +inf
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(f32_to_bf16(f) == h);
  }
}

TEST_CASE("Random weights are deterministic, in [-1, 1) and bf16-exact", "[gpu][model]") {
  const ModelShape& s = *find_model_shape("llama-3.1-8b");
  const uint64_t st = weight_seed(7, 3, Tensor::kQkv);
  CHECK(st != weight_seed(7, 4, Tensor::kQkv));
  CHECK(st != weight_seed(7, 3, Tensor::kO));
  double sum = 0;
  for (uint64_t i = 0; i < 4096; ++i) {
    const float u = hash_uniform(st, i);
    REQUIRE(u >= -1.0f);
    REQUIRE(u < 1.0f);
    sum += u;
    const float w = weight_value(s, st, Tensor::kQkv, i);
    REQUIRE(w == round_bf16(w));
    REQUIRE(std::fabs(w) <= 1.0f / 64.0f);  // 1/sqrt(4096)
  }
  CHECK(std::fabs(sum / 4096) < 0.05);
  CHECK(hash_uniform(st, 17) == hash_uniform(st, 17));
}

TEST_CASE("Model shapes match Llama 3.1 8B and a TP=4 shard of 70B", "[gpu][model]") {
  const ModelShape* a = find_model_shape("llama-3.1-8b");
  REQUIRE(a != nullptr);
  CHECK((a->layers == 32 && a->hidden == 4096 && a->heads == 32 && a->kv_heads == 8 && a->head_dim == 128 &&
         a->intermediate == 14336));
  const ModelShape* b = find_model_shape("llama-3.1-70b-tp4");
  REQUIRE(b != nullptr);
  CHECK((b->layers == 80 && b->hidden == 8192 && b->heads == 16 && b->kv_heads == 2 && b->intermediate == 7168));
  CHECK(find_model_shape("gpt-2") == nullptr);
  CHECK_NOTHROW(a->validate());
  ModelShape bad = *a;
  bad.kv_heads = 5;
  CHECK_THROWS_AS(bad.validate(), InputError);
}

TEST_CASE("RoPE frequencies follow theta^(-2i/d), with Llama 3.1 scaling of the low frequencies", "[gpu][model]") {
  ModelShape s = *find_model_shape("llama-3.1-8b");
  s.llama3_rope_scaling = false;
  const auto plain = rope_inv_freq(s);
  REQUIRE(plain.size() == 64);
  CHECK(plain[0] == 1.0f);
  CHECK(plain[10] == Approx(std::pow(500000.0, -20.0 / 128)).epsilon(1e-6));
  s.llama3_rope_scaling = true;
  const auto scaled = rope_inv_freq(s);
  // Wavelength 2*pi/f below 2048 (high frequencies): unchanged.
  CHECK(scaled[0] == plain[0]);
  CHECK(scaled[20] == plain[20]);  // wavelen ~ 2*pi*500000^(40/128) ~ 378
  // Wavelength above 8192 (low frequencies): divided by the factor 8.
  CHECK(scaled[63] == Approx(plain[63] / 8).epsilon(1e-6));
  // In between: a blend, strictly between the two.
  for (size_t i = 0; i < 64; ++i) {
    const double wl = 2 * 3.14159265358979 / plain[i];
    if (wl > 2048 && wl < 8192) {
      CHECK(scaled[i] < plain[i]);
      CHECK(scaled[i] > plain[i] / 8);
    }
  }
}
