// K2: paged prefill attention on tensor cores, FlashAttention-2 style.
//
// Same contract as K1 (kernels.cu) and ref::paged_prefill_attention: the
// queries are each request's new tokens, the keys/values its cached prefix
// pages plus its new tokens, all gathered from the paged KV cache
// ([num_blocks, block_size, kv_heads, 128] bf16 per layer, K and V);
// causal with bottom-right alignment (query i of n new tokens after c cached
// ones sees keys 0..c+i); GQA; head dim 128; bf16 in/out, fp32 accumulation.
//
// CTA = (KV head, tile of new tokens of one sequence) with 128 query rows,
// row r = (token q_begin + r / group, query head kvh * group + r % group), so
// each K/V tile gathered from the pages serves the whole GQA group. The
// configuration used (launch_attention_k2): 4 warps, each owning 32 rows (two
// m16 MMA tiles, so every K/V fragment read from shared memory feeds two
// MMAs); a warp keeps its S tile (32 x 64 fp32) and O accumulator (32 x 128
// fp32) in registers and re-reads its Q fragments from shared memory per
// k-step; two CTAs per SM (255 registers, 96 KiB shared memory each).
// Per 64-key tile: S = Q K^T with mma.sync m16n8k16 (bf16, fp32 acc; K
// fragments by ldmatrix), causal mask only on tiles that cross the diagonal,
// online softmax in the exp2 domain (row max/sum across the 4 lanes of a row
// quad; the row sum stays per lane until the end; O is rescaled only when some
// row's max moved), P rounded to bf16 in registers (the C layout of two n8
// tiles is the A layout of one k16 tile), O += P V (V fragments by
// ldmatrix.trans). K/V tiles are gathered page by page with cp.async (16-byte
// chunks, zero-filled past the last key) into a ring of kStages (2)
// shared-memory buffers, so tile t + 1 loads while tile t is computed; rows
// are XOR-swizzled in 16-byte chunks so that ldmatrix is free of bank
// conflicts. Tiles past a warp's last query are skipped (causal); CTAs are
// launched last tile first (within a sequence, the heaviest first).
//
// Split-KV (flash-decoding), when the plan asks for it (b.kv_split.splits >
// 1: decode and short queries over long contexts, where the grid above has
// a few CTAs each walking the whole context, or one long context among
// short ones): every tile's key range is cut into chunks of the same
// length, L = b.kv_split.chunk_tiles key tiles, so a tile of T key tiles
// has ceil(T / L) chunks; grid = (KV heads, chunks of the plan, listed
// longest first in b.kv_split.chunks), CTA (kvh, i) walks key tiles
// [c L, min((c + 1) L, T)) of chunk i = (tile, c), stores its rows'
// unnormalised fp32 O with their running max m and sum l in workspace slot
// c, and combine_kv_splits_kernel merges a row's partials (log-sum-exp)
// into the bf16 output, reading only the chunks that hold some of the row's
// keys. splits = 1 is the single pass above, no workspace, no merge.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gpu/kernels.cuh"
#include "sim/base/error.h"

namespace prefixsim::gpu::cuda {

namespace {
constexpr int kBr = kAttnRowsK2;  // query rows per CTA
constexpr int kD = kAttnHeadDim;  // 128
constexpr int kChunks = kD / 8;  // 16-byte chunks per row
constexpr size_t smem_bytes(int stages, int bc) {
  return (static_cast<size_t>(kBr) * kD + 2 * static_cast<size_t>(stages) * bc * kD) * 2;
}
static_assert(kD == 128 && kChunks == 16, "the swizzle and the fragment loops assume head dim 128");

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Element offset of (row, 16-byte chunk) in a [rows][128] bf16 tile with the
// chunk index XORed by row % 8: the 8 rows an ldmatrix matrix reads, at one
// logical chunk, land in 8 distinct 16-byte bank groups.
__device__ __forceinline__ int swz(int row, int chunk) { return row * kD + ((chunk ^ (row & 7)) << 3); }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  // src-size 0 zero-fills the 16 bytes (keys past the end, rows past the tile).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
// c += a . b, a 16x16 (row), b 16x8 (col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ float fast_exp2(float x) {  // ex2.approx: exp2(-inf) = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&v);
}

// The split workspace of a plan with `rows` (token, query head) rows, row
// index token * num_q_heads + head as in the output: first [split][row][128]
// partial outputs, then [split][row] (m, l) pairs (m in the exp2 domain).
__device__ __forceinline__ float2* split_stats(float* ws, int splits, int64_t rows) {
  return reinterpret_cast<float2*>(ws + static_cast<int64_t>(splits) * rows * kD);
}
__device__ __forceinline__ const float2* split_stats(const float* ws, int splits, int64_t rows) {
  return reinterpret_cast<const float2*>(ws + static_cast<int64_t>(splits) * rows * kD);
}
}  // namespace

