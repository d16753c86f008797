// cuBLASLt GEMMs and the random-weight Llama model runner: a full prefill
// forward of one Batch over the model's own paged KV pool (attention by
// kDefaultAttnKernel, K2). Tested against CpuLlama on an H100, 2026-11-22
// (see cuda_api.h). make_gpu_runner is the real backend mode's runner.
#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "gpu/cuda_api.h"
#include "gpu/hd.h"
#include "gpu/kernels.cuh"
#include "sim/base/error.h"

namespace prefixsim::gpu::cuda {

namespace {

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw InternalError(std::string("cuBLASLt: ") + what + ": status " + std::to_string(static_cast<int>(s)));
}
#define PFX_LT(call) check_lt((call), #call)

// y[m, n] = x[m, k] . w[n, k]^T (+ y): in cuBLAS's column-major terms
// y^T (n x m) = op(W^T col-major k x n)^T * x^T (k x m). bf16 in and out,
// fp32 accumulate; the plan for each shape is built once and cached.
class Gemm {
 public:
  Gemm() {
    PFX_LT(cublasLtCreate(&lt_));
    ws_.resize(kWorkspace);
  }
  ~Gemm() {
    for (auto& [key, p] : plans_) {
      cublasLtMatmulDescDestroy(p.op);
      cublasLtMatrixLayoutDestroy(p.a);
      cublasLtMatrixLayoutDestroy(p.b);
      cublasLtMatrixLayoutDestroy(p.c);
    }
    cublasLtDestroy(lt_);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  void run(const bf16* x, const bf16* w, bf16* y, int64_t m, int64_t n, int64_t k, bool accumulate, cudaStream_t st) {
    if (m == 0) return;
    const Plan& p = plan(m, n, k);
    const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
    PFX_LT(cublasLtMatmul(lt_, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, ws_.get(), kWorkspace, st));
  }

 private:
  static constexpr size_t kWorkspace = 32u << 20;
  struct Plan {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
  };
  const Plan& plan(int64_t m, int64_t n, int64_t k) {
    const auto key = std::make_tuple(m, n, k);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    Plan p{};
    PFX_LT(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    PFX_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PFX_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    PFX_LT(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k));
    PFX_LT(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k));
    PFX_LT(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n));
    cublasLtMatmulPreference_t pref;
    PFX_LT(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = kWorkspace;
    PFX_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    PFX_LT(cublasLtMatmulAlgoGetHeuristic(lt_, p.op, p.a, p.b, p.c, p.c, pref, 1, &heur, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0) throw InternalError("cuBLASLt: no algorithm for this GEMM shape");
    p.algo = heur.algo;
    return plans_.emplace(key, p).first->second;
  }

  cublasLtHandle_t lt_{};
  DevBuf<char> ws_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Plan> plans_;
};

}  // namespace

void gemm_xwt(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
  DevBuf<uint16_t> xd(static_cast<size_t>(std::max<int64_t>(m * k, 1))), wd(static_cast<size_t>(n * k)),
      yd(static_cast<size_t>(std::max<int64_t>(m * n, 1)));
  PFX_CUDA(cudaMemcpy(xd.get(), x, static_cast<size_t>(m * k) * 2, cudaMemcpyHostToDevice));
  PFX_CUDA(cudaMemcpy(wd.get(), w, static_cast<size_t>(n * k) * 2, cudaMemcpyHostToDevice));
  PFX_CUDA(cudaMemcpy(yd.get(), y, static_cast<size_t>(m * n) * 2, cudaMemcpyHostToDevice));
  Gemm g;
  g.run(reinterpret_cast<const bf16*>(xd.get()), reinterpret_cast<const bf16*>(wd.get()),
        reinterpret_cast<bf16*>(yd.get()), m, n, k, accumulate, nullptr);
  PFX_CUDA(cudaDeviceSynchronize());
  PFX_CUDA(cudaMemcpy(y, yd.get(), static_cast<size_t>(m * n) * 2, cudaMemcpyDeviceToHost));
}

struct Model::Impl {
  ModelShape s;
  KvPoolLayout layout;
  DevBuf<bf16> weights;  // all tensors, layer by layer, in Tensor order
  std::vector<std::vector<bf16*>> w;  // [layer][tensor]; final norm at [layers][kFinalNorm]
  DevBuf<bf16> pool;
  DevBuf<float> inv_freq;
  Gemm gemm;
  DevBatchBuf batch;
  // Activations, grown to the largest step seen.
  DevBuf<bf16> x, h, qkv, attn, gu, act, in_fixed;
  DevBuf<char> flush;
  DevBuf<uint64_t> tags;       // forward_tagged's token tags
  cudaEvent_t e0 = nullptr, e1 = nullptr;  // forward_tagged's timing, made once
  ~Impl() {
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
  }

