// The fp32 CPU references of gpu/: paged attention against a dense
// (non-paged) attention written independently, the elementwise ops against
// hand-computed values, and the whole model: serving half the prompt from
// cached pages gives bit-identical outputs to recomputing it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gpu/cpu_model.h"
#include "gpu/cpu_ref.h"
#include "gpu/kv_layout.h"
#include "gpu/model_shape.h"

using namespace prefixsim;
using namespace prefixsim::gpu;

namespace {

struct Req {
  int64_t cached, fresh;
};

// A batch over shuffled block ids plus the unpaged K/V/Q of every sequence,
// with integer values so every score is exact.
struct Scenario {
  ref::AttnDims d;
  int32_t bs;
  int64_t num_blocks;
  std::vector<std::vector<BlockId>> tables;
  std::vector<std::vector<float>> k, v;  // per seq [kv_len, Hkv, D]
  std::vector<float> q;                  // [rows, Hq, D]
  std::vector<float> k_cache, v_cache;   // [num_blocks, bs, Hkv, D]
  PagedBatch step;                       // the step: `fresh` new tokens after `cached`
};

Scenario make_scenario(const std::vector<Req>& reqs, ref::AttnDims d, int32_t bs, uint32_t seed, bool zero_q = false) {
  Scenario sc{d, bs, 0, {}, {}, {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  int64_t need = 0;
  for (const Req& r : reqs) need += (r.cached + r.fresh + bs - 1) / bs;
  sc.num_blocks = need + 3;  // a few blocks nobody uses
  std::vector<BlockId> ids(static_cast<size_t>(sc.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  const int64_t row = d.num_kv_heads * d.head_dim;
  // Unwritten slots hold NaN: reading one poisons the output.
  sc.k_cache.assign(static_cast<size_t>(sc.num_blocks * bs * row), std::numeric_limits<float>::quiet_NaN());
  sc.v_cache = sc.k_cache;
  Batch fill, step;
  for (const Req& r : reqs) {
    const int64_t len = r.cached + r.fresh;
    std::vector<BlockId> t;
    for (int64_t i = 0; i < (len + bs - 1) / bs; ++i) t.push_back(ids[next++]);
    sc.tables.push_back(t);
    std::vector<float> k(static_cast<size_t>(len * row)), v(k.size());
    for (auto& x : k) x = static_cast<float>(small(rng));
    for (auto& x : v) x = static_cast<float>(small(rng) * 8);
    sc.k.push_back(k);
    sc.v.push_back(v);
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    fill.seqs.push_back({reqs[i].cached + reqs[i].fresh, 0, sc.tables[i]});
    step.seqs.push_back({reqs[i].fresh, reqs[i].cached, sc.tables[i]});
  }
  // Place every token's K/V through the slot mapping of a step that computes
  // the whole sequence: the write reference puts them where attention reads.
  const PagedBatch pf = export_paged_batch(fill, bs, sc.num_blocks);
  std::vector<float> kk, vv;
  for (size_t i = 0; i < reqs.size(); ++i) {
    kk.insert(kk.end(), sc.k[i].begin(), sc.k[i].end());
    vv.insert(vv.end(), sc.v[i].begin(), sc.v[i].end());
  }
  ref::write_kv(pf, d, kk.data(), vv.data(), row, sc.k_cache.data(), sc.v_cache.data());
  sc.step = export_paged_batch(step, bs, sc.num_blocks);
  sc.q.resize(static_cast<size_t>(sc.step.num_tokens() * d.num_q_heads * d.head_dim));
  for (auto& x : sc.q) x = zero_q ? 0.0f : static_cast<float>(small(rng));
  return sc;
}

// Textbook attention on contiguous tensors: full score matrix, -inf above
// the bottom-right diagonal, softmax, weighted sum.
std::vector<float> dense_attention(const Scenario& sc, float scale) {
  const auto& d = sc.d;
  const int64_t D = d.head_dim, Hq = d.num_q_heads, Hkv = d.num_kv_heads, g = Hq / Hkv;
  std::vector<float> out(sc.q.size());
  for (int64_t b = 0; b < sc.step.num_seqs(); ++b) {
    const int64_t q0 = sc.step.qo_indptr[b], n = sc.step.qo_indptr[b + 1] - q0, L = sc.step.kv_len[b];
    const auto& K = sc.k[static_cast<size_t>(b)];
    const auto& V = sc.v[static_cast<size_t>(b)];
    for (int64_t h = 0; h < Hq; ++h) {
      std::vector<std::vector<float>> S(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(L)));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < L; ++j) {
          float s = 0;
          for (int64_t e = 0; e < D; ++e) s += sc.q[static_cast<size_t>(((q0 + i) * Hq + h) * D + e)] *
                                              K[static_cast<size_t>((j * Hkv + h / g) * D + e)];
          S[i][j] = (j <= L - n + i) ? s * scale : -std::numeric_limits<float>::infinity();
        }
      for (int64_t i = 0; i < n; ++i) {
        const float mx = *std::max_element(S[i].begin(), S[i].end());
        float sum = 0;
        for (auto& s : S[i]) {
          s = std::exp(s - mx);
          sum += s;
        }
        for (int64_t e = 0; e < D; ++e) {
          float o = 0;
          for (int64_t j = 0; j < L; ++j) o += S[i][j] * V[static_cast<size_t>((j * Hkv + h / g) * D + e)];
          out[static_cast<size_t>(((q0 + i) * Hq + h) * D + e)] = o / sum;
        }
      }
    }
  }
  return out;
}

std::vector<float> paged(const Scenario& sc, float scale) {
  std::vector<float> out(sc.q.size(), -12345.0f);
  ref::paged_prefill_attention(sc.step, sc.d, sc.q.data(), sc.d.num_q_heads * sc.d.head_dim, sc.k_cache.data(),
                               sc.v_cache.data(), scale, out.data());
  return out;
}

}  // namespace

TEST_CASE("Paged attention reference equals dense attention exactly on integer inputs", "[gpu][ref][attention]") {
  struct Case {
    ref::AttnDims d;
    int32_t bs;
    std::vector<Req> reqs;
  };
  const std::vector<Case> cases = {
      {{4, 2, 128}, 16, {{0, 1}, {0, 17}, {33, 5}}},
      {{8, 1, 128}, 32, {{31, 1}, {64, 33}, {0, 40}}},
      {{4, 4, 128}, 64, {{65, 63}, {1, 2}}},
      {{6, 3, 16}, 16, {{100, 7}, {15, 16}, {16, 15}, {0, 3}}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const Scenario sc = make_scenario(c.reqs, c.d, c.bs, seed++);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d.head_dim));
    const auto got = paged(sc, scale), want = dense_attention(sc, scale);
    INFO("block size " << c.bs << ", heads " << c.d.num_q_heads << "/" << c.d.num_kv_heads);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == want[i]);
  }
}

