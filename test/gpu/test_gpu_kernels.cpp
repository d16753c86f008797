// GPU kernels of gpu/ against their fp32 CPU references (suite 'gpu').
// The process exits 77 (meson's "skipped") when there is no usable CUDA
// device, so CI stays green on CPU-only machines. Run on an H100 on
// 2026-11-22: all 11 test cases pass (run 8), both attention kernels (K1, K2) and
// K2's split-KV included (gpu/bench/RESULTS.md). Any change to a kernel needs a new run
// on a GPU: CI cannot run these.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/cpu_model.h"
#include "gpu/model_runner.h"
#include "gpu/cpu_ref.h"
#include "gpu/cuda_api.h"
#include "gpu/hd.h"
#include "gpu/kv_layout.h"

using namespace prefixsim;
using namespace prefixsim::gpu;

namespace {

constexpr uint16_t kMarker = 0x7fa5;  // a NaN: any element the kernel leaves alone fails

std::vector<uint16_t> random_bf16(size_t n, uint64_t stream, float scale) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = f32_to_bf16(scale * hash_uniform(stream, i));
  return v;
}
std::vector<float> to_f32(const std::vector<uint16_t>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = bf16_to_f32(v[i]);
  return f;
}

// bf16 output of an fp32-accumulated computation: half an ulp of rounding
// (2^-9 relative) plus slack for a different summation order.
void require_close(const std::vector<uint16_t>& got, const std::vector<float>& want, float atol, float rtol) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0, first = got.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = bf16_to_f32(got[i]);
    if (!(std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      if (bad++ == 0) first = i;
    }
  }
  INFO("mismatches " << bad << " of " << got.size() << "; first at " << first << ": got "
                     << (first < got.size() ? bf16_to_f32(got[first]) : 0) << " want "
                     << (first < got.size() ? want[first] : 0));
  REQUIRE(bad == 0);
}

struct Req {
  int64_t cached, fresh;
};

// A batch over shuffled block ids with the K/V of every token already in
// the cache (written by the CPU reference through the exported slots).
struct AttnCase {
  PagedBatch step;
  int64_t cache_elems;
  std::vector<uint16_t> q, k_cache, v_cache;
};

