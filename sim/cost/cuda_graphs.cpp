#include "sim/cost/cuda_graphs.h"

#include <algorithm>

#include "sim/base/error.h"

namespace prefixsim {

namespace {
constexpr struct {
  CudaGraphMode mode;
  const char* name;
} kModes[] = {{CudaGraphMode::none, "none"},
              {CudaGraphMode::piecewise, "piecewise"},
              {CudaGraphMode::full_decode_only, "full_decode_only"},
              {CudaGraphMode::full_and_piecewise, "full_and_piecewise"}};
}  // namespace

const char* to_string(CudaGraphMode m) {
  for (const auto& k : kModes)
    if (k.mode == m) return k.name;
  return "?";
}

CudaGraphMode parse_cuda_graph_mode(const std::string& name, const std::string& flag) {
  for (const auto& k : kModes)
    if (name == k.name) return k.mode;
  throw InputError(flag + ": unknown CUDA graph mode '" + name +
                   "' (known: none, piecewise, full_decode_only, full_and_piecewise)");
}

CudaGraphs CudaGraphs::vllm_default(CudaGraphMode mode, int64_t max_num_seqs, int64_t max_num_batched_tokens) {
  CudaGraphs g;
  g.mode = mode;
  g.max_decode_size = max_num_seqs;
  if (mode == CudaGraphMode::none) return g;
  const int64_t max_size = std::min({max_num_seqs * 2, int64_t{512}, max_num_batched_tokens});
  for (int64_t s : {1, 2, 4})
    if (s <= max_size) g.capture_sizes.push_back(s);
  for (int64_t s = 8; s < 256 && s <= max_size; s += 8) g.capture_sizes.push_back(s);
  for (int64_t s = 256; s <= max_size; s += 16) g.capture_sizes.push_back(s);
  // Newer vLLM also captures max_num_batched_tokens when it is within the cap.
  if (max_num_batched_tokens <= max_size &&
      !std::binary_search(g.capture_sizes.begin(), g.capture_sizes.end(), max_num_batched_tokens))
    g.capture_sizes.insert(
        std::lower_bound(g.capture_sizes.begin(), g.capture_sizes.end(), max_num_batched_tokens),
        max_num_batched_tokens);
  return g;
}

int64_t CudaGraphs::padded_tokens(int64_t tokens, bool uniform_decode) const {
  if (!enabled() || tokens > capture_sizes.back() || tokens <= 0) return tokens;
  const int64_t size = *std::lower_bound(capture_sizes.begin(), capture_sizes.end(), tokens);
  const bool full_decode = mode == CudaGraphMode::full_decode_only || mode == CudaGraphMode::full_and_piecewise;
  const bool piecewise = mode == CudaGraphMode::piecewise || mode == CudaGraphMode::full_and_piecewise;
  if (uniform_decode && full_decode && size <= max_decode_size) return size;
  if (piecewise) return size;  // the dispatcher's non-uniform key
  return tokens;
}

}  // namespace prefixsim
