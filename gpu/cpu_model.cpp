#include "gpu/cpu_model.h"

#include <algorithm>
#include <cmath>

#include "gpu/cpu_ref.h"
#include "gpu/hd.h"
#include "gpu/model_runner.h"
#include "sim/base/error.h"

namespace prefixsim::gpu {

namespace {
std::vector<float> make_tensor(const ModelShape& s, uint64_t seed, int64_t layer, Tensor t) {
  const auto [r, c] = tensor_dims(s, t);
  std::vector<float> w(static_cast<size_t>(r * c));
  const uint64_t stream = weight_seed(seed, layer, t);
  for (size_t i = 0; i < w.size(); ++i) w[i] = weight_value(s, stream, t, i);
  return w;
}
}  // namespace

CpuLlama::CpuLlama(const ModelShape& shape, int64_t num_blocks, int32_t block_size, uint64_t seed)
    : shape_(shape), inv_freq_(rope_inv_freq(shape)) {
  shape_.validate();
  layout_ = pool_layout_for(num_blocks, block_size, shape_);
  for (int64_t l = 0; l < shape.layers; ++l) {
    layers_.push_back({make_tensor(shape, seed, l, Tensor::kAttnNorm), make_tensor(shape, seed, l, Tensor::kQkv),
                       make_tensor(shape, seed, l, Tensor::kO), make_tensor(shape, seed, l, Tensor::kMlpNorm),
                       make_tensor(shape, seed, l, Tensor::kGateUp), make_tensor(shape, seed, l, Tensor::kDown)});
  }
  final_norm_ = make_tensor(shape, seed, shape.layers, Tensor::kFinalNorm);
  pool_.assign(static_cast<size_t>(layout_.pool_elems()), 0.0f);
}

void CpuLlama::layer(int64_t l, const PagedBatch& pb, std::vector<float>& x) {
  const ModelShape& s = shape_;
  const Layer& w = layers_[static_cast<size_t>(l)];
  const int64_t T = pb.num_tokens(), H = s.hidden;
  if (pb.block_size != layout_.block_size) throw InternalError("CpuLlama: batch block size differs from the pool's");
  std::vector<float> h(static_cast<size_t>(T * H)), qkv(static_cast<size_t>(T * s.qkv_size()));
  std::vector<float> attn(static_cast<size_t>(T * s.q_size()));
  ref::rmsnorm(x.data(), w.attn_norm.data(), h.data(), T, H, s.rms_eps);
  ref::gemm_xwt(h.data(), w.qkv.data(), qkv.data(), T, s.qkv_size(), H, false);
  ref::rope(qkv.data(), T, s.qkv_size(), s.heads, s.head_dim, pb.positions.data(), inv_freq_.data());
  ref::rope(qkv.data() + s.q_size(), T, s.qkv_size(), s.kv_heads, s.head_dim, pb.positions.data(), inv_freq_.data());
  const ref::AttnDims d{s.heads, s.kv_heads, s.head_dim};
  ref::write_kv(pb, d, qkv.data() + s.q_size(), qkv.data() + s.q_size() + s.kv_size(), s.qkv_size(), k_cache(l),
                v_cache(l));
  ref::paged_prefill_attention(pb, d, qkv.data(), s.qkv_size(), k_cache(l), v_cache(l),
                               1.0f / std::sqrt(static_cast<float>(s.head_dim)), attn.data());
  ref::gemm_xwt(attn.data(), w.o.data(), x.data(), T, H, s.q_size(), true);  // residual add
  std::vector<float> gu(static_cast<size_t>(T * 2 * s.intermediate)), act(static_cast<size_t>(T * s.intermediate));
  ref::rmsnorm(x.data(), w.mlp_norm.data(), h.data(), T, H, s.rms_eps);
  ref::gemm_xwt(h.data(), w.gate_up.data(), gu.data(), T, 2 * s.intermediate, H, false);
  ref::silu_mul(gu.data(), act.data(), T, s.intermediate);
  ref::gemm_xwt(act.data(), w.down.data(), x.data(), T, H, s.intermediate, true);
}

void CpuLlama::forward(const PagedBatch& pb, std::vector<float>& x) {
  const int64_t T = pb.num_tokens(), H = shape_.hidden;
  if (static_cast<int64_t>(x.size()) != T * H) throw InternalError("CpuLlama::forward: input size mismatch");
  for (int64_t l = 0; l < shape_.layers; ++l) layer(l, pb, x);
  std::vector<float> y(x.size());
  ref::rmsnorm(x.data(), final_norm_.data(), y.data(), T, H, shape_.rms_eps);
  x.swap(y);
}

std::vector<float> make_inputs(const ModelShape& s, const PagedBatch& pb, uint64_t seed,
                               const std::vector<uint64_t>& seq_tags) {
  std::vector<float> x(static_cast<size_t>(pb.num_tokens() * s.hidden));
  for (int64_t b = 0; b < pb.num_seqs(); ++b) {
    for (int64_t t = pb.qo_indptr[b]; t < pb.qo_indptr[b + 1]; ++t)
      for (int64_t j = 0; j < s.hidden; ++j)
        x[static_cast<size_t>(t * s.hidden + j)] =
            input_value(seed, seq_tags.at(static_cast<size_t>(b)), pb.positions[static_cast<size_t>(t)], j);
  }
  return x;
}

}  // namespace prefixsim::gpu