AttnCase make_case(const std::vector<Req>& reqs, const ref::AttnDims& d, int32_t bs, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t blocks = 1;
  for (const Req& r : reqs) blocks += (r.cached + r.fresh + bs - 1) / bs;
  std::vector<BlockId> ids(static_cast<size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<std::vector<BlockId>> tables;
  size_t next = 0;
  Batch fill, step;
  for (const Req& r : reqs) {
    std::vector<BlockId> t;
    for (int64_t i = 0; i < (r.cached + r.fresh + bs - 1) / bs; ++i) t.push_back(ids[next++]);
    tables.push_back(t);
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    fill.seqs.push_back({reqs[i].cached + reqs[i].fresh, 0, tables[i]});
    step.seqs.push_back({reqs[i].fresh, reqs[i].cached, tables[i]});
  }
  AttnCase c;
  c.step = export_paged_batch(step, bs, blocks);
  const PagedBatch pf = export_paged_batch(fill, bs, blocks);
  const int64_t row = d.num_kv_heads * d.head_dim;
  c.cache_elems = blocks * bs * row;
  const auto k = to_f32(random_bf16(static_cast<size_t>(pf.num_tokens() * row), seed * 3 + 1, 1.f));
  const auto v = to_f32(random_bf16(static_cast<size_t>(pf.num_tokens() * row), seed * 3 + 2, 1.f));
  std::vector<float> kc(static_cast<size_t>(c.cache_elems), 0.f), vc(kc.size(), 0.f);
  ref::write_kv(pf, d, k.data(), v.data(), row, kc.data(), vc.data());
  c.k_cache.resize(kc.size());
  c.v_cache.resize(vc.size());
  for (size_t i = 0; i < kc.size(); ++i) {
    c.k_cache[i] = f32_to_bf16(kc[i]);  // exact: the values are bf16 already
    c.v_cache[i] = f32_to_bf16(vc[i]);
  }
  c.q = random_bf16(static_cast<size_t>(c.step.num_tokens() * d.num_q_heads * d.head_dim), seed * 3 + 3, 3.f);
  return c;
}

float softmax_scale(const ref::AttnDims& d) { return 1.f / std::sqrt(static_cast<float>(d.head_dim)); }

std::vector<float> reference_attention(const AttnCase& c, const ref::AttnDims& d) {
  const int64_t qs = d.num_q_heads * d.head_dim;
  const auto qf = to_f32(c.q), kf = to_f32(c.k_cache), vf = to_f32(c.v_cache);
  std::vector<float> want(static_cast<size_t>(c.step.num_tokens() * qs));
  ref::paged_prefill_attention(c.step, d, qf.data(), qs, kf.data(), vf.data(), softmax_scale(d), want.data());
  return want;
}

// One GPU attention run (kv_splits as cuda::paged_prefill_attention takes
// it) against the reference, the output buffer NaN-poisoned first.
void check_gpu_attention(const AttnCase& c, const ref::AttnDims& d, const std::vector<float>& want,
                         cuda::AttnKernel k, int kv_splits) {
  std::vector<uint16_t> out(want.size(), kMarker);
  cuda::paged_prefill_attention(c.step, d, c.q.data(), d.num_q_heads * d.head_dim, c.k_cache.data(),
                                c.v_cache.data(), c.cache_elems, softmax_scale(d), out.data(), k, kv_splits);
  require_close(out, want, 4e-3f, 8e-3f);
}

// Both attention kernels (K1 on CUDA cores, K2 on tensor cores, with its
// automatic split-KV choice) against one fp32 reference.
void check_attention(const std::vector<Req>& reqs, const ref::AttnDims& d, int32_t bs, uint32_t seed) {
  const AttnCase c = make_case(reqs, d, bs, seed);
  const std::vector<float> want = reference_attention(c, d);
  for (const cuda::AttnKernel k : {cuda::AttnKernel::k1, cuda::AttnKernel::k2}) {
    INFO("kernel " << cuda::attn_kernel_name(k));
    check_gpu_attention(c, d, want, k, 0);
  }
}

// K2 with the longest tile's keys split into each of `splits` chunk counts
// (the others into chunks as long; 0: the automatic choice, 1: the single
// pass) against one fp32 reference.
void check_k2_kv_splits(const std::vector<Req>& reqs, const ref::AttnDims& d, int32_t bs, uint32_t seed,
                        const std::vector<int>& splits) {
  const AttnCase c = make_case(reqs, d, bs, seed);
  const std::vector<float> want = reference_attention(c, d);
  for (const int s : splits) {
    INFO("K2, KV splits " << (s == 0 ? "automatic (" + std::to_string(cuda::attention_kv_splits(c.step, d)) + ")"
                                     : std::to_string(s)));
    check_gpu_attention(c, d, want, cuda::AttnKernel::k2, s);
  }
}

PagedBatch single_request_step(int64_t cached, int64_t fresh) {
  const int64_t blocks = (cached + fresh + 15) / 16;
  std::vector<BlockId> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  Batch b;
  b.seqs.push_back({fresh, cached, table});
  return export_paged_batch(b, 16, blocks);
}

}  // namespace

TEST_CASE("GPU K/V slot write puts each new token's rows in its slot and nothing elsewhere", "[gpu][kernel]") {
  const ref::AttnDims d{8, 2, 128};
  const std::vector<BlockId> ta{5, 1, 3}, tb{0, 4};
  Batch b;
  b.seqs.push_back({19, 20, ta});  // 39 tokens in blocks of 16
  b.seqs.push_back({17, 0, tb});
  const PagedBatch pb = export_paged_batch(b, 16, 6);
  const int64_t row = d.num_kv_heads * d.head_dim, cache = 6 * 16 * row, stride = 3 * row;
  const auto src = random_bf16(static_cast<size_t>(pb.num_tokens() * stride), 77, 2.f);
  std::vector<uint16_t> kc(static_cast<size_t>(cache), kMarker), vc = kc;
  cuda::write_kv(pb, d, src.data(), src.data() + row, stride, kc.data(), vc.data(), cache);
  const auto sf = to_f32(src);
  // NaN marks "no slot of this step" in the reference: any finite sentinel
  // (-1 was used first) is also a value random bf16 inputs take.
  const float unset = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> kr(kc.size(), unset), vr(kc.size(), unset);
  ref::write_kv(pb, d, sf.data(), sf.data() + row, stride, kr.data(), vr.data());
  for (size_t i = 0; i < kc.size(); ++i) {
    if (std::isnan(kr[i])) {  // not a slot of this step: must be untouched
      REQUIRE(kc[i] == kMarker);
      REQUIRE(vc[i] == kMarker);
    } else {
      REQUIRE(kc[i] == f32_to_bf16(kr[i]));
      REQUIRE(vc[i] == f32_to_bf16(vr[i]));
    }
  }
}

