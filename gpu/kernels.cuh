// Launchers of the gpu/ kernels on device pointers (CUDA-only header, used
// by kernels.cu, attention_tc.cu, harness.cu and model.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/cuda_api.h"
#include "gpu/kv_layout.h"

namespace prefixsim::gpu::cuda {

using bf16 = __nv_bfloat16;

// Throws InternalError naming the call site when a CUDA call failed.
void check(cudaError_t e, const char* what);
#define PFX_CUDA(call) ::prefixsim::gpu::cuda::check((call), #call)

// The paged-attention kernels' fixed shapes: K1 takes 64 query rows (token x
// head of one GQA group) per CTA and 32 keys per shared-memory tile, K2 128
// rows (8 warps x 16) and 64 keys; head dim 128. A GQA group must divide
// kAttnRows (then it divides kAttnRowsK2 too).
inline constexpr int kAttnRows = 64;
inline constexpr int kAttnRowsK2 = 128;
inline constexpr int kAttnHeadDim = 128;
inline constexpr int kAttnKeysPerTileK2 = 64;  // split-KV chunks are whole tiles of these
inline constexpr int attn_tile_rows(AttnKernel k) { return k == AttnKernel::k1 ? kAttnRows : kAttnRowsK2; }

struct AttnTileDev {
  int32_t seq, q_begin, q_end;
};

// K2's split-KV plan of a step (DevBatchBuf::plan_kv_splits; the choice is
// kv_layout.h's KvSplitChoice): every tile's key range cut into chunks of
// chunk_tiles key tiles, one CTA per (KV head, chunk) listed in `chunks`
// (num_chunks of them, longest first; no empty chunk is listed); their
// unnormalised fp32 partials go to `workspace`, slot = chunk index (at most
// `splits` per row), and a second kernel merges them (attention_tc.cu).
// splits = 1: the single pass, no workspace.
struct KvSplitDev {
  int32_t splits = 1;       // chunks of the longest tile: partials per row at most
  int32_t chunk_tiles = 0;  // key tiles per chunk
  int32_t num_chunks = 0;   // CTAs per KV head
  int32_t q_heads = 0;      // the workspace holds rows of this many query heads
  const KvChunk* chunks = nullptr;
  float* workspace = nullptr;
};

// The step's flattened block tables on the device (see PagedBatch).
struct DevBatch {
  const int32_t* qo_indptr;
  const int32_t* kv_indptr;
  const int32_t* kv_indices;
  const int32_t* kv_len;
  const int32_t* positions;
  const int64_t* slot_mapping;
  const AttnTileDev* tiles;
  int32_t num_tiles;
  int32_t num_tokens;
  int32_t block_size;
  int32_t tile_rows;  // query rows per tile of the plan: attn_tile_rows() of the kernel it was made for
  KvSplitDev kv_split;
};

// A device allocation of n elements of T (no copy, no init).
template <class T>
class DevBuf {
 public:
  DevBuf() = default;
  explicit DevBuf(size_t n) { resize(n); }
  ~DevBuf() { if (p_) cudaFree(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  void resize(size_t n) {  // grows only; contents are lost when it grows
    if (n <= n_) return;
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
    PFX_CUDA(cudaMalloc(&p_, n * sizeof(T)));
    n_ = n;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Device copies of a PagedBatch's arrays and of its attention tile plan
// (tiles of attn_tile_rows(kernel) / group tokens), packed in one allocation.
class DevBatchBuf {
 public:
  // Leaves the plan single-pass (kv_split.splits = 1).
  void upload(const PagedBatch& pb, int group, cudaStream_t st, AttnKernel kernel = kDefaultAttnKernel);
  // K2 plans: splits the tiles' keys as k2_kv_split_choice() chooses (or
  // as forced_kv_splits(forced_splits) when > 0), uploads the chunk list and
  // grows the split workspace to fit, so that the launches of the step
  // allocate nothing. K1 plans stay single-pass.
  void plan_kv_splits(int num_q_heads, int num_kv_heads, int forced_splits = 0);
  // Key tiles (K2's 64 keys) of each tile of the plan, plan order.
  const std::vector<int32_t>& tile_key_tiles() const { return key_tiles_; }
  const DevBatch& view() const { return view_; }

 private:
  DevBuf<char> buf_;
  DevBuf<float> split_ws_;  // grows only, reused across steps
  DevBuf<KvChunk> split_chunks_;  // likewise
  std::vector<int32_t> key_tiles_;
  std::vector<char> staging_;
  DevBatch view_{};
};

void launch_write_kv(const DevBatch& b, int kv_row, const bf16* k_src, const bf16* v_src, int64_t src_stride,
                     bf16* k_cache, bf16* v_cache, cudaStream_t st);
// Paged prefill attention with the kernel named (the batch's tile plan must
// have been made for it: DevBatchBuf::upload with the same kernel).
void launch_attention(const DevBatch& b, int num_q_heads, int num_kv_heads, const bf16* q, int64_t q_stride,
                      const bf16* k_cache, const bf16* v_cache, float scale, bf16* out, cudaStream_t st,
                      AttnKernel kernel = kDefaultAttnKernel);
// K2 alone (attention_tc.cu); scale_log2 = softmax scale * log2(e). Runs
// split-KV (two kernels) when b.kv_split.splits > 1.
void launch_attention_k2(const DevBatch& b, int num_q_heads, int num_kv_heads, const bf16* q, int64_t q_stride,
                         const bf16* k_cache, const bf16* v_cache, float scale_log2, bf16* out, cudaStream_t st);
// K2's automatic split-KV choice for a plan's tiles (key tiles per tile, as
// DevBatchBuf::tile_key_tiles) on the current device (choose_kv_splits over
// its resident-CTA slots), and the fp32 workspace the split path needs: per
// chunk slot and (token, query head) row, 128 partial outputs plus the row's
// max and sum.
KvSplitChoice k2_kv_split_choice(const std::vector<int32_t>& key_tiles, int num_kv_heads);
size_t k2_split_workspace_floats(int splits, int num_tokens, int num_q_heads);
void launch_rope(bf16* x, int rows, int64_t stride, int num_heads, int head_dim, const int32_t* positions,
                 const float* inv_freq, cudaStream_t st);
// Model inputs: x[t, j] = bf16(hash_uniform(input_stream(seed, tags[t], positions[t]), j)).
void launch_embed(bf16* x, const uint64_t* tags, const int32_t* positions, int64_t rows, int64_t hidden, uint64_t seed,
                  cudaStream_t st);
void launch_rmsnorm(const bf16* x, const bf16* w, bf16* y, int rows, int n, float eps, cudaStream_t st);
void launch_silu_mul(const bf16* gu, bf16* out, int rows, int inter, cudaStream_t st);
// Fills w[0..n) with weight values: round_bf16(offset + scale * hash_uniform(stream, i)).
void launch_fill(bf16* w, int64_t n, uint64_t stream, float scale, float offset, cudaStream_t st);

}  // namespace prefixsim::gpu::cuda