namespace prefixsim::gpu {

namespace {
class CpuRunner final : public ModelRunner {
 public:
  CpuRunner(const ModelShape& shape, int64_t num_blocks, int32_t block_size, uint64_t seed)
      : model_(shape, num_blocks, block_size, seed) {}

  double forward(const PagedBatch& pb, const std::vector<uint64_t>& tags, uint64_t input_seed,
                 const std::vector<int64_t>& rows, std::vector<float>& out) override {
    const int64_t H = model_.shape().hidden, T = pb.num_tokens();
    if (static_cast<int64_t>(tags.size()) != T) throw InternalError("CpuRunner: one tag per new token");
    x_.resize(static_cast<size_t>(T * H));
    for (int64_t t = 0; t < T; ++t) {
      const uint64_t stream = input_stream(input_seed, tags[static_cast<size_t>(t)], pb.positions[static_cast<size_t>(t)]);
      float* row = x_.data() + t * H;
      for (int64_t j = 0; j < H; ++j) row[j] = round_bf16(hash_uniform(stream, static_cast<uint64_t>(j)));
    }
    model_.forward(pb, x_);
    out.resize(rows.size() * static_cast<size_t>(H));
    for (size_t i = 0; i < rows.size(); ++i)
      std::copy_n(x_.data() + rows[i] * H, H, out.data() + i * static_cast<size_t>(H));
    return 0;
  }

  void read_block(int64_t b, std::vector<float>& out) override {
    const KvPoolLayout& L = model_.layout();
    out.resize(static_cast<size_t>(2 * L.num_layers * L.block_elems()));
    for (int64_t l = 0; l < L.num_layers; ++l)
      for (int kv = 0; kv < 2; ++kv)
        std::copy_n(model_.pool_at(L.offset(l, kv, b, 0, 0, 0)), L.block_elems(),
                    out.data() + (2 * l + kv) * L.block_elems());
  }
  void write_block(int64_t b, const std::vector<float>& in) override {
    const KvPoolLayout& L = model_.layout();
    if (static_cast<int64_t>(in.size()) != 2 * L.num_layers * L.block_elems())
      throw InternalError("CpuRunner: a block of the wrong size");
    for (int64_t l = 0; l < L.num_layers; ++l)
      for (int kv = 0; kv < 2; ++kv)
        std::copy_n(in.data() + (2 * l + kv) * L.block_elems(), L.block_elems(), model_.pool_at(L.offset(l, kv, b, 0, 0, 0)));
  }

 private:
  CpuLlama model_;
  std::vector<float> x_;
};
}  // namespace

std::unique_ptr<ModelRunner> make_cpu_runner(const ModelShape& shape, int64_t num_blocks, int32_t block_size,
                                             uint64_t seed) {
  return std::make_unique<CpuRunner>(shape, num_blocks, block_size, seed);
}

}  // namespace prefixsim::gpu