TEST_CASE("GPU paged attention (K1 and K2) matches the CPU reference for single requests over the (new, cached) grid",
          "[gpu][kernel][attention]") {
  uint32_t seed = 10;
  for (int32_t bs : {16, 32, 64}) {
    for (const Req& r : {Req{0, 1}, Req{0, 2048}, Req{8192, 1}, Req{31, 33}, Req{1000, 999}, Req{4096, 513}}) {
      INFO("block size " << bs << ", cached " << r.cached << ", new " << r.fresh);
      check_attention({r}, ref::AttnDims{8, 2, 128}, bs, seed++);
    }
  }
  INFO("largest case: 2048 new tokens after 8192 cached");
  check_attention({Req{8192, 2048}}, ref::AttnDims{4, 1, 128}, 16, seed++);
}

TEST_CASE("GPU paged attention (K1 and K2) matches the CPU reference on ragged batches with GQA groups 1..8",
          "[gpu][kernel][attention]") {
  const std::vector<Req> batch{{0, 1}, {17, 3}, {64, 64}, {100, 257}, {2000, 40}, {0, 129}};
  uint32_t seed = 100;
  for (const ref::AttnDims& d : {ref::AttnDims{4, 4, 128}, ref::AttnDims{8, 4, 128}, ref::AttnDims{8, 2, 128},
                                ref::AttnDims{8, 1, 128}}) {
    for (int32_t bs : {16, 32, 64}) {
      INFO("heads " << d.num_q_heads << "/" << d.num_kv_heads << ", block size " << bs);
      check_attention(batch, d, bs, seed++);
    }
  }
}

TEST_CASE("GPU K2 with the KV range split into 2, 3, 16 or 64 chunks, or as it chooses, matches the CPU reference "
          "for single requests", "[gpu][kernel][attention][split-kv]") {
  // Chunks are ceil(longest / n) key tiles: (0,1) and (31,33) have one key
  // tile, so any n runs the single pass; (8192,1) and (4096,513) end chunks
  // before, across and after rows' last keys (64: chunks of 3 and 2 key
  // tiles, 43 and 37 of them).
  uint32_t seed = 300;
  for (int32_t bs : {16, 32}) {
    for (const Req& r : {Req{8192, 1}, Req{31, 33}, Req{4096, 513}, Req{0, 1}, Req{1000, 999}}) {
      INFO("block size " << bs << ", cached " << r.cached << ", new " << r.fresh);
      check_k2_kv_splits({r}, ref::AttnDims{8, 2, 128}, bs, seed++, {2, 3, 16, 64, 0});
    }
  }
  INFO("llama-3.1-8b heads: 32 new tokens after 16384 cached, and one decode at 8192");
  check_k2_kv_splits({Req{16384, 32}}, ref::AttnDims{32, 8, 128}, 16, seed++, {5, 0});
  check_k2_kv_splits({Req{8192, 1}}, ref::AttnDims{32, 8, 128}, 16, seed++, {0});
}

TEST_CASE("GPU K2 with the KV range split matches the CPU reference on ragged batches with GQA groups 1..8",
          "[gpu][kernel][attention][split-kv]") {
  const std::vector<Req> prefills{{0, 1}, {17, 3}, {64, 64}, {100, 257}, {2000, 40}, {0, 129}};
  // Decodes over very different contexts: the short ones have fewer chunks.
  const std::vector<Req> decodes{{8192, 1}, {0, 1}, {100, 1}, {2000, 1}, {4095, 1}, {31, 33}};
  uint32_t seed = 400;
  for (const ref::AttnDims& d : {ref::AttnDims{4, 4, 128}, ref::AttnDims{8, 4, 128}, ref::AttnDims{8, 2, 128},
                                ref::AttnDims{8, 1, 128}}) {
    for (const auto* batch : {&prefills, &decodes}) {
      INFO("heads " << d.num_q_heads << "/" << d.num_kv_heads << (batch == &prefills ? ", prefills" : ", decodes"));
      check_k2_kv_splits(*batch, d, 16, seed++, {2, 7, 0});
    }
  }
}

