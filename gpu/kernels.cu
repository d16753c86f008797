// CUDA kernels of gpu/ and their launchers (K2, the tensor-core attention, is
// in attention_tc.cu). test/gpu/test_gpu_kernels.cpp holds the comparisons
// with gpu/cpu_ref.h; they passed on an H100 on 2026-11-22 and must pass
// again on a device after any change here before a number is trusted.
#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/hd.h"
#include "gpu/kernels.cuh"
#include "sim/base/error.h"

namespace prefixsim::gpu::cuda {

// ---------------------------------------------------------------- (a) K/V slot write
// One CTA per new token; threads copy its K and V rows into the slot.
__global__ void write_kv_kernel(const int64_t* slots, int kv_row, const bf16* k_src, const bf16* v_src,
                                int64_t src_stride, bf16* k_cache, bf16* v_cache) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slots[t];
  if (slot < 0) return;  // padding token
  for (int e = threadIdx.x; e < kv_row; e += blockDim.x) {
    k_cache[slot * kv_row + e] = k_src[t * src_stride + e];
    v_cache[slot * kv_row + e] = v_src[t * src_stride + e];
  }
}

void launch_write_kv(const DevBatch& b, int kv_row, const bf16* k_src, const bf16* v_src, int64_t src_stride,
                     bf16* k_cache, bf16* v_cache, cudaStream_t st) {
  if (b.num_tokens == 0) return;
  write_kv_kernel<<<b.num_tokens, 128, 0, st>>>(b.slot_mapping, kv_row, k_src, v_src, src_stride, k_cache, v_cache);
  PFX_CUDA(cudaGetLastError());
}

// ---------------------------------------------------------------- (b) paged prefill attention
// A straightforward tiled online-softmax kernel (FlashAttention-1 style on
// CUDA cores, no tensor cores yet). CTA = (tile of new tokens of one
// sequence, one KV head); its 64 rows are (token, query head of the GQA
// group) pairs, so each K/V tile gathered from the pages is shared by the
// whole group. Each warp owns 16 rows; per 32-key tile a lane scores one
// key, the warp does the softmax update with shuffles, and a lane
// accumulates 4 of the 128 output dims.
namespace {
constexpr int kKeys = 32;
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = kAttnRows / kWarps;
constexpr int kD = kAttnHeadDim;
constexpr int kKPad = kD + 2;  // K row stride 65 words: lane j reading K[j][d] hits bank (j + d/2) % 32

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
}  // namespace

