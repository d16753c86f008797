// The CUDA side of gpu/, behind a plain C++ header (no CUDA types), so the
// CLI and the tests can call it without CUDA headers. Defined in kernels.cu
// and model.cu; linked only when the build found nvcc (PREFIXSIM_WITH_CUDA).
//
// STATUS: the tests in test/gpu/test_gpu_kernels.cpp, which compare every
// entry point here with its CPU reference (gpu/cpu_ref.h), passed on an H100
// on 2026-11-22 (gpu/README.md, gpu/bench/RESULTS.md). make_gpu_runner and
// Model::forward_tagged (the backend mode, 2026-11-28) have a test that has
// not yet run on a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/cpu_ref.h"
#include "gpu/kv_layout.h"
#include "gpu/model_runner.h"
#include "gpu/model_shape.h"
#include "sim/engine/batch.h"

namespace prefixsim::gpu::cuda {

// The two implementations of the paged prefill attention (kernel (b)):
//   k1: FlashAttention-1 style on CUDA cores (kernels.cu), 64-row CTAs;
//   k2: FlashAttention-2 style on tensor cores (mma.sync m16n8k16 bf16,
//       ldmatrix, cp.async double buffering; attention_tc.cu), 128-row CTAs.
// Same contract and results (up to summation order and K2's bf16 rounding of
// the softmax probabilities before the P.V product).
enum class AttnKernel { k1, k2 };
// The one launch_attention uses when none is named (the model runner).
inline constexpr AttnKernel kDefaultAttnKernel = AttnKernel::k2;
inline const char* attn_kernel_name(AttnKernel k) { return k == AttnKernel::k1 ? "attn_k1" : "attn_k2"; }

struct DeviceInfo {
  int count = 0;       // 0 when there is no driver or no device
  std::string name;    // of device 0
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::string cuda;    // runtime version, e.g. "13.0"
  std::string error;   // why count is 0, if it is
};
DeviceInfo query_devices();

// ---- Harness: host buffers of bf16 bits in and out; each call allocates,
// copies in (output buffers too, so a marker pre-filled by the caller
// survives wherever the kernel does not write), runs, synchronizes, copies
// back. Throws InternalError on a CUDA error.

// Kernel (a): new tokens' K/V rows (read at src + row * src_stride) into
// their slots of one layer's caches of cache_elems elements each.
void write_kv(const PagedBatch& pb, const ref::AttnDims& d, const uint16_t* k_src, const uint16_t* v_src,
              int64_t src_stride, uint16_t* k_cache, uint16_t* v_cache, int64_t cache_elems);
// Kernel (b): head_dim must be 128, num_q_heads / num_kv_heads must divide
// 64, q_stride must be a multiple of 8. out is [rows, num_q_heads * 128].
// kv_splits (K2 only; K1 ignores it): 0 = K2's automatic split-KV choice,
// n >= 1 forces chunks of ceil(T / n) key tiles, T those of the longest
// tile: n chunks of that tile, fewer of shorter ones (1: the single pass; at
// most 64).
void paged_prefill_attention(const PagedBatch& pb, const ref::AttnDims& d, const uint16_t* q, int64_t q_stride,
                             const uint16_t* k_cache, const uint16_t* v_cache, int64_t cache_elems, float scale,
                             uint16_t* out, AttnKernel kernel = kDefaultAttnKernel, int kv_splits = 0);
// The split-KV count K2 chooses for pb on device 0: chunks of its longest
// tile (1 = single pass).
int attention_kv_splits(const PagedBatch& pb, const ref::AttnDims& d);
// Kernels (c), same contracts as their references.
void rope(uint16_t* x, int64_t rows, int64_t stride, int64_t num_heads, int64_t head_dim, const int32_t* positions,
          const float* inv_freq);
void rmsnorm(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t n, float eps);
void silu_mul(const uint16_t* gu, uint16_t* out, int64_t rows, int64_t inter);
// cuBLASLt, fp32 accumulation: y[m, n] = x[m, k] . w[n, k]^T (+ y).
void gemm_xwt(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t m, int64_t n, int64_t k, bool accumulate);

// ---- Benchmark of kernel (b) on random data: median over `reps` runs, L2
// flushed before each, timed with CUDA events.
struct AttnTiming {
  double ms = 0;
  double tflops = 0;  // FlashAttention's count: 4 * d * Hq * sum n (c + n / 2)
  double gbps = 0;    // Q read + K/V context read + O written, once each
  int kv_splits = 1;  // K2's split-KV chunks of the longest tile in the timed launches (1: single pass)
  int kv_chunk_tiles = 0;  // key tiles (64 keys) per chunk when split
};
// kv_splits as for paged_prefill_attention.
AttnTiming bench_attention(const PagedBatch& pb, const ref::AttnDims& d, int64_t num_blocks, int reps,
                           AttnKernel kernel = kDefaultAttnKernel, int kv_splits = 0);

// ---- The random-weight Llama model (weights as in model_shape.h) with its
// own paged KV pool of num_blocks blocks on the device.
class Model {
 public:
  Model(const ModelShape& shape, int64_t num_blocks, int32_t block_size, uint64_t seed);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const KvPoolLayout& layout() const;
  // One prefill step: input and output [rows, hidden] bf16 bits (output after
  // the final norm). Writes the step's K/V into the pool.
  void forward(const PagedBatch& pb, const uint16_t* input, uint16_t* output);
  // Device time of one forward of pb on fixed random inputs: median of reps,
  // L2 flushed before each. Overwrites the step's slots in the pool.
  double time_forward_ms(const PagedBatch& pb, int reps);
  // One step whose inputs are input_value(input_seed, tags[t], position, .):
  // the final hidden states of `rows` into out (rows x hidden bf16 bits);
  // returns the forward's device time in ms (CUDA events, no L2 flush).
  double forward_tagged(const PagedBatch& pb, const std::vector<uint64_t>& tags, uint64_t input_seed,
                        const std::vector<int64_t>& rows, std::vector<uint16_t>& out);
  // Block b's KV, every layer's K then V, as bf16 bits; and back.
  void read_block(int64_t b, std::vector<uint16_t>& out);
  void write_block(int64_t b, const std::vector<uint16_t>& in);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The model runner of the real backend mode (gpu/backend.h) on device 0:
// a Model whose inputs come from the tokens' tags (an embedding kernel,
// input_value's recipe), timed with CUDA events around the forward alone
// (no L2 flush: the steady state of a serving engine).
std::unique_ptr<ModelRunner> make_gpu_runner(const ModelShape& shape, int64_t num_blocks, int32_t block_size,
                                             uint64_t seed);


}  // namespace prefixsim::gpu::cuda