// kStages: K/V buffers in the cp.async ring; kMT: m16 tiles (16 rows each)
// per warp. kMT = 1: 8 warps, Q fragments held in registers; kMT = 2: 4
// warps of 32 rows (each K/V fragment from shared memory feeds two MMAs), Q
// fragments re-read from shared memory per k-step, two CTAs per SM.
// kSplitKv: this CTA walks chunk b.kv_split.chunks[blockIdx.y] (a tile and
// a chunk of chunk_tiles key tiles of its range) and stores partials to
// b.kv_split.workspace instead of the output.
template <int kStages, int kMT, int kBc, bool kSplitKv>
__global__ __launch_bounds__(kBr / (16 * kMT) * 32, kMT) void paged_prefill_attention_tc_kernel(
    DevBatch b, int num_q_heads, int num_kv_heads, const bf16* __restrict__ q, int64_t q_stride,
    const bf16* __restrict__ k_cache, const bf16* __restrict__ v_cache, float scale_log2, bf16* __restrict__ out) {
  constexpr int kWarps = kBr / (16 * kMT);
  constexpr int kThreads = kWarps * 32;
  constexpr int kTileElems = kBc * kD;
  static_assert((kBr * kChunks) % kThreads == 0 && (kBc * kChunks) % kThreads == 0, "copy loops");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sK = sQ + kBr * kD;
  bf16* sV = sK + kStages * kTileElems;

  const int kvh = blockIdx.x;
  int chunk = 0;
  AttnTileDev tile;
  if constexpr (kSplitKv) {
    const KvChunk it = b.kv_split.chunks[blockIdx.y];  // longest first
    tile = b.tiles[it.tile];
    chunk = it.chunk;
  } else {
    tile = b.tiles[b.num_tiles - 1 - static_cast<int>(blockIdx.y)];  // heaviest first
  }
  const int group = num_q_heads / num_kv_heads;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int q0 = b.qo_indptr[tile.seq];
  const int n = b.qo_indptr[tile.seq + 1] - q0;
  const int kv_len = b.kv_len[tile.seq];
  const int c = kv_len - n;  // cached tokens
  const int32_t* __restrict__ pages = b.kv_indices + b.kv_indptr[tile.seq];
  const int i0 = tile.q_begin - q0;  // first new-token index of the tile
  const int rows_valid = (tile.q_end - tile.q_begin) * group;
  const int kv_end = c + (tile.q_end - q0);  // keys seen by the tile's last query
  const int n_tiles = (kv_end + kBc - 1) / kBc;
  // Key tiles [t_begin, t_end) of this CTA: all of them, or its chunk of
  // chunk_tiles whole tiles. The host lists no empty chunk; were one listed,
  // the CTA would leave its slot alone, which the merge never reads for a
  // chunk past a row's last key.
  int t_begin = 0, t_end = n_tiles;
  if constexpr (kSplitKv) {
    t_begin = chunk * b.kv_split.chunk_tiles;
    t_end = min(t_begin + b.kv_split.chunk_tiles, n_tiles);
    if (t_begin >= t_end) return;  // block-uniform, before any barrier
  }
  const int64_t kv_row = static_cast<int64_t>(num_kv_heads) * kD;
  const int bs = b.block_size;
  const int bs_shift = (bs & (bs - 1)) == 0 ? __ffs(bs) - 1 : -1;
  const int ch = tid & (kChunks - 1);  // this thread's 16-byte chunk in every copy
  const int head_off = kvh * kD + ch * 8;

  // Q tile (zero rows past the tile), the first cp.async group with K/V tile 0.
#pragma unroll
  for (int it = 0; it < kBr * kChunks / kThreads; ++it) {
    const int r = (tid >> 4) + it * (kThreads / kChunks);
    const bool ok = r < rows_valid;
    const bf16* src = q;
    if (ok) {
      src = q + static_cast<int64_t>(tile.q_begin + r / group) * q_stride +
            static_cast<int64_t>(kvh * group + r % group) * kD + ch * 8;
    }
    cp_async16(smem_addr(sQ + swz(r, ch)), src, ok);
  }
  auto load_kv = [&](int t, int stage) {
    bf16* dk = sK + stage * kTileElems;
    bf16* dv = sV + stage * kTileElems;
#pragma unroll
    for (int it = 0; it < kBc * kChunks / kThreads; ++it) {
      const int j = (tid >> 4) + it * (kThreads / kChunks);
      const int key = t * kBc + j;
      const bool ok = key < kv_end;
      int64_t off = 0;
      if (ok) {
        // Page and offset in it: shifts for power-of-two block sizes (all the
        // sim uses), division otherwise (integer division costs ~20 instructions).
        const int page = bs_shift >= 0 ? key >> bs_shift : key / bs;
        const int in_page = key - page * bs;
        const int64_t slot = static_cast<int64_t>(pages[page]) * bs + in_page;
        off = slot * kv_row + head_off;
      }
      cp_async16(smem_addr(dk + swz(j, ch)), k_cache + off, ok);
      cp_async16(smem_addr(dv + swz(j, ch)), v_cache + off, ok);
    }
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (t_begin + s < t_end) load_kv(t_begin + s, (t_begin + s) % kStages);
    cp_async_commit();
  }

  // This warp's rows and the keys they see (key <= lim). Thread rows:
  // wr0 + 16 mt + g (+ 8 for the "hi" half of the C fragment).
  const int wr0 = warp * 16 * kMT;
  const bool warp_active = wr0 < rows_valid;  // warp-uniform
  const int g = lane >> 2, tq = lane & 3;
  const int lim_warp_min = c + i0 + wr0 / group;
  const int lim_warp_max = c + i0 + (min(wr0 + 16 * kMT - 1, rows_valid - 1)) / group;
  float m[kMT][2], l[kMT][2];
  float o[kMT][kD / 8][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m[mt][h] = -INFINITY;
      l[mt][h] = 0.f;
    }
#pragma unroll
    for (int d = 0; d < kD / 8; ++d) o[mt][d][0] = o[mt][d][1] = o[mt][d][2] = o[mt][d][3] = 0.f;
  }
  // Q fragments: lane's ldmatrix row for A operands.
  const int qrow = wr0 + (lane & 7) + ((lane >> 3) & 1) * 8;
  uint32_t qf[kMT == 1 ? kD / 16 : 1][4];