  bf16* tensor(int64_t l, Tensor t) const { return w[static_cast<size_t>(l)][static_cast<size_t>(t)]; }

  void forward_device(const PagedBatch& pb, cudaStream_t st) {
    const int T = static_cast<int>(pb.num_tokens());
    const int64_t H = s.hidden, D = s.head_dim;
    const float scale = 1.f / std::sqrt(static_cast<float>(D));
    for (int64_t l = 0; l < s.layers; ++l) {
      bf16* kc = pool.get() + layout.offset(l, 0, 0, 0, 0, 0);
      bf16* vc = pool.get() + layout.offset(l, 1, 0, 0, 0, 0);
      launch_rmsnorm(x.get(), tensor(l, Tensor::kAttnNorm), h.get(), T, static_cast<int>(H), s.rms_eps, st);
      gemm.run(h.get(), tensor(l, Tensor::kQkv), qkv.get(), T, s.qkv_size(), H, false, st);
      launch_rope(qkv.get(), T, s.qkv_size(), static_cast<int>(s.heads), static_cast<int>(D), batch.view().positions,
                  inv_freq.get(), st);
      launch_rope(qkv.get() + s.q_size(), T, s.qkv_size(), static_cast<int>(s.kv_heads), static_cast<int>(D),
                  batch.view().positions, inv_freq.get(), st);
      launch_write_kv(batch.view(), static_cast<int>(s.kv_size()), qkv.get() + s.q_size(),
                      qkv.get() + s.q_size() + s.kv_size(), s.qkv_size(), kc, vc, st);
      launch_attention(batch.view(), static_cast<int>(s.heads), static_cast<int>(s.kv_heads), qkv.get(), s.qkv_size(),
                       kc, vc, scale, attn.get(), st);
      gemm.run(attn.get(), tensor(l, Tensor::kO), x.get(), T, H, s.q_size(), true, st);  // residual add
      launch_rmsnorm(x.get(), tensor(l, Tensor::kMlpNorm), h.get(), T, static_cast<int>(H), s.rms_eps, st);
      gemm.run(h.get(), tensor(l, Tensor::kGateUp), gu.get(), T, 2 * s.intermediate, H, false, st);
      launch_silu_mul(gu.get(), act.get(), T, static_cast<int>(s.intermediate), st);
      gemm.run(act.get(), tensor(l, Tensor::kDown), x.get(), T, H, s.intermediate, true, st);
    }
    launch_rmsnorm(x.get(), tensor(s.layers, Tensor::kFinalNorm), h.get(), T, static_cast<int>(H), s.rms_eps, st);
  }

