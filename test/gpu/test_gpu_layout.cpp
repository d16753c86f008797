// Host-side planning of the GPU backend: KV pool layout and sizing, the
// block-table export, slot mapping, attention tiling, bf16 conversion and the
// model shapes. Everything here is checked against values worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "gpu/hd.h"
#include "gpu/kv_layout.h"
#include "gpu/model_shape.h"
#include "sim/error.h"

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

TEST_CASE("The longest key range of a tile plan is the last query's context in the tile that sees most",
          "[gpu][layout]") {
  const std::vector<BlockId> t(8, 1);
  Batch b;
  b.seqs.push_back({5, 3, t});  // tiles of 2: keys seen by their last queries 5, 7, 8
  b.seqs.push_back({0, 4, t});
  b.seqs.push_back({2, 0, t});  // 2
  const PagedBatch pb = export_paged_batch(b, 4, 2);
  CHECK(max_tile_kv_end(pb, plan_attention_tiles(pb, 2)) == 8);
  CHECK(max_tile_kv_end(pb, {}) == 0);
}

// The H100 figures: 132 SMs x 2 resident K2 CTAs = 264 slots; llama-3.1-8b
// has 8 KV heads.
TEST_CASE("Split-KV splits decode and short queries over long contexts until one wave fills the GPU",
          "[gpu][layout]") {
  CHECK(choose_kv_splits(8, 129, 264) == 26);   // one decode at 8192: 8 CTAs -> 208, 5 key tiles each
  CHECK(choose_kv_splits(8, 257, 264) == 33);   // 32 new tokens after 16384: one full wave of 8 key tiles
  CHECK(choose_kv_splits(64, 129, 264) == 4);   // 8 decodes at 8192: 256 CTAs
  CHECK(choose_kv_splits(8, 33, 264) == 7);     // one decode at 2048
  CHECK(choose_kv_splits(128, 40, 264) == 2);   // 512 new tokens after 2048
}

TEST_CASE("Split-KV leaves full grids, short contexts and small gains single-pass", "[gpu][layout]") {
  CHECK(choose_kv_splits(256, 129, 264) == 1);  // 32 decodes at 8192 already fill the slots
  CHECK(choose_kv_splits(4096, 1, 264) == 1);   // a long prefill
  CHECK(choose_kv_splits(128, 8, 264) == 1);    // 512 new tokens, nothing cached: 2 splits save < 20 %
  CHECK(choose_kv_splits(8, 9, 264) == 1);      // one decode at 513: likewise
  CHECK(choose_kv_splits(8, 7, 264) == 1);      // fewer keys than two minimum chunks
  CHECK(choose_kv_splits(0, 100, 264) == 1);    // no tiles
  for (int64_t ctas = 1; ctas <= 300; ctas += 7) {
    for (int64_t tiles = 1; tiles <= 600; tiles += 13) {
      const int32_t s = choose_kv_splits(ctas, tiles, 264);
      INFO("ctas " << ctas << ", key tiles " << tiles << " -> " << s);
      REQUIRE((s >= 1 && s <= kMaxKvSplits));
      if (s > 1) {
        CHECK(ctas < 264);
        CHECK(tiles / s >= kMinKvTilesPerSplit);  // every chunk keeps the minimum number of key tiles
      }
    }
  }
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