#pragma unroll 1
  for (int t = t_begin; t < t_end; ++t) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile t (and Q) landed for all threads; tile t - 1's buffer is free
    if (t + kStages - 1 < t_end) load_kv(t + kStages - 1, (t + kStages - 1) % kStages);
    cp_async_commit();
    const int kt = t * kBc;
    if (!warp_active || kt > lim_warp_max) continue;  // warp-uniform
    if constexpr (kMT == 1) {
      if (t == t_begin) {
#pragma unroll
        for (int ks = 0; ks < kD / 16; ++ks)
          ldsm_x4(smem_addr(sQ + swz(qrow, 2 * ks + (lane >> 4))), qf[ks][0], qf[ks][1], qf[ks][2], qf[ks][3]);
      }
    }
    const bf16* tk = sK + (t % kStages) * kTileElems;
    const bf16* tv = sV + (t % kStages) * kTileElems;

    // S = Q K^T (16 kMT x 64 per warp).
    float s[kMT][kBc / 8][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nb = 0; nb < kBc / 8; ++nb) s[mt][nb][0] = s[mt][nb][1] = s[mt][nb][2] = s[mt][nb][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      uint32_t qa[kMT][4];
      if constexpr (kMT == 1) {
#pragma unroll
        for (int e = 0; e < 4; ++e) qa[0][e] = qf[ks][e];
      } else {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
          ldsm_x4(smem_addr(sQ + swz(qrow + 16 * mt, 2 * ks + (lane >> 4))), qa[mt][0], qa[mt][1], qa[mt][2],
                  qa[mt][3]);
      }
#pragma unroll
      for (int nb2 = 0; nb2 < kBc / 16; ++nb2) {
        const int row = nb2 * 16 + (lane >> 4) * 8 + (lane & 7);
        uint32_t b0, b1, b2, b3;
        ldsm_x4(smem_addr(tk + swz(row, 2 * ks + ((lane >> 3) & 1))), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16(s[mt][2 * nb2], qa[mt], b0, b1);
          mma_bf16(s[mt][2 * nb2 + 1], qa[mt], b2, b3);
        }
      }
    }
    // Causal mask, only on tiles crossing the diagonal of some row of the warp
    // (this also masks the zero-filled keys past kv_end).
    if (kt + kBc - 1 > lim_warp_min) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        // Last key seen by the thread's rows, relative to this thread's first column.
        const int lim_lo = c + i0 + (wr0 + 16 * mt + g) / group - kt - 2 * tq;
        const int lim_hi = c + i0 + (wr0 + 16 * mt + g + 8) / group - kt - 2 * tq;