TEST_CASE("GPU K2 with the KV range split matches the CPU reference on decode batches of very uneven contexts",
          "[gpu][kernel][attention][split-kv]") {
  // One long context among short ones (the shape of real decode steps): the
  // automatic choice cuts the long one into chunks and leaves the short ones
  // (nearly) whole; forced counts cut the longest into 2, 7 or 64 (chunks of
  // 157, 45 or 5 key tiles). Then the same with prefill tiles beside them,
  // whose rows end in different chunks.
  const std::vector<Req> decodes{{20000, 1}, {300, 1}, {4100, 1}, {64, 1}, {9000, 1}};
  const std::vector<Req> mixed{{20000, 1}, {100, 257}, {4100, 1}, {0, 64}, {9000, 33}};
  uint32_t seed = 500;
  for (const ref::AttnDims& d : {ref::AttnDims{8, 2, 128}, ref::AttnDims{32, 8, 128}}) {  // GQA group 4
    for (int32_t bs : {16, 32}) {
      for (const auto* batch : {&decodes, &mixed}) {
        INFO("heads " << d.num_q_heads << "/" << d.num_kv_heads << ", block size " << bs
                      << (batch == &decodes ? ", decodes" : ", decodes and prefills"));
        const AttnCase c = make_case(*batch, d, bs, seed);
        CHECK(cuda::attention_kv_splits(c.step, d) > 1);
        check_k2_kv_splits(*batch, d, bs, seed++, {0, 2, 7, 64, 1});
      }
    }
  }
}

TEST_CASE("GPU K2 splits the KV range of a lone decode and keeps a long prefill single-pass",
          "[gpu][kernel][attention][split-kv]") {
  const ref::AttnDims llama8b{32, 8, 128};
  CHECK(cuda::attention_kv_splits(single_request_step(8192, 1), llama8b) > 1);
  CHECK(cuda::attention_kv_splits(single_request_step(16384, 32), llama8b) > 1);
  CHECK(cuda::attention_kv_splits(single_request_step(0, 4096), llama8b) == 1);
  CHECK(cuda::attention_kv_splits(single_request_step(0, 1), llama8b) == 1);
}

TEST_CASE("GPU RoPE, RMSNorm and SiLU-and-mul match their CPU references", "[gpu][kernel]") {
  const int64_t rows = 37, heads = 6, D = 128, stride = heads * D + 64;
  ModelShape s = *find_model_shape("llama-3.1-8b");
  const auto inv = rope_inv_freq(s);
  std::vector<int32_t> pos(rows);
  for (int64_t r = 0; r < rows; ++r) pos[static_cast<size_t>(r)] = static_cast<int32_t>(r * 331 % 9000);
  auto x = random_bf16(static_cast<size_t>(rows * stride), 5, 2.f);
  auto xf = to_f32(x);
  cuda::rope(x.data(), rows, stride, heads, D, pos.data(), inv.data());
  ref::rope(xf.data(), rows, stride, heads, D, pos.data(), inv.data());
  require_close(x, xf, 1e-2f, 8e-3f);

  const int64_t n = 4096;
  const auto xn = random_bf16(static_cast<size_t>(rows * n), 6, 4.f), w = random_bf16(static_cast<size_t>(n), 7, 1.f);
  std::vector<uint16_t> y(xn.size(), kMarker);
  cuda::rmsnorm(xn.data(), w.data(), y.data(), rows, n, 1e-5f);
  std::vector<float> yr(xn.size());
  ref::rmsnorm(to_f32(xn).data(), to_f32(w).data(), yr.data(), rows, n, 1e-5f);
  require_close(y, yr, 1e-3f, 8e-3f);

  const int64_t inter = 1000;
  const auto gu = random_bf16(static_cast<size_t>(rows * 2 * inter), 8, 6.f);
  std::vector<uint16_t> a(static_cast<size_t>(rows * inter), kMarker);
  cuda::silu_mul(gu.data(), a.data(), rows, inter);
  std::vector<float> ar(a.size());
  ref::silu_mul(to_f32(gu).data(), ar.data(), rows, inter);
  require_close(a, ar, 1e-3f, 8e-3f);
}

