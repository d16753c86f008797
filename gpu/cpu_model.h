// The random-weight Llama model on the CPU, in fp32, over a paged KV pool:
// the reference for the GPU model runner and the subject of the "caching
// does not change the output" test. Meant for small shapes (the 8B shape
// works but takes minutes per token batch).
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/kv_layout.h"
#include "gpu/model_shape.h"

namespace prefixsim::gpu {

class CpuLlama {
 public:
  CpuLlama(const ModelShape& shape, int64_t num_blocks, int32_t block_size, uint64_t seed);

  const ModelShape& shape() const { return shape_; }
  const KvPoolLayout& layout() const { return layout_; }

  // One prefill step: x is [num_tokens, hidden] (the inputs on entry, the
  // final-norm outputs on return). Writes the step's K/V into the pool.
  void forward(const PagedBatch& pb, std::vector<float>& x);
  // One decoder layer in place on the residual stream x [num_tokens, hidden].
  void layer(int64_t l, const PagedBatch& pb, std::vector<float>& x);

  float* k_cache(int64_t l) { return pool_.data() + layout_.offset(l, 0, 0, 0, 0, 0); }
  float* v_cache(int64_t l) { return pool_.data() + layout_.offset(l, 1, 0, 0, 0, 0); }
  float* pool_at(int64_t offset) { return pool_.data() + offset; }

 private:
  struct Layer {
    std::vector<float> attn_norm, qkv, o, mlp_norm, gate_up, down;
  };
  ModelShape shape_;
  KvPoolLayout layout_;
  std::vector<Layer> layers_;
  std::vector<float> final_norm_;
  std::vector<float> inv_freq_;
  std::vector<float> pool_;
};

// The model inputs of a step (see input_value), one row per new token:
// sequence b of the batch is tagged seq_tags[b].
std::vector<float> make_inputs(const ModelShape& s, const PagedBatch& pb, uint64_t seed,
                               const std::vector<uint64_t>& seq_tags);

}  // namespace prefixsim::gpu