TEST_CASE("Paged attention with zero queries averages the values of exactly the causal window", "[gpu][ref][attention]") {
  const ref::AttnDims d{4, 2, 16};
  const Scenario sc = make_scenario({{9, 6}, {0, 5}, {16, 1}}, d, 4, 99, /*zero_q=*/true);
  const auto got = paged(sc, 0.5f);
  const int64_t D = d.head_dim, Hq = d.num_q_heads, g = Hq / d.num_kv_heads;
  for (int64_t b = 0; b < sc.step.num_seqs(); ++b) {
    const int64_t q0 = sc.step.qo_indptr[b], n = sc.step.qo_indptr[b + 1] - q0, L = sc.step.kv_len[b];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t e = 0; e < D; ++e) {
          double mean = 0;
          const int64_t last = L - n + i;  // the query at position `last` sees keys 0..last
          for (int64_t j = 0; j <= last; ++j)
            mean += sc.v[static_cast<size_t>(b)][static_cast<size_t>((j * d.num_kv_heads + h / g) * D + e)];
          mean /= static_cast<double>(last + 1);
          REQUIRE(got[static_cast<size_t>(((q0 + i) * Hq + h) * D + e)] == Approx(mean).margin(1e-5));
        }
  }
}

TEST_CASE("K/V slot write skips negative slots and touches nothing else", "[gpu][ref]") {
  PagedBatch pb;
  pb.qo_indptr = {0, 3};
  pb.slot_mapping = {5, -1, 0};
  const ref::AttnDims d{2, 1, 2};
  const std::vector<float> k{1, 2, 3, 4, 5, 6}, v{7, 8, 9, 10, 11, 12};
  std::vector<float> kc(12, -1), vc(12, -1);
  ref::write_kv(pb, d, k.data(), v.data(), 2, kc.data(), vc.data());
  CHECK(kc == std::vector<float>{5, 6, -1, -1, -1, -1, -1, -1, -1, -1, 1, 2});
  CHECK(vc == std::vector<float>{11, 12, -1, -1, -1, -1, -1, -1, -1, -1, 7, 8});
}

TEST_CASE("RoPE rotates each (i, i + d/2) pair by position x frequency", "[gpu][ref]") {
  const std::vector<float> inv{1.0f, 0.5f};
  const std::vector<int32_t> pos{0, 1, 3};
  std::vector<float> x{1, 2, 3, 4, 1, 2, 3, 4, 1, 0, 0, 1};
  ref::rope(x.data(), 3, 4, 1, 4, pos.data(), inv.data());
  CHECK(x[0] == 1);  // position 0: identity
  CHECK(x[3] == 4);
  // row 1: pair (1, 3) by 1 rad, pair (2, 4) by 0.5 rad
  CHECK(x[4] == Approx(std::cos(1.0) - 3 * std::sin(1.0)));
  CHECK(x[6] == Approx(3 * std::cos(1.0) + std::sin(1.0)));
  CHECK(x[5] == Approx(2 * std::cos(0.5) - 4 * std::sin(0.5)));
  CHECK(x[7] == Approx(4 * std::cos(0.5) + 2 * std::sin(0.5)));
  // row 2: (1, 0) by 3 rad; (0, 1) by 1.5 rad
  CHECK(x[8] == Approx(std::cos(3.0)));
  CHECK(x[10] == Approx(std::sin(3.0)));
  CHECK(x[9] == Approx(-std::sin(1.5)));
  CHECK(x[11] == Approx(std::cos(1.5)));
}

