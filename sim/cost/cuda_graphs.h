// vLLM's CUDA graphs as the cost model sees them: the token count a step is
// padded to. Read from vLLM (vllm/config/vllm.py _set_cudagraph_sizes,
// vllm/v1/cudagraph_dispatcher.py, gpu_model_runner's padding), at the commit
// the scheduler goldens pin and at today's main, which agree on this:
//
//  - capture sizes (token counts): [1, 2, 4] + 8, 16, ... 248 + 256, 272, ...
//    up to max_cudagraph_capture_size = min(max_num_seqs * 2, 512,
//    max_num_batched_tokens); newer vLLM also captures
//    max_num_batched_tokens itself when it is below that cap;
//  - a step of N <= max tokens runs the graph of the next capture size >= N,
//    its linear layers on the padded count (a decode batch of 37 costs 40);
//    above the largest size no graph runs and nothing is padded;
//  - the default cudagraph_mode (optimization level -O2) is
//    FULL_AND_PIECEWISE: a uniform-decode batch (every sequence has one new
//    token) runs a FULL graph (keys only up to max_num_seqs), any other batch
//    a PIECEWISE graph, whose attention runs eagerly on the real tokens but
//    whose GEMMs run on the padded count. FULL_DECODE_ONLY pads only uniform
//    decodes; PIECEWISE pads every batch; NONE (--enforce-eager) none.
// Logits and sampling run on the real sequences, so only the per-token
// terms (linear layers, all-reduce) see the padding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace prefixsim {

enum class CudaGraphMode { none, piecewise, full_decode_only, full_and_piecewise };

// "none", "piecewise", "full_decode_only", "full_and_piecewise"
const char* to_string(CudaGraphMode m);
// InputError naming `flag` for an unknown name.
CudaGraphMode parse_cuda_graph_mode(const std::string& name, const std::string& flag);

struct CudaGraphs {
  CudaGraphMode mode = CudaGraphMode::none;
  std::vector<int64_t> capture_sizes;  // ascending token counts
  int64_t max_decode_size = 0;         // FULL decode graphs exist up to this many tokens (max_num_seqs)

  // vLLM's default capture sizes for this scheduler configuration.
  static CudaGraphs vllm_default(CudaGraphMode mode, int64_t max_num_seqs, int64_t max_num_batched_tokens);
  bool enabled() const { return mode != CudaGraphMode::none && !capture_sizes.empty(); }
  // The token count a step of `tokens` new tokens runs at.
  int64_t padded_tokens(int64_t tokens, bool uniform_decode) const;
};

}  // namespace prefixsim