__global__ __launch_bounds__(kWarps * 32) void paged_prefill_attention_kernel(
    DevBatch b, int num_q_heads, int num_kv_heads, const bf16* __restrict__ q, int64_t q_stride,
    const bf16* __restrict__ k_cache, const bf16* __restrict__ v_cache, float scale_log2, bf16* __restrict__ out) {
  __shared__ __align__(16) bf16 sQ[kAttnRows][kD];
  __shared__ __align__(16) bf16 sK[kKeys][kKPad];
  __shared__ __align__(16) bf16 sV[kKeys][kD];

  const AttnTileDev tile = b.tiles[blockIdx.x];
  const int kvh = blockIdx.y;
  const int group = num_q_heads / num_kv_heads;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int q0 = b.qo_indptr[tile.seq];
  const int n = b.qo_indptr[tile.seq + 1] - q0;
  const int kv_len = b.kv_len[tile.seq];
  const int32_t* pages = b.kv_indices + b.kv_indptr[tile.seq];
  const int rows_valid = (tile.q_end - tile.q_begin) * group;
  const int64_t kv_row = static_cast<int64_t>(num_kv_heads) * kD;

  // Q tile: row r = (token q_begin + r / group, head kvh * group + r % group); 16-byte chunks.
  for (int idx = tid; idx < kAttnRows * kD / 8; idx += blockDim.x) {
    const int r = idx / (kD / 8), c = (idx % (kD / 8)) * 8;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < rows_valid) {
      const int64_t tok = tile.q_begin + r / group;
      const int head = kvh * group + r % group;
      val = *reinterpret_cast<const uint4*>(q + tok * q_stride + static_cast<int64_t>(head) * kD + c);
    }
    *reinterpret_cast<uint4*>(&sQ[r][c]) = val;
  }

  // Keys needed by the tile: up to the last query's position (bottom-right causal).
  const int kv_end = kv_len - n + (tile.q_end - q0);
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][4];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -INFINITY;
    l[rr] = 0.f;
    acc[rr][0] = acc[rr][1] = acc[rr][2] = acc[rr][3] = 0.f;
  }

  for (int kt = 0; kt < kv_end; kt += kKeys) {
    __syncthreads();  // previous tile fully consumed (and Q stored, on the first pass)
    for (int idx = tid; idx < kKeys * kD / 8; idx += blockDim.x) {
      const int j = idx / (kD / 8), c = (idx % (kD / 8)) * 8;
      const int key = kt + j;
      uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
      if (key < kv_end) {
        const int64_t slot = static_cast<int64_t>(pages[key / b.block_size]) * b.block_size + key % b.block_size;
        const int64_t off = slot * kv_row + static_cast<int64_t>(kvh) * kD + c;
        kv = *reinterpret_cast<const uint4*>(k_cache + off);
        vv = *reinterpret_cast<const uint4*>(v_cache + off);
      }
      // sK rows are 260 bytes apart (padding), so store 4-byte words.
      uint32_t* dk = reinterpret_cast<uint32_t*>(&sK[j][c]);
      dk[0] = kv.x;
      dk[1] = kv.y;
      dk[2] = kv.z;
      dk[3] = kv.w;
      *reinterpret_cast<uint4*>(&sV[j][c]) = vv;
    }
    __syncthreads();

#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      if (r >= rows_valid) continue;  // warp-uniform
      const int qpos = kv_len - n + (tile.q_begin + r / group - q0);
      if (kt > qpos) continue;  // whole tile in this row's future; warp-uniform
      const int key = kt + lane;
      float s = 0.f;
#pragma unroll 8
      for (int d = 0; d < kD; d += 2) {
        const float2 qf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&sQ[r][d]));
        const float2 kf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&sK[lane][d]));
        s = fmaf(qf.x, kf.x, s);
        s = fmaf(qf.y, kf.y, s);
      }
      s = (key <= qpos) ? s * scale_log2 : -INFINITY;
      // Key kt <= qpos is always valid here, so m_new is finite.
      const float m_new = fmaxf(m[rr], warp_max(s));
      const float p = exp2f(s - m_new);
      const float corr = exp2f(m[rr] - m_new);
      l[rr] = l[rr] * corr + warp_sum(p);
      m[rr] = m_new;
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[rr][e] *= corr;
#pragma unroll 4
      for (int j = 0; j < kKeys; ++j) {
        const float pj = __shfl_sync(0xffffffffu, p, j);
        const __nv_bfloat162* vp = reinterpret_cast<const __nv_bfloat162*>(&sV[j][lane * 4]);
        const float2 v01 = __bfloat1622float2(vp[0]), v23 = __bfloat1622float2(vp[1]);
        acc[rr][0] = fmaf(pj, v01.x, acc[rr][0]);
        acc[rr][1] = fmaf(pj, v01.y, acc[rr][1]);
        acc[rr][2] = fmaf(pj, v23.x, acc[rr][2]);
        acc[rr][3] = fmaf(pj, v23.y, acc[rr][3]);
      }
    }
  }

#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int r = warp * kRowsPerWarp + rr;
    if (r >= rows_valid) continue;
    const int64_t tok = tile.q_begin + r / group;
    const int head = kvh * group + r % group;
    const float inv = 1.f / l[rr];
    __nv_bfloat162* o = reinterpret_cast<__nv_bfloat162*>(out + (tok * num_q_heads + head) * kD + lane * 4);
    o[0] = __floats2bfloat162_rn(acc[rr][0] * inv, acc[rr][1] * inv);
    o[1] = __floats2bfloat162_rn(acc[rr][2] * inv, acc[rr][3] * inv);
  }
}

void launch_attention(const DevBatch& b, int num_q_heads, int num_kv_heads, const bf16* q, int64_t q_stride,
                      const bf16* k_cache, const bf16* v_cache, float scale, bf16* out, cudaStream_t st,
                      AttnKernel kernel) {
  if (b.tile_rows != attn_tile_rows(kernel))
    throw InternalError("launch_attention: the batch's tile plan was made for the other attention kernel");
  if (b.num_tiles == 0) return;
  if (kernel == AttnKernel::k2) {
    launch_attention_k2(b, num_q_heads, num_kv_heads, q, q_stride, k_cache, v_cache, scale * 1.4426950408889634f, out,
                        st);
    return;
  }
  const dim3 grid(static_cast<unsigned>(b.num_tiles), static_cast<unsigned>(num_kv_heads));
  paged_prefill_attention_kernel<<<grid, kWarps * 32, 0, st>>>(b, num_q_heads, num_kv_heads, q, q_stride, k_cache,
                                                               v_cache, scale * 1.4426950408889634f, out);
  PFX_CUDA(cudaGetLastError());
}