TEST_CASE("RMSNorm, SiLU-and-mul and the GEMM match hand-computed values", "[gpu][ref]") {
  const std::vector<float> x{3, 4, 0, 2}, w{1, 2};
  std::vector<float> y(4);
  ref::rmsnorm(x.data(), w.data(), y.data(), 2, 2, 0.0f);
  const float r0 = std::sqrt(12.5f), r1 = std::sqrt(2.0f);
  CHECK(y[0] == Approx(3 / r0));
  CHECK(y[1] == Approx(8 / r0));
  CHECK(y[2] == 0);
  CHECK(y[3] == Approx(4 / r1));

  const std::vector<float> gu{0, 2, 5, 7};  // gate (0, 2), up (5, 7)
  std::vector<float> act(2);
  ref::silu_mul(gu.data(), act.data(), 1, 2);
  CHECK(act[0] == 0);
  CHECK(act[1] == Approx(2.0 / (1 + std::exp(-2.0)) * 7));

  const std::vector<float> a{1, 2, 3, 4, 5, 6}, b{1, 0, 1, 0, 1, 0, 2, 2, 2};  // a [2,3], b [3,3]
  std::vector<float> c(6, 100);
  ref::gemm_xwt(a.data(), b.data(), c.data(), 2, 3, 3, false);
  CHECK(c == std::vector<float>{4, 2, 12, 10, 5, 30});
  ref::gemm_xwt(a.data(), b.data(), c.data(), 2, 3, 3, true);
  CHECK(c == std::vector<float>{8, 4, 24, 20, 10, 60});
}

namespace {
ModelShape tiny_shape() {
  ModelShape s{"tiny", 2, 64, 4, 2, 16, 96};
  return s;
}
}  // namespace

TEST_CASE("Model forward with half the prompt served from cached pages equals the full recompute", "[gpu][ref][model]") {
  const ModelShape s = tiny_shape();
  const int32_t bs = 16;
  const int64_t num_blocks = 12;
  // Two prompts in one batch; the split points are a block boundary (a prefix
  // cache hit) and an arbitrary token (a chunked prefill).
  const std::vector<BlockId> ta{7, 2, 10}, tb{3, 11};
  const std::vector<int64_t> len{37, 20}, cut{16, 9};
  const std::vector<uint64_t> tags{101, 202};

  Batch full;
  full.seqs.push_back({len[0], 0, ta});
  full.seqs.push_back({len[1], 0, tb});
  const PagedBatch pf = export_paged_batch(full, bs, num_blocks);
  CpuLlama ma(s, num_blocks, bs, 42);
  std::vector<float> xa = make_inputs(s, pf, 5, tags);
  ma.forward(pf, xa);

  auto run_cached = [&](bool corrupt) {
    CpuLlama mb(s, num_blocks, bs, 42);
    Batch first, second;
    first.seqs.push_back({cut[0], 0, ta});
    first.seqs.push_back({cut[1], 0, tb});
    second.seqs.push_back({len[0] - cut[0], cut[0], ta});
    second.seqs.push_back({len[1] - cut[1], cut[1], tb});
    const PagedBatch p1 = export_paged_batch(first, bs, num_blocks);
    const PagedBatch p2 = export_paged_batch(second, bs, num_blocks);
    std::vector<float> x1 = make_inputs(s, p1, 5, tags);
    mb.forward(p1, x1);
    if (corrupt) mb.k_cache(1)[(7 * bs + 3) * s.kv_size()] += 1.0f;  // seq 0, token 3, layer 1
    std::vector<float> x2 = make_inputs(s, p2, 5, tags);
    mb.forward(p2, x2);
    return x2;
  };

  const std::vector<float> xb = run_cached(false);
  const int64_t H = s.hidden;
  // Rows of the second step: seq 0 tokens cut0..len0-1, then seq 1 tokens cut1..len1-1.
  std::vector<float> want;
  for (int64_t t = cut[0]; t < len[0]; ++t) want.insert(want.end(), xa.begin() + t * H, xa.begin() + (t + 1) * H);
  for (int64_t t = len[0] + cut[1]; t < len[0] + len[1]; ++t)
    want.insert(want.end(), xa.begin() + t * H, xa.begin() + (t + 1) * H);
  REQUIRE(xb.size() == want.size());
  for (size_t i = 0; i < xb.size(); ++i) REQUIRE(xb[i] == want[i]);
  for (float v : xb) REQUIRE(std::isfinite(v));

  // The comparison can fail: one wrong cached key changes the outputs.
  const std::vector<float> xc = run_cached(true);
  CHECK(xc != want);
}