  void prepare(const PagedBatch& pb) {
    if (pb.block_size != layout.block_size) throw InternalError("gpu model: batch block size differs from the pool's");
    for (int32_t id : pb.kv_indices)
      if (id < 0 || id >= layout.num_blocks) throw InternalError("gpu model: block id outside the KV pool");
    const size_t T = static_cast<size_t>(std::max<int64_t>(pb.num_tokens(), 1));
    x.resize(T * s.hidden);
    h.resize(T * s.hidden);
    qkv.resize(T * s.qkv_size());
    attn.resize(T * s.q_size());
    gu.resize(T * 2 * s.intermediate);
    act.resize(T * s.intermediate);
    batch.upload(pb, static_cast<int>(s.heads / s.kv_heads), nullptr);
    batch.plan_kv_splits(static_cast<int>(s.heads), static_cast<int>(s.kv_heads));  // workspace grown here, not per layer
  }
};

Model::Model(const ModelShape& shape, int64_t num_blocks, int32_t block_size, uint64_t seed) : impl_(new Impl) {
  Impl& m = *impl_;
  shape.validate();
  if (shape.head_dim != kAttnHeadDim) throw InputError("gpu model: the attention kernel needs head_dim 128");
  if (kAttnRows % (shape.heads / shape.kv_heads) != 0) throw InputError("gpu model: GQA group must divide 64");
  m.s = shape;
  m.layout = pool_layout_for(num_blocks, block_size, shape);
  const Tensor order[] = {Tensor::kAttnNorm, Tensor::kQkv, Tensor::kO, Tensor::kMlpNorm, Tensor::kGateUp, Tensor::kDown};
  int64_t total = 0;
  for (Tensor t : order) total += tensor_dims(shape, t).first * tensor_dims(shape, t).second;
  total = total * shape.layers + shape.hidden;
  m.weights.resize(static_cast<size_t>(total));
  bf16* p = m.weights.get();
  m.w.assign(static_cast<size_t>(shape.layers + 1), std::vector<bf16*>(7, nullptr));
  auto place = [&](int64_t l, Tensor t) {
    const auto [r, c] = tensor_dims(shape, t);
    m.w[static_cast<size_t>(l)][static_cast<size_t>(t)] = p;
    // Same recipe as weight_value(): offset + scale * u, rounded to bf16.
    launch_fill(p, r * c, weight_seed(seed, l, t), is_norm(t) ? 0.125f : linear_scale(shape, t), is_norm(t) ? 1.f : 0.f,
                nullptr);
    p += r * c;
  };
  for (int64_t l = 0; l < shape.layers; ++l)
    for (Tensor t : order) place(l, t);
  place(shape.layers, Tensor::kFinalNorm);
  m.pool.resize(static_cast<size_t>(m.layout.pool_elems()));
  PFX_CUDA(cudaMemset(m.pool.get(), 0, static_cast<size_t>(m.layout.pool_bytes())));
  const std::vector<float> f = rope_inv_freq(shape);
  m.inv_freq.resize(f.size());
  PFX_CUDA(cudaMemcpy(m.inv_freq.get(), f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice));
  PFX_CUDA(cudaDeviceSynchronize());
}

Model::~Model() = default;

const KvPoolLayout& Model::layout() const { return impl_->layout; }

void Model::forward(const PagedBatch& pb, const uint16_t* input, uint16_t* output) {
  Impl& m = *impl_;
  m.prepare(pb);
  const size_t n = static_cast<size_t>(pb.num_tokens() * m.s.hidden);
  if (n == 0) return;
  PFX_CUDA(cudaMemcpy(m.x.get(), input, n * 2, cudaMemcpyHostToDevice));
  m.forward_device(pb, nullptr);
  PFX_CUDA(cudaDeviceSynchronize());
  PFX_CUDA(cudaMemcpy(output, m.h.get(), n * 2, cudaMemcpyDeviceToHost));
}

double Model::time_forward_ms(const PagedBatch& pb, int reps) {
  Impl& m = *impl_;
  m.prepare(pb);
  const int64_t n = pb.num_tokens() * m.s.hidden;
  if (n == 0) return 0;
  m.in_fixed.resize(static_cast<size_t>(n));
  launch_fill(m.in_fixed.get(), n, 12345, 1.f, 0.f, nullptr);
  const size_t flush_bytes = 256u << 20;
  m.flush.resize(flush_bytes);
  cudaEvent_t e0, e1;
  PFX_CUDA(cudaEventCreate(&e0));
  PFX_CUDA(cudaEventCreate(&e1));
  std::vector<double> ms;
  for (int i = 0; i < reps + 1; ++i) {  // first run warms up (and builds the GEMM plans)
    PFX_CUDA(cudaMemcpyAsync(m.x.get(), m.in_fixed.get(), static_cast<size_t>(n) * 2, cudaMemcpyDeviceToDevice, nullptr));
    PFX_CUDA(cudaMemsetAsync(m.flush.get(), i & 0xff, flush_bytes, nullptr));
    PFX_CUDA(cudaEventRecord(e0, nullptr));
    m.forward_device(pb, nullptr);
    PFX_CUDA(cudaEventRecord(e1, nullptr));
    PFX_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    PFX_CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (i > 0) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0 : ms[ms.size() / 2];
}

double Model::forward_tagged(const PagedBatch& pb, const std::vector<uint64_t>& tags, uint64_t input_seed,
                             const std::vector<int64_t>& rows, std::vector<uint16_t>& out) {
  Impl& m = *impl_;
  const int64_t T = pb.num_tokens(), H = m.s.hidden;
  if (static_cast<int64_t>(tags.size()) != T) throw InternalError("gpu model: one tag per new token");
  out.resize(rows.size() * static_cast<size_t>(H));
  if (T == 0) return 0;
  m.prepare(pb);
  m.tags.resize(static_cast<size_t>(T));
  PFX_CUDA(cudaMemcpy(m.tags.get(), tags.data(), tags.size() * sizeof(uint64_t), cudaMemcpyHostToDevice));
  launch_embed(m.x.get(), m.tags.get(), m.batch.view().positions, T, H, input_seed, nullptr);
  if (!m.e0) {
    PFX_CUDA(cudaEventCreate(&m.e0));
    PFX_CUDA(cudaEventCreate(&m.e1));
  }
  PFX_CUDA(cudaEventRecord(m.e0, nullptr));
  m.forward_device(pb, nullptr);
  PFX_CUDA(cudaEventRecord(m.e1, nullptr));
  PFX_CUDA(cudaEventSynchronize(m.e1));
  float ms = 0;
  PFX_CUDA(cudaEventElapsedTime(&ms, m.e0, m.e1));
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= T) throw InternalError("gpu model: a kept row outside the step");
    PFX_CUDA(cudaMemcpy(out.data() + i * static_cast<size_t>(H), m.h.get() + rows[i] * H, static_cast<size_t>(H) * 2,
                        cudaMemcpyDeviceToHost));
  }
  return ms;
}