#pragma unroll
        for (int nb = 0; nb < kBc / 8; ++nb)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (nb * 8 + e > lim_lo) s[mt][nb][e] = -INFINITY;
            if (nb * 8 + e > lim_hi) s[mt][nb][2 + e] = -INFINITY;
          }
      }
    }
    // Online softmax (exp2 domain). Tile 0 holds key 0, which every row sees,
    // so in the single pass m is finite from the first processed tile on. A
    // split chunk can start past some rows' last key: they keep m = -inf and
    // must add nothing, so they subtract 0 instead (exp2(-inf - -inf) = NaN).
    float corrs[kMT][2];
    bool all_one = true;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int nb = 0; nb < kBc / 8; ++nb) mx = fmaxf(mx, fmaxf(s[mt][nb][2 * h], s[mt][nb][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mn = fmaxf(m[mt][h], mx * scale_log2);
        const float base = (kSplitKv && mn == -INFINITY) ? 0.f : mn;
        const float corr = fast_exp2(m[mt][h] - base);
        m[mt][h] = mn;
        float sum = 0.f;
#pragma unroll
        for (int nb = 0; nb < kBc / 8; ++nb) {
          s[mt][nb][2 * h] = fast_exp2(fmaf(s[mt][nb][2 * h], scale_log2, -base));
          s[mt][nb][2 * h + 1] = fast_exp2(fmaf(s[mt][nb][2 * h + 1], scale_log2, -base));
          sum += s[mt][nb][2 * h] + s[mt][nb][2 * h + 1];
        }
        l[mt][h] = l[mt][h] * corr + sum;
        corrs[mt][h] = corr;
        all_one = all_one && corr == 1.f;
      }
    }
    // Rescale O unless no row's max moved (then the factors are exactly 1:
    // most tiles once the running max has settled).
    if (!__all_sync(0xffffffffu, all_one)) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int d = 0; d < kD / 8; ++d) {
          o[mt][d][0] *= corrs[mt][0];
          o[mt][d][1] *= corrs[mt][0];
          o[mt][d][2] *= corrs[mt][1];
          o[mt][d][3] *= corrs[mt][1];
        }
    }
    // O += P V: P (bf16) as the A operand, 4 k-steps of 16 keys.
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        a[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
      const int row = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
      for (int db2 = 0; db2 < kD / 16; ++db2) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(smem_addr(tv + swz(row, 2 * db2 + (lane >> 4))), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16(o[mt][2 * db2], a[mt], b0, b1);
          mma_bf16(o[mt][2 * db2 + 1], a[mt], b2, b3);
        }
      }
    }
  }
  cp_async_wait<0>();
  if (!warp_active) return;