TEST_CASE("cuBLASLt GEMM y = x W^T (+ y) matches the CPU reference", "[gpu][kernel]") {
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 256, 512}, {77, 384, 4096}, {300, 1000, 128}}) {
    const auto x = random_bf16(static_cast<size_t>(m * k), 9, 1.f), w = random_bf16(static_cast<size_t>(n * k), 10, 1.f);
    auto y = random_bf16(static_cast<size_t>(m * n), 11, 1.f);
    std::vector<float> yr = to_f32(y);
    const float tol = 1e-3f * std::sqrt(static_cast<float>(k));
    cuda::gemm_xwt(x.data(), w.data(), y.data(), m, n, k, true);
    ref::gemm_xwt(to_f32(x).data(), to_f32(w).data(), yr.data(), m, n, k, true);
    require_close(y, yr, tol, 8e-3f);
  }
}

namespace {
std::vector<uint16_t> bf16_of(const std::vector<float>& f) {
  std::vector<uint16_t> v(f.size());
  for (size_t i = 0; i < f.size(); ++i) v[i] = f32_to_bf16(f[i]);
  return v;
}
double rel_err(const std::vector<uint16_t>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double dlt = bf16_to_f32(got[i]) - want[i];
    if (!std::isfinite(bf16_to_f32(got[i]))) return INFINITY;
    num += dlt * dlt;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Runs `shape` on a two-request prompt twice on the GPU: once whole, once
// with the first `cut` tokens as an earlier step (served from the pages the
// second step reads). Returns the second step's outputs from both.
struct CacheRun {
  std::vector<uint16_t> cached, full;
  std::vector<float> inputs_full;
  PagedBatch full_batch;
};
CacheRun cache_run(const ModelShape& s, int32_t bs, const std::vector<int64_t>& len, const std::vector<int64_t>& cut) {
  const int64_t per = (*std::max_element(len.begin(), len.end()) + bs - 1) / bs;
  const int64_t blocks = per * static_cast<int64_t>(len.size()) + 1;
  std::vector<std::vector<BlockId>> tables(len.size());
  for (size_t i = 0; i < len.size(); ++i)
    for (int64_t j = 0; j < per; ++j) tables[i].push_back(static_cast<BlockId>(blocks - 1 - (j * len.size() + i)));
  const std::vector<uint64_t> tags{11, 22, 33, 44};
  Batch full, first, second;
  for (size_t i = 0; i < len.size(); ++i) {
    full.seqs.push_back({len[i], 0, tables[i]});
    first.seqs.push_back({cut[i], 0, tables[i]});
    second.seqs.push_back({len[i] - cut[i], cut[i], tables[i]});
  }
  CacheRun r;
  r.full_batch = export_paged_batch(full, bs, blocks);
  const PagedBatch p1 = export_paged_batch(first, bs, blocks), p2 = export_paged_batch(second, bs, blocks);
  const int64_t H = s.hidden;
  std::vector<uint16_t> all(static_cast<size_t>(r.full_batch.num_tokens() * H), kMarker);
  {
    cuda::Model m(s, blocks, bs, 42);
    r.inputs_full = make_inputs(s, r.full_batch, 5, tags);
    m.forward(r.full_batch, bf16_of(r.inputs_full).data(), all.data());
  }
  cuda::Model m(s, blocks, bs, 42);
  std::vector<uint16_t> o1(static_cast<size_t>(p1.num_tokens() * H), kMarker), o2(static_cast<size_t>(p2.num_tokens() * H), kMarker);
  m.forward(p1, bf16_of(make_inputs(s, p1, 5, tags)).data(), o1.data());
  m.forward(p2, bf16_of(make_inputs(s, p2, 5, tags)).data(), o2.data());
  r.cached = o2;
  for (size_t i = 0; i < len.size(); ++i) {
    const int64_t base = r.full_batch.qo_indptr[i];
    r.full.insert(r.full.end(), all.begin() + (base + cut[i]) * H, all.begin() + (base + len[i]) * H);
  }
  return r;
}
}  // namespace

TEST_CASE("GPU model forward matches the CPU model, and caching half the prompt does not change it",
          "[gpu][model]") {
  ModelShape s{"small-hd128", 2, 512, 8, 2, 128, 1024};
  const CacheRun r = cache_run(s, 16, {300, 77}, {160, 38});
  // CPU reference of the whole prompt (fp32), rows of the second step.
  const auto& ids = r.full_batch.kv_indices;
  CpuLlama ref_model(s, *std::max_element(ids.begin(), ids.end()) + 1, 16, 42);
  std::vector<float> x = r.inputs_full;
  ref_model.forward(r.full_batch, x);
  std::vector<float> want;
  const std::vector<int64_t> len{300, 77}, cut{160, 38};
  for (size_t i = 0; i < 2; ++i) {
    const int64_t base = r.full_batch.qo_indptr[i];
    want.insert(want.end(), x.begin() + (base + cut[i]) * s.hidden, x.begin() + (base + len[i]) * s.hidden);
  }
  CHECK(rel_err(r.full, want) < 2e-2);
  CHECK(rel_err(r.cached, want) < 2e-2);
  CHECK(rel_err(r.cached, to_f32(r.full)) < 2e-2);
}

TEST_CASE("Llama 3.1 8B and a 70B TP=4 shard give the same outputs with half the prompt cached", "[gpu][model]") {
  for (const char* name : {"llama-3.1-8b", "llama-3.1-70b-tp4"}) {
    INFO(name);
    const CacheRun r = cache_run(*find_model_shape(name), 16, {1024, 333}, {512, 160});
    CHECK(rel_err(r.cached, to_f32(r.full)) < 3e-2);
  }
}

TEST_CASE("The GPU runner of the backend mode matches the CPU runner on tagged inputs, cached pages included",
          "[gpu][model][backend]") {
  // What `replay --backend gpu` runs: inputs from token tags by the embedding
  // kernel (input_value's recipe), the forward, the kept rows copied back.
  const ModelShape s{"small-hd128", 2, 512, 8, 2, 128, 1024};
  const int32_t bs = 16;
  auto gpu = cuda::make_gpu_runner(s, 64, bs, 7);
  auto cpu = make_cpu_runner(s, 64, bs, 7);
  // Step 1: two prompts (70 and 41 tokens); step 2: both continue (a chunk
  // of 30 and one decode token) over the pages step 1 wrote.
  const std::vector<BlockId> ta{3, 9, 4, 12, 20, 21, 22}, tb{5, 1, 17, 30};
  auto tags_of = [](int64_t seq, int64_t from, int64_t n) {
    std::vector<uint64_t> t;
    for (int64_t p = from; p < from + n; ++p) t.push_back(static_cast<uint64_t>(1000 * seq + p * 7 % 13));
    return t;
  };
  Batch b1, b2;
  b1.seqs.push_back({70, 0, ta});
  b1.seqs.push_back({41, 0, tb});
  b2.seqs.push_back({30, 70, ta});
  b2.seqs.push_back({1, 41, tb});
  std::vector<uint64_t> t1 = tags_of(1, 0, 70), t2 = tags_of(1, 70, 30);
  for (uint64_t t : tags_of(2, 0, 41)) t1.push_back(t);
  for (uint64_t t : tags_of(2, 41, 1)) t2.push_back(t);
  const PagedBatch p1 = export_paged_batch(b1, bs, 64), p2 = export_paged_batch(b2, bs, 64);
  std::vector<float> g, c;
  const std::vector<int64_t> rows1{0, 69, 70, 110}, rows2{0, 29, 30};
  CHECK(gpu->forward(p1, t1, 5, rows1, g) > 0);  // measured
  CHECK(cpu->forward(p1, t1, 5, rows1, c) == 0);
  auto err = [](const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
      den += static_cast<double>(want[i]) * want[i];
    }
    return std::sqrt(num / den);
  };
  CHECK(err(g, c) < 2e-2);
  gpu->forward(p2, t2, 5, rows2, g);
  cpu->forward(p2, t2, 5, rows2, c);
  CHECK(err(g, c) < 2e-2);
}

int main(int argc, char** argv) {
  const cuda::DeviceInfo dev = cuda::query_devices();
  if (dev.count == 0) {
    std::printf("skipped: no CUDA device (%s)\n", dev.error.c_str());
    return 77;
  }
  if (dev.cc_major != 9 || dev.cc_minor != 0) {
    // The kernels are built for sm_90a only (-Dgpu_arch); other GPUs cannot run them.
    std::printf("skipped: %s is sm_%d%d, this build targets sm_90a\n", dev.name.c_str(), dev.cc_major, dev.cc_minor);
    return 77;
  }
  std::printf("device: %s\n", dev.name.c_str());
  return Catch::Session().run(argc, argv);
}