void Model::read_block(int64_t b, std::vector<uint16_t>& out) {
  const KvPoolLayout& L = impl_->layout;
  const size_t n = static_cast<size_t>(L.block_elems());
  out.resize(2 * static_cast<size_t>(L.num_layers) * n);
  for (int64_t l = 0; l < L.num_layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      PFX_CUDA(cudaMemcpy(out.data() + (2 * l + kv) * n, impl_->pool.get() + L.offset(l, kv, b, 0, 0, 0), n * 2,
                          cudaMemcpyDeviceToHost));
}

void Model::write_block(int64_t b, const std::vector<uint16_t>& in) {
  const KvPoolLayout& L = impl_->layout;
  const size_t n = static_cast<size_t>(L.block_elems());
  if (in.size() != 2 * static_cast<size_t>(L.num_layers) * n) throw InternalError("gpu model: a block of the wrong size");
  for (int64_t l = 0; l < L.num_layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      PFX_CUDA(cudaMemcpy(impl_->pool.get() + L.offset(l, kv, b, 0, 0, 0), in.data() + (2 * l + kv) * n, n * 2,
                          cudaMemcpyHostToDevice));
}

namespace {
class GpuRunner final : public ModelRunner {
 public:
  GpuRunner(const ModelShape& shape, int64_t num_blocks, int32_t block_size, uint64_t seed)
      : model_(shape, num_blocks, block_size, seed) {}
  double forward(const PagedBatch& pb, const std::vector<uint64_t>& tags, uint64_t input_seed,
                 const std::vector<int64_t>& rows, std::vector<float>& out) override {
    const double ms = model_.forward_tagged(pb, tags, input_seed, rows, bits_);
    out.resize(bits_.size());
    for (size_t i = 0; i < bits_.size(); ++i) out[i] = bf16_to_f32(bits_[i]);
    return ms;
  }
  void read_block(int64_t b, std::vector<float>& out) override {
    model_.read_block(b, bits_);
    out.resize(bits_.size());
    for (size_t i = 0; i < bits_.size(); ++i) out[i] = bf16_to_f32(bits_[i]);
  }
  void write_block(int64_t b, const std::vector<float>& in) override {
    bits_.resize(in.size());
    for (size_t i = 0; i < in.size(); ++i) bits_[i] = f32_to_bf16(in[i]);
    model_.write_block(b, bits_);
  }

 private:
  Model model_;
  std::vector<uint16_t> bits_;
};
}  // namespace

std::unique_ptr<ModelRunner> make_gpu_runner(const ModelShape& shape, int64_t num_blocks, int32_t block_size,
                                             uint64_t seed) {
  return std::make_unique<GpuRunner>(shape, num_blocks, block_size, seed);
}

}  // namespace prefixsim::gpu::cuda
