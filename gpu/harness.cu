// Host side of the CUDA code: error checks, device queries, the step upload,
// and the harness/benchmark entry points of cuda_api.h (host buffers in and
// out). Exercised by test/gpu/test_gpu_kernels.cpp (passed on an H100,
// 2026-11-22).
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/cuda_api.h"
#include "gpu/hd.h"
#include "gpu/kernels.cuh"
#include "sim/base/error.h"

namespace prefixsim::gpu::cuda {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw InternalError(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

DeviceInfo query_devices() {
  DeviceInfo info;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    info.error = cudaGetErrorString(e);
    return info;
  }
  info.count = n;
  if (n == 0) {
    info.error = "no CUDA device";
    return info;
  }
  cudaDeviceProp prop{};
  PFX_CUDA(cudaGetDeviceProperties(&prop, 0));
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    info.cuda = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  return info;
}

namespace {
// Appends the bytes of v to s at a 16-byte aligned offset; returns the offset.
template <class T>
size_t pack(std::vector<char>& s, const std::vector<T>& v) {
  const size_t off = (s.size() + 15) / 16 * 16;
  s.resize(off + v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(s.data() + off, v.data(), v.size() * sizeof(T));
  return off;
}
}  // namespace

void DevBatchBuf::upload(const PagedBatch& pb, int group, cudaStream_t st, AttnKernel kernel) {
  if (group < 1 || kAttnRows % group != 0)
    throw InternalError("attention: query heads per KV head must divide " + std::to_string(kAttnRows));
  const int rows = attn_tile_rows(kernel);
  const std::vector<AttnTile> plan = plan_attention_tiles(pb, rows / group);
  std::vector<AttnTileDev> tiles;
  for (const AttnTile& t : plan) tiles.push_back({t.seq, t.q_begin, t.q_end});
  staging_.clear();
  const size_t o_qo = pack(staging_, pb.qo_indptr), o_kvp = pack(staging_, pb.kv_indptr);
  const size_t o_idx = pack(staging_, pb.kv_indices), o_len = pack(staging_, pb.kv_len);
  const size_t o_pos = pack(staging_, pb.positions), o_slot = pack(staging_, pb.slot_mapping);
  const size_t o_tiles = pack(staging_, tiles);
  buf_.resize(staging_.size() + 16);
  // Synchronous copy: staging_ is reused by the next upload.
  PFX_CUDA(cudaMemcpyAsync(buf_.get(), staging_.data(), staging_.size(), cudaMemcpyHostToDevice, st));
  PFX_CUDA(cudaStreamSynchronize(st));
  char* d = buf_.get();
  view_ = {reinterpret_cast<const int32_t*>(d + o_qo), reinterpret_cast<const int32_t*>(d + o_kvp),
           reinterpret_cast<const int32_t*>(d + o_idx), reinterpret_cast<const int32_t*>(d + o_len),
           reinterpret_cast<const int32_t*>(d + o_pos), reinterpret_cast<const int64_t*>(d + o_slot),
           reinterpret_cast<const AttnTileDev*>(d + o_tiles), static_cast<int32_t>(tiles.size()),
           static_cast<int32_t>(pb.num_tokens()), pb.block_size, rows, KvSplitDev{}};
  key_tiles_ = gpu::tile_key_tiles(pb, plan, kAttnKeysPerTileK2);
}

void DevBatchBuf::plan_kv_splits(int num_q_heads, int num_kv_heads, int forced_splits) {
  view_.kv_split = KvSplitDev{};
  if (view_.tile_rows != kAttnRowsK2 || view_.num_tiles == 0) return;
  if (forced_splits > kMaxKvSplits)
    throw InternalError("attention K2: at most " + std::to_string(kMaxKvSplits) + " KV splits can be forced");
  const KvSplitChoice choice =
      forced_splits > 0 ? forced_kv_splits(key_tiles_, forced_splits) : k2_kv_split_choice(key_tiles_, num_kv_heads);
  if (!choice.split()) return;
  const std::vector<KvChunk> chunks = kv_split_chunks(key_tiles_, choice.chunk_tiles);
  if (chunks.size() > 65535) {  // grid.y
    if (forced_splits > 0) throw InternalError("attention K2: more than 65535 split-KV chunks in one step");
    return;
  }
  split_chunks_.resize(chunks.size());
  // Synchronous (pageable source, default stream): ordered after the work
  // already queued that may still read the previous step's list.
  PFX_CUDA(cudaMemcpy(split_chunks_.get(), chunks.data(), chunks.size() * sizeof(KvChunk), cudaMemcpyHostToDevice));
  split_ws_.resize(k2_split_workspace_floats(choice.chunks, view_.num_tokens, num_q_heads));
  view_.kv_split = KvSplitDev{choice.chunks, choice.chunk_tiles, static_cast<int32_t>(chunks.size()), num_q_heads,
                              split_chunks_.get(), split_ws_.get()};
}

namespace {
template <class T>
DevBuf<T> to_dev(const T* h, size_t n) {
  DevBuf<T> d(std::max<size_t>(n, 1));
  if (n) PFX_CUDA(cudaMemcpy(d.get(), h, n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <class T>
void to_host(T* h, const DevBuf<T>& d, size_t n) {
  if (n) PFX_CUDA(cudaMemcpy(h, d.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
}
const bf16* as_bf16(const DevBuf<uint16_t>& d) { return reinterpret_cast<const bf16*>(d.get()); }
bf16* as_bf16_mut(const DevBuf<uint16_t>& d) { return reinterpret_cast<bf16*>(d.get()); }
size_t rows_span(int64_t rows, int64_t stride, int64_t width) {
  return rows == 0 ? 0 : static_cast<size_t>((rows - 1) * stride + width);
}
}  // namespace

void write_kv(const PagedBatch& pb, const ref::AttnDims& d, const uint16_t* k_src, const uint16_t* v_src,
              int64_t src_stride, uint16_t* k_cache, uint16_t* v_cache, int64_t cache_elems) {
  const int64_t row = d.num_kv_heads * d.head_dim;
  const size_t src_n = rows_span(pb.num_tokens(), src_stride, row);
  auto ks = to_dev(k_src, src_n), vs = to_dev(v_src, src_n);
  auto kc = to_dev(k_cache, static_cast<size_t>(cache_elems)), vc = to_dev(v_cache, static_cast<size_t>(cache_elems));
  DevBatchBuf db;
  db.upload(pb, 1, nullptr);
  launch_write_kv(db.view(), static_cast<int>(row), as_bf16(ks), as_bf16(vs), src_stride, as_bf16_mut(kc),
                  as_bf16_mut(vc), nullptr);
  PFX_CUDA(cudaDeviceSynchronize());
  to_host(k_cache, kc, static_cast<size_t>(cache_elems));
  to_host(v_cache, vc, static_cast<size_t>(cache_elems));
}

namespace {
void check_attn_dims(const ref::AttnDims& d, int64_t q_stride) {
  if (d.head_dim != kAttnHeadDim) throw InternalError("attention kernel: head_dim must be 128");
  if (d.num_kv_heads < 1 || d.num_q_heads % d.num_kv_heads != 0)
    throw InternalError("attention kernel: num_q_heads must be a multiple of num_kv_heads");
  if (q_stride % 8 != 0) throw InternalError("attention kernel: q_stride must be a multiple of 8 (16-byte loads)");
}
}  // namespace

void paged_prefill_attention(const PagedBatch& pb, const ref::AttnDims& d, const uint16_t* q, int64_t q_stride,
                             const uint16_t* k_cache, const uint16_t* v_cache, int64_t cache_elems, float scale,
                             uint16_t* out, AttnKernel kernel, int kv_splits) {
  check_attn_dims(d, q_stride);
  const size_t out_n = static_cast<size_t>(pb.num_tokens() * d.num_q_heads * d.head_dim);
  auto qd = to_dev(q, rows_span(pb.num_tokens(), q_stride, d.num_q_heads * d.head_dim));
  auto kc = to_dev(k_cache, static_cast<size_t>(cache_elems)), vc = to_dev(v_cache, static_cast<size_t>(cache_elems));
  auto od = to_dev(out, out_n);  // keeps the caller's marker where nothing is written
  DevBatchBuf db;
  db.upload(pb, static_cast<int>(d.num_q_heads / d.num_kv_heads), nullptr, kernel);
  db.plan_kv_splits(static_cast<int>(d.num_q_heads), static_cast<int>(d.num_kv_heads), kv_splits);
  launch_attention(db.view(), static_cast<int>(d.num_q_heads), static_cast<int>(d.num_kv_heads), as_bf16(qd),
                   q_stride, as_bf16(kc), as_bf16(vc), scale, as_bf16_mut(od), nullptr, kernel);
  PFX_CUDA(cudaDeviceSynchronize());
  to_host(out, od, out_n);
}

void rope(uint16_t* x, int64_t rows, int64_t stride, int64_t num_heads, int64_t head_dim, const int32_t* positions,
          const float* inv_freq) {
  const size_t n = rows_span(rows, stride, num_heads * head_dim);
  auto xd = to_dev(x, n);
  auto pd = to_dev(positions, static_cast<size_t>(rows));
  auto fd = to_dev(inv_freq, static_cast<size_t>(head_dim / 2));
  launch_rope(as_bf16_mut(xd), static_cast<int>(rows), stride, static_cast<int>(num_heads), static_cast<int>(head_dim),
              pd.get(), fd.get(), nullptr);
  PFX_CUDA(cudaDeviceSynchronize());
  to_host(x, xd, n);
}

void rmsnorm(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t n, float eps) {
  const size_t total = static_cast<size_t>(rows * n);
  auto xd = to_dev(x, total), wd = to_dev(w, static_cast<size_t>(n)), yd = to_dev(y, total);
  launch_rmsnorm(as_bf16(xd), as_bf16(wd), as_bf16_mut(yd), static_cast<int>(rows), static_cast<int>(n), eps, nullptr);
  PFX_CUDA(cudaDeviceSynchronize());
  to_host(y, yd, total);
}

void silu_mul(const uint16_t* gu, uint16_t* out, int64_t rows, int64_t inter) {
  auto gd = to_dev(gu, static_cast<size_t>(rows * 2 * inter)), od = to_dev(out, static_cast<size_t>(rows * inter));
  launch_silu_mul(as_bf16(gd), as_bf16_mut(od), static_cast<int>(rows), static_cast<int>(inter), nullptr);
  PFX_CUDA(cudaDeviceSynchronize());
  to_host(out, od, static_cast<size_t>(rows * inter));
}

int attention_kv_splits(const PagedBatch& pb, const ref::AttnDims& d) {
  check_attn_dims(d, d.num_q_heads * d.head_dim);
  DevBatchBuf db;
  db.upload(pb, static_cast<int>(d.num_q_heads / d.num_kv_heads), nullptr, AttnKernel::k2);
  return db.view().num_tiles == 0 ? 1 : k2_kv_split_choice(db.tile_key_tiles(), static_cast<int>(d.num_kv_heads)).chunks;
}

AttnTiming bench_attention(const PagedBatch& pb, const ref::AttnDims& d, int64_t num_blocks, int reps,
                           AttnKernel kernel, int kv_splits) {
  const int64_t qs = d.num_q_heads * d.head_dim;
  check_attn_dims(d, qs);
  const int64_t cache_elems = num_blocks * pb.block_size * d.num_kv_heads * d.head_dim;
  DevBuf<bf16> q(static_cast<size_t>(std::max<int64_t>(pb.num_tokens() * qs, 1)));
  DevBuf<bf16> kc(static_cast<size_t>(cache_elems)), vc(static_cast<size_t>(cache_elems));
  DevBuf<bf16> out(static_cast<size_t>(std::max<int64_t>(pb.num_tokens() * qs, 1)));
  launch_fill(q.get(), pb.num_tokens() * qs, 1, 1.f, 0.f, nullptr);
  launch_fill(kc.get(), cache_elems, 2, 1.f, 0.f, nullptr);
  launch_fill(vc.get(), cache_elems, 3, 1.f, 0.f, nullptr);
  DevBatchBuf db;
  db.upload(pb, static_cast<int>(d.num_q_heads / d.num_kv_heads), nullptr, kernel);
  db.plan_kv_splits(static_cast<int>(d.num_q_heads), static_cast<int>(d.num_kv_heads), kv_splits);
  const size_t flush_bytes = 256u << 20;  // > H100/H200 L2 (50/60 MB)
  DevBuf<char> flush(flush_bytes);
  cudaEvent_t e0, e1;
  PFX_CUDA(cudaEventCreate(&e0));
  PFX_CUDA(cudaEventCreate(&e1));
  std::vector<double> ms;
  const float scale = 1.f / std::sqrt(static_cast<float>(d.head_dim));
  for (int i = 0; i < reps + 1; ++i) {  // the first run warms up and is dropped
    PFX_CUDA(cudaMemsetAsync(flush.get(), i & 0xff, flush_bytes, nullptr));
    PFX_CUDA(cudaEventRecord(e0, nullptr));
    launch_attention(db.view(), static_cast<int>(d.num_q_heads), static_cast<int>(d.num_kv_heads), q.get(), qs,
                     kc.get(), vc.get(), scale, out.get(), nullptr, kernel);
    PFX_CUDA(cudaEventRecord(e1, nullptr));
    PFX_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    PFX_CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (i > 0) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  AttnTiming r;
  r.ms = ms.empty() ? 0 : ms[ms.size() / 2];
  r.kv_splits = db.view().kv_split.splits;
  r.kv_chunk_tiles = db.view().kv_split.chunk_tiles;
  double flops = 0, bytes = 0;
  for (int64_t b = 0; b < pb.num_seqs(); ++b) {
    const double n = pb.qo_indptr[b + 1] - pb.qo_indptr[b], c = pb.kv_len[b] - n;
    flops += 4.0 * static_cast<double>(d.head_dim * d.num_q_heads) * n * (c + n / 2);
    bytes += 2.0 * (2 * n * static_cast<double>(qs) + 2 * (c + n) * static_cast<double>(d.num_kv_heads * d.head_dim));
  }
  if (r.ms > 0) {
    r.tflops = flops / (r.ms * 1e-3) / 1e12;
    r.gbps = bytes / (r.ms * 1e-3) / 1e9;
  }
  return r;
}

}  // namespace prefixsim::gpu::cuda
