#include "gpu/cpu_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/base/error.h"

namespace prefixsim::gpu::ref {

namespace {
// Dot product in 8 interleaved fp32 partial sums (then summed pairwise): a
// fixed order, like any other, that the compiler can keep in vector
// registers (a single running sum must stay scalar without -ffast-math).
// The real backend mode runs the CPU model through this.
inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[e + l] * b[e + l];
  for (; e < n; ++e) acc[e % 8] += a[e] * b[e];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}
}  // namespace

// The two loops the real backend mode spends its time in also get an AVX2
// clone, chosen at load time (GCC's function multiversioning). No FMA: the
// lanes compute exactly what the SSE2 build does, so results do not depend
// on the machine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PFX_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PFX_CLONES
#endif

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

PFX_CLONES void paged_prefill_attention(const PagedBatch& pb, const AttnDims& d, const float* q, int64_t q_stride,
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
          const float s = dot(qv, kv, D);
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

PFX_CLONES void gemm_xwt(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float s = dot(x + i * k, w + j * k, k);
      y[i * n + j] = accumulate ? y[i * n + j] + s : s;
    }
  }
}

}  // namespace prefixsim::gpu::ref
