#include "gpu/cpu_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/base/error.h"

namespace prefixsim::gpu::ref {

void write_kv(const PagedBatch& pb, const AttnDims& d, const float* k_src, const float* v_src, int64_t src_stride,
              float* k_cache, float* v_cache) {
  const int64_t row = d.num_kv_heads * d.head_dim;
  for (int64_t t = 0; t < pb.num_tokens(); ++t) {
    const int64_t slot = pb.slot_mapping[static_cast<size_t>(t)];
    if (slot < 0) continue;
    for (int64_t e = 0; e < row; ++e) {
      k_cache[slot * row + e] = k_src[t * src_stride + e];
      v_cache[slot * row + e] = v_src[t * src_stride + e];
    }
  }
}

void paged_prefill_attention(const PagedBatch& pb, const AttnDims& d, const float* q, int64_t q_stride,
                             const float* k_cache, const float* v_cache, float scale, float* out) {
  if (d.num_kv_heads < 1 || d.num_q_heads % d.num_kv_heads != 0)
    throw InternalError("paged_prefill_attention: num_q_heads must be a multiple of num_kv_heads");
  const int64_t group = d.num_q_heads / d.num_kv_heads;
  const int64_t D = d.head_dim, bs = pb.block_size;
  const int64_t row = d.num_kv_heads * D;
  std::vector<float> score;
  for (int64_t b = 0; b < pb.num_seqs(); ++b) {
    const int64_t q0 = pb.qo_indptr[b], n = pb.qo_indptr[b + 1] - q0, kv_len = pb.kv_len[b];
    const int32_t* pages = pb.kv_indices.data() + pb.kv_indptr[b];
    score.resize(static_cast<size_t>(kv_len));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t last_key = kv_len - n + i;  // bottom-right: the last query sees every key
      for (int64_t h = 0; h < d.num_q_heads; ++h) {
        const float* qv = q + (q0 + i) * q_stride + h * D;
        const int64_t kvh = h / group;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j <= last_key; ++j) {
          const float* kv = k_cache + (pages[j / bs] * bs + j % bs) * row + kvh * D;
          float s = 0.0f;
          for (int64_t e = 0; e < D; ++e) s += qv[e] * kv[e];
          score[static_cast<size_t>(j)] = s * scale;
          mx = std::max(mx, s * scale);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j <= last_key; ++j) {
          score[static_cast<size_t>(j)] = std::exp(score[static_cast<size_t>(j)] - mx);
          sum += score[static_cast<size_t>(j)];
        }
        float* o = out + (q0 + i) * d.num_q_heads * D + h * D;
        for (int64_t e = 0; e < D; ++e) o[e] = 0.0f;
        for (int64_t j = 0; j <= last_key; ++j) {
          const float* vv = v_cache + (pages[j / bs] * bs + j % bs) * row + kvh * D;
          const float p = score[static_cast<size_t>(j)];
          for (int64_t e = 0; e < D; ++e) o[e] += p * vv[e];
        }
        for (int64_t e = 0; e < D; ++e) o[e] /= sum;
      }
    }
  }
}

void rope(float* x, int64_t rows, int64_t stride, int64_t num_heads, int64_t head_dim, const int32_t* positions,
          const float* inv_freq) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      // Angle in fp32 exactly as the kernel forms it, so both sides agree.
      const float angle = static_cast<float>(positions[r]) * inv_freq[i];
      const float c = std::cos(angle), s = std::sin(angle);
      for (int64_t h = 0; h < num_heads; ++h) {
        float* v = x + r * stride + h * head_dim;
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
  }
}

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float ss = 0.0f;
    for (int64_t j = 0; j < n; ++j) ss += x[r * n + j] * x[r * n + j];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = x[r * n + j] * inv * w[j];
  }
}

void silu_mul(const float* gu, float* out, int64_t rows, int64_t inter) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < inter; ++j) {
      const float g = gu[r * 2 * inter + j];
      out[r * inter + j] = g / (1.0f + std::exp(-g)) * gu[r * 2 * inter + inter + j];
    }
  }
}

void gemm_xwt(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t e = 0; e < k; ++e) s += x[i * k + e] * w[j * k + e];
      y[i * n + j] = accumulate ? y[i * n + j] + s : s;
    }
  }
}

}  // namespace prefixsim::gpu::ref
