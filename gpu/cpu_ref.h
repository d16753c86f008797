// fp32 CPU references of every kernel in gpu/. They are the ground truth the
// GPU tests compare against, so they are written for clarity, not speed:
// plain loops, keys visited in position order, two-pass softmax.
#pragma once

#include <cstdint>

#include "gpu/kv_layout.h"

namespace prefixsim::gpu::ref {

struct AttnDims {
  int64_t num_q_heads = 0;
  int64_t num_kv_heads = 0;  // num_q_heads must be a multiple (GQA)
  int64_t head_dim = 0;
};

// Writes each new token's K and V rows (kv_heads * head_dim values, read at
// k_src + row * src_stride) into its slot of one layer's caches
// [num_blocks, block_size, kv_heads, head_dim]. Slots < 0 are skipped (vLLM's
// padding convention).
void write_kv(const PagedBatch& pb, const AttnDims& d, const float* k_src, const float* v_src, int64_t src_stride,
              float* k_cache, float* v_cache);

// Paged prefill attention for one layer. Query row t (head h at
// q + t * q_stride + h * head_dim) belongs to sequence b and sits at position
// p = kv_len[b] - n_b + i (bottom-right causal alignment); it attends to the
// keys at positions 0..p of its sequence, all read from the pages (the new
// tokens' K/V must have been written first). GQA: query head h reads KV head
// h / (num_q_heads / num_kv_heads). Output [rows, num_q_heads * head_dim].
void paged_prefill_attention(const PagedBatch& pb, const AttnDims& d, const float* q, int64_t q_stride,
                             const float* k_cache, const float* v_cache, float scale, float* out);

// In-place rotary embedding (Llama / NeoX "rotate half": dims i and i + D/2
// form a pair) of `num_heads` heads of head_dim starting at x + row * stride.
void rope(float* x, int64_t rows, int64_t stride, int64_t num_heads, int64_t head_dim, const int32_t* positions,
          const float* inv_freq);

// y = x / sqrt(mean(x^2) + eps) * w, per row of n values.
void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// out[r, j] = silu(gu[r, j]) * gu[r, I + j] for gu rows of 2 * I values.
void silu_mul(const float* gu, float* out, int64_t rows, int64_t inter);

// y[m, n] = x[m, k] . w[n, k]^T (+ y if accumulate), fp32, plain loops.
void gemm_xwt(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate);

}  // namespace prefixsim::gpu::ref
