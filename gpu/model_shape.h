// Llama-shaped transformer dimensions for the random-weight model, and the
// deterministic weight recipe that the CPU reference and the GPU runner share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/kv_layout.h"

namespace prefixsim::gpu {

struct ModelShape {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;      // query heads on this GPU (after tensor-parallel split)
  int64_t kv_heads = 0;   // KV heads on this GPU
  int64_t head_dim = 0;
  int64_t intermediate = 0;  // MLP width on this GPU
  float rope_theta = 500000.0f;
  float rms_eps = 1e-5f;
  bool llama3_rope_scaling = true;  // Llama 3.1's rope_scaling (factor 8, low 1, high 4, original 8192)

  int64_t q_size() const { return heads * head_dim; }
  int64_t kv_size() const { return kv_heads * head_dim; }
  int64_t qkv_size() const { return q_size() + 2 * kv_size(); }
  // Throws InputError unless heads is a multiple of kv_heads and dims are positive.
  void validate() const;
};

// "llama-3.1-8b" (one GPU) and "llama-3.1-70b-tp4" (one GPU's shard at TP=4).
// Returns nullptr for an unknown name.
const ModelShape* find_model_shape(std::string_view name);
std::vector<std::string> model_shape_names();
// The catalog model and TP a shape is one GPU's shard of (what calibration
// samples timed on it name); false for a shape of no catalog model ("tiny").
bool shape_catalog_model(const ModelShape& s, std::string& model, int& tp);

// The GPU KV pool behind a block manager: num_blocks is BlockPool::num_blocks()
// (the null block 0 included, as vLLM allocates it too), block_size the
// manager's, heads and layers the model's (per TP shard), bf16.
KvPoolLayout pool_layout_for(int64_t num_blocks, int32_t block_size, const ModelShape& s);

// RoPE inverse frequencies [head_dim / 2], with Llama 3.1's frequency
// scaling when the shape asks for it (computed in double, stored fp32, and
// handed to the GPU kernel as a table so both sides use the same values).
std::vector<float> rope_inv_freq(const ModelShape& s);

// The weights of the random model. Tensor t of layer l is filled from the
// stream weight_seed(seed, l, t): element i is round_bf16(scale *
// hash_uniform(stream, i)) for linear layers (scale 1/sqrt(fan_in)) and
// round_bf16(1 + 0.125 * hash_uniform(stream, i)) for norm gains.
// Linear weights are [out, in] row-major (y = x W^T), as in PyTorch.
enum class Tensor : int { kAttnNorm = 0, kQkv = 1, kO = 2, kMlpNorm = 3, kGateUp = 4, kDown = 5, kFinalNorm = 6 };
uint64_t weight_seed(uint64_t seed, int64_t layer, Tensor t);
// [rows, cols] of each tensor (norms: [1, hidden]). gate_up is [2 * intermediate, hidden]:
// rows 0..I-1 the gate projection, rows I..2I-1 the up projection.
std::pair<int64_t, int64_t> tensor_dims(const ModelShape& s, Tensor t);
bool is_norm(Tensor t);
float linear_scale(const ModelShape& s, Tensor t);
// Element i of a tensor (fp32 value of the bf16 weight).
float weight_value(const ModelShape& s, uint64_t stream, Tensor t, uint64_t i);

// Model input (stand-in for the token embeddings): element j of the hidden
// state of the token at `position` of a sequence tagged `seq_tag`. It
// depends on the position, not on the step the token is computed in, so a
// cached run and a full recompute see the same inputs.
float input_value(uint64_t seed, uint64_t seq_tag, int64_t position, int64_t j);

}  // namespace prefixsim::gpu