#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[mt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int r = wr0 + 16 * mt + g + 8 * h;
      if (r >= rows_valid) continue;
      const int64_t tok = tile.q_begin + r / group;
      const int head = kvh * group + r % group;
      if constexpr (kSplitKv) {
        // Unnormalised: the merge rescales each split by its own max.
        const int64_t rows = static_cast<int64_t>(b.num_tokens) * num_q_heads;
        const int64_t prow = static_cast<int64_t>(chunk) * rows + tok * num_q_heads + head;
        float* op = b.kv_split.workspace + prow * kD + 2 * tq;
#pragma unroll
        for (int d = 0; d < kD / 8; ++d)
          *reinterpret_cast<float2*>(op + d * 8) = make_float2(o[mt][d][2 * h], o[mt][d][2 * h + 1]);
        if (tq == 0) split_stats(b.kv_split.workspace, b.kv_split.splits, rows)[prow] = make_float2(m[mt][h], sum);
      } else {
        const float inv = 1.f / sum;
        bf16* op = out + (tok * num_q_heads + head) * kD + 2 * tq;
#pragma unroll
        for (int d = 0; d < kD / 8; ++d) {
          *reinterpret_cast<__nv_bfloat162*>(op + d * 8) =
              __floats2bfloat162_rn(o[mt][d][2 * h] * inv, o[mt][d][2 * h + 1] * inv);
        }
      }
    }
  }
}

// Merges the split partials of every (token, query head) row: one warp per
// row, 4 output dims per lane. out = sum_c w_c O_c / sum_c w_c l_c with
// w_c = exp2(m_c - max_c m_c), over the chunks c that hold some of the row's
// keys: 0 .. position / keys_per_chunk (the row sees keys 0..position). The
// CTAs of those chunks all ran and stored every row of their tile (a row
// that saw none of the chunk's keys stored O = 0, m = -inf, l = 0: w = 0);
// chunk 0 holds key 0, which every row sees, so the max is finite.
__global__ __launch_bounds__(128) void combine_kv_splits_kernel(const float* __restrict__ ws, int splits,
                                                                 int64_t rows, int num_q_heads,
                                                                 const int32_t* __restrict__ positions,
                                                                 int keys_per_chunk, bf16* __restrict__ out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 4 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int dim = (threadIdx.x & 31) * 4;
  const float2* stats = split_stats(ws, splits, rows);
  const int n = min(splits, positions[row / num_q_heads] / keys_per_chunk + 1);
  float m_max = -INFINITY;
  for (int sp = 0; sp < n; ++sp) m_max = fmaxf(m_max, stats[sp * rows + row].x);
  float l_sum = 0.f;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
  for (int sp = 0; sp < n; ++sp) {
    const float2 ml = stats[sp * rows + row];
    const float w = exp2f(ml.x - m_max);
    const float4 o = *reinterpret_cast<const float4*>(ws + (sp * rows + row) * kD + dim);
    l_sum = fmaf(w, ml.y, l_sum);
    acc.x = fmaf(w, o.x, acc.x);
    acc.y = fmaf(w, o.y, acc.y);
    acc.z = fmaf(w, o.z, acc.z);
    acc.w = fmaf(w, o.w, acc.w);
  }
  const float inv = 1.f / l_sum;
  __nv_bfloat162* op = reinterpret_cast<__nv_bfloat162*>(out + row * kD + dim);
  op[0] = __floats2bfloat162_rn(acc.x * inv, acc.y * inv);
  op[1] = __floats2bfloat162_rn(acc.z * inv, acc.w * inv);
}

