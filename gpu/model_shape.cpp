#include "gpu/model_shape.h"

#include <cmath>
#include <numbers>

#include "gpu/hd.h"
#include "sim/base/error.h"

namespace prefixsim::gpu {

void ModelShape::validate() const {
  if (layers < 1 || hidden < 1 || heads < 1 || kv_heads < 1 || head_dim < 2 || intermediate < 1)
    throw InputError("model shape '" + name + "': every dimension must be positive");
  if (heads % kv_heads != 0) throw InputError("model shape '" + name + "': heads must be a multiple of kv_heads");
  if (head_dim % 2 != 0) throw InputError("model shape '" + name + "': head_dim must be even (RoPE)");
}

namespace {
const std::vector<ModelShape>& shapes() {
  // Llama 3.1 configs (HF config.json); the 70B row is one of 4 TP shards:
  // heads 64/4, KV heads 8/4, intermediate 28672/4, hidden unsplit.
  static const std::vector<ModelShape> v = {
      {"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336},
      {"llama-3.1-70b-tp4", 80, 8192, 16, 2, 128, 7168},
      // The real backend mode's CPU shape (replay --backend cpu): Llama's
      // structure (GQA group 2, RoPE with 3.1's scaling, SwiGLU, RMSNorm)
      // at a width a CPU runs a few hundred requests of in CI. Attention
      // costs 2 x 32 x 2 x 2 = 256 multiply-adds per token and key. The GPU
      // kernels need head_dim 128, so the GPU backend runs the real shapes.
      {"tiny", 2, 128, 2, 1, 32, 256},
  };
  return v;
}
}  // namespace

bool shape_catalog_model(const ModelShape& s, std::string& model, int& tp) {
  if (s.name == "llama-3.1-8b") {
    model = "llama-3.1-8b";
    tp = 1;
  } else if (s.name == "llama-3.1-70b-tp4") {
    model = "llama-3.1-70b";
    tp = 4;
  } else {
    return false;
  }
  return true;
}

const ModelShape* find_model_shape(std::string_view name) {
  for (const auto& s : shapes())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> model_shape_names() {
  std::vector<std::string> names;
  for (const auto& s : shapes()) names.push_back(s.name);
  return names;
}

KvPoolLayout pool_layout_for(int64_t num_blocks, int32_t block_size, const ModelShape& s) {
  KvPoolLayout l{num_blocks, block_size, s.kv_heads, s.head_dim, s.layers, 2};
  l.validate();
  return l;
}

std::vector<float> rope_inv_freq(const ModelShape& s) {
  std::vector<float> f(static_cast<size_t>(s.head_dim / 2));
  // transformers' _compute_llama3_parameters, rope_type "llama3".
  const double factor = 8.0, low = 1.0, high = 4.0, original = 8192.0;
  const double low_wavelen = original / low, high_wavelen = original / high;
  for (size_t i = 0; i < f.size(); ++i) {
    double inv = std::pow(static_cast<double>(s.rope_theta), -2.0 * static_cast<double>(i) / static_cast<double>(s.head_dim));
    if (s.llama3_rope_scaling) {
      const double wavelen = 2.0 * std::numbers::pi / inv;
      if (wavelen > low_wavelen) {
        inv /= factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (original / wavelen - low) / (high - low);
        inv = (1.0 - smooth) * inv / factor + smooth * inv;
      }
    }
    f[i] = static_cast<float>(inv);
  }
  return f;
}

uint64_t weight_seed(uint64_t seed, int64_t layer, Tensor t) {
  return splitmix64(seed * 1000003ULL + static_cast<uint64_t>(layer) * 16ULL + static_cast<uint64_t>(t));
}

std::pair<int64_t, int64_t> tensor_dims(const ModelShape& s, Tensor t) {
  switch (t) {
    case Tensor::kAttnNorm:
    case Tensor::kMlpNorm:
    case Tensor::kFinalNorm: return {1, s.hidden};
    case Tensor::kQkv: return {s.qkv_size(), s.hidden};
    case Tensor::kO: return {s.hidden, s.q_size()};
    case Tensor::kGateUp: return {2 * s.intermediate, s.hidden};
    case Tensor::kDown: return {s.hidden, s.intermediate};
  }
  throw InternalError("tensor_dims: unknown tensor");
}

bool is_norm(Tensor t) { return t == Tensor::kAttnNorm || t == Tensor::kMlpNorm || t == Tensor::kFinalNorm; }

float linear_scale(const ModelShape& s, Tensor t) {
  return 1.0f / std::sqrt(static_cast<float>(tensor_dims(s, t).second));
}

float weight_value(const ModelShape& s, uint64_t stream, Tensor t, uint64_t i) {
  const float u = hash_uniform(stream, i);
  return is_norm(t) ? round_bf16(1.0f + 0.125f * u) : round_bf16(linear_scale(s, t) * u);
}

float input_value(uint64_t seed, uint64_t seq_tag, int64_t position, int64_t j) {
  return round_bf16(hash_uniform(input_stream(seed, seq_tag, position), static_cast<uint64_t>(j)));
}

}  // namespace prefixsim::gpu