// ---------------------------------------------------------------- (c) RoPE, RMSNorm, SiLU-and-mul
__global__ void rope_kernel(bf16* x, int64_t stride, int num_heads, int head_dim, const int32_t* positions,
                            const float* inv_freq) {
  const int64_t r = blockIdx.x;
  const int half = head_dim / 2;
  const float pos = static_cast<float>(positions[r]);
  for (int idx = threadIdx.x; idx < num_heads * half; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);  // same fp32 angle as the reference
    bf16* v = x + r * stride + static_cast<int64_t>(h) * head_dim;
    const float a = __bfloat162float(v[i]), bb = __bfloat162float(v[i + half]);
    v[i] = __float2bfloat16(a * c - bb * s);
    v[i + half] = __float2bfloat16(bb * c + a * s);
  }
}

void launch_rope(bf16* x, int rows, int64_t stride, int num_heads, int head_dim, const int32_t* positions,
                 const float* inv_freq, cudaStream_t st) {
  if (rows == 0) return;
  rope_kernel<<<rows, 256, 0, st>>>(x, stride, num_heads, head_dim, positions, inv_freq);
  PFX_CUDA(cudaGetLastError());
}

__global__ void rmsnorm_kernel(const bf16* x, const bf16* w, bf16* y, int n, float eps) {
  __shared__ float partial[32];
  const int64_t r = blockIdx.x;
  const bf16* xr = x + r * n;
  float ss = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = __bfloat162float(xr[j]);
    ss += v * v;
  }
  ss = warp_sum(ss);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    t = warp_sum(t);
    if (threadIdx.x == 0) partial[0] = t;
  }
  __syncthreads();
  const float inv = rsqrtf(partial[0] / static_cast<float>(n) + eps);
  for (int j = threadIdx.x; j < n; j += blockDim.x)
    y[r * n + j] = __float2bfloat16(__bfloat162float(xr[j]) * inv * __bfloat162float(w[j]));
}

void launch_rmsnorm(const bf16* x, const bf16* w, bf16* y, int rows, int n, float eps, cudaStream_t st) {
  if (rows == 0) return;
  rmsnorm_kernel<<<rows, 256, 0, st>>>(x, w, y, n, eps);
  PFX_CUDA(cudaGetLastError());
}

__global__ void silu_mul_kernel(const bf16* gu, bf16* out, int64_t total, int inter) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / inter, j = i % inter;
    const float g = __bfloat162float(gu[r * 2 * inter + j]);
    const float u = __bfloat162float(gu[r * 2 * inter + inter + j]);
    out[i] = __float2bfloat16(g / (1.f + expf(-g)) * u);
  }
}

void launch_silu_mul(const bf16* gu, bf16* out, int rows, int inter, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(rows) * inter;
  if (total == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 65535));
  silu_mul_kernel<<<blocks, 256, 0, st>>>(gu, out, total, inter);
  PFX_CUDA(cudaGetLastError());
}

__global__ void fill_kernel(uint16_t* w, int64_t n, uint64_t stream, float scale, float offset) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // Same integer recipe as the host's weight_value().
    w[i] = f32_to_bf16(__fadd_rn(offset, __fmul_rn(scale, hash_uniform(stream, static_cast<uint64_t>(i)))));
  }
}

__global__ void embed_kernel(uint16_t* x, const uint64_t* tags, const int32_t* positions, int64_t rows, int64_t hidden,
                             uint64_t seed) {
  const int64_t n = rows * hidden;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / hidden, j = i - t * hidden;
    // Same integer recipe as the host's input_value().
    x[i] = f32_to_bf16(hash_uniform(input_stream(seed, tags[t], positions[t]), static_cast<uint64_t>(j)));
  }
}

void launch_embed(bf16* x, const uint64_t* tags, const int32_t* positions, int64_t rows, int64_t hidden, uint64_t seed,
                  cudaStream_t st) {
  const int64_t n = rows * hidden;
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
  embed_kernel<<<blocks, 256, 0, st>>>(reinterpret_cast<uint16_t*>(x), tags, positions, rows, hidden, seed);
  PFX_CUDA(cudaGetLastError());
}

void launch_fill(bf16* w, int64_t n, uint64_t stream, float scale, float offset, cudaStream_t st) {
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
  fill_kernel<<<blocks, 256, 0, st>>>(reinterpret_cast<uint16_t*>(w), n, stream, scale, offset);
  PFX_CUDA(cudaGetLastError());
}

}  // namespace prefixsim::gpu::cuda