namespace {
// The configuration launched: 2 stages, 2 m16 tiles per warp (4 warps),
// 64-key tiles, the fastest of the variants measured on the H100
// (gpu/bench/RESULTS.md).
constexpr int kStagesUsed = 2, kMTUsed = 2, kBcUsed = kAttnKeysPerTileK2;
constexpr int kThreadsUsed = kBr / (16 * kMTUsed) * 32;
constexpr size_t kSmemUsed = smem_bytes(kStagesUsed, kBcUsed);

template <bool kSplitKv>
auto* k2_kernel() {
  auto* kernel = paged_prefill_attention_tc_kernel<kStagesUsed, kMTUsed, kBcUsed, kSplitKv>;
  // Once per variant: more than 48 KB of dynamic shared memory needs opting in.
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmemUsed));
  PFX_CUDA(attr);
  return kernel;
}

template <bool kSplitKv>
void launch_k2(const DevBatch& b, int num_q_heads, int num_kv_heads, const bf16* q, int64_t q_stride,
               const bf16* k_cache, const bf16* v_cache, float scale_log2, bf16* out, cudaStream_t st) {
  const dim3 grid(static_cast<unsigned>(num_kv_heads),
                  static_cast<unsigned>(kSplitKv ? b.kv_split.num_chunks : b.num_tiles));
  auto* kernel = k2_kernel<kSplitKv>();
  kernel<<<grid, kThreadsUsed, kSmemUsed, st>>>(b, num_q_heads, num_kv_heads, q, q_stride, k_cache, v_cache,
                                                scale_log2, out);
}

void launch_combine(const DevBatch& b, int num_q_heads, bf16* out, cudaStream_t st) {
  const int64_t rows = static_cast<int64_t>(b.num_tokens) * num_q_heads;
  const unsigned blocks = static_cast<unsigned>((rows + 3) / 4);
  combine_kv_splits_kernel<<<blocks, 128, 0, st>>>(b.kv_split.workspace, b.kv_split.splits, rows, num_q_heads,
                                                   b.positions, b.kv_split.chunk_tiles * kBcUsed, out);
}

// CTAs of K2 resident at once on the current device: SMs x CTAs per SM.
int k2_cta_slots() {
  static const int slots = [] {
    int dev = 0, sms = 0, per_sm = 0;
    PFX_CUDA(cudaGetDevice(&dev));
    PFX_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    PFX_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k2_kernel<true>(), kThreadsUsed, kSmemUsed));
    return sms * std::max(per_sm, 1);
  }();
  return slots;
}
}  // namespace

KvSplitChoice k2_kv_split_choice(const std::vector<int32_t>& key_tiles, int num_kv_heads) {
  return choose_kv_splits(key_tiles, num_kv_heads, k2_cta_slots());
}

size_t k2_split_workspace_floats(int splits, int num_tokens, int num_q_heads) {
  return static_cast<size_t>(splits) * static_cast<size_t>(num_tokens) * static_cast<size_t>(num_q_heads) * (kD + 2);
}

void launch_attention_k2(const DevBatch& b, int num_q_heads, int num_kv_heads, const bf16* q, int64_t q_stride,
                         const bf16* k_cache, const bf16* v_cache, float scale_log2, bf16* out, cudaStream_t st) {
  if (b.num_tiles == 0) return;
  if (b.tile_rows != kBr) throw InternalError("attention K2: the tile plan is not for 128-row tiles");
  if (b.num_tiles > 65535) throw InternalError("attention K2: more than 65535 query tiles in one step");
  if (b.kv_split.splits <= 1) {
    launch_k2<false>(b, num_q_heads, num_kv_heads, q, q_stride, k_cache, v_cache, scale_log2, out, st);
  } else {
    if (b.kv_split.workspace == nullptr || b.kv_split.chunks == nullptr || b.kv_split.q_heads != num_q_heads)
      throw InternalError("attention K2: the split-KV workspace was planned for another number of query heads");
    if (b.kv_split.num_chunks < 1 || b.kv_split.num_chunks > 65535 || b.kv_split.chunk_tiles < 1)
      throw InternalError("attention K2: bad split-KV chunk list");
    launch_k2<true>(b, num_q_heads, num_kv_heads, q, q_stride, k_cache, v_cache, scale_log2, out, st);
    launch_combine(b, num_q_heads, out, st);
  }
  PFX_CUDA(cudaGetLastError());
}

}  // namespace prefixsim::gpu::cuda
