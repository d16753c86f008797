// One step of a random-weight Llama over its own paged KV pool, on the CPU
// (CpuLlama, fp32) or the GPU (cuda::Model, bf16): the face the real backend
// mode (backend.h) drives. Plain C++, no sim/ header beyond kv_layout.h, so
// the CUDA side can implement it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpu/kv_layout.h"
#include "gpu/model_shape.h"

namespace prefixsim::gpu {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // Runs one step: new token t (row t of pb) gets the model input
  // input_value(input_seed, tags[t], pb.positions[t], .), its K/V is written
  // into the pool, and its attention reads the pages of pb. The final hidden
  // states (after the final norm) of the rows listed in `rows` are written
  // to `out`, rows.size() x hidden floats. Returns the measured device time
  // of the forward in ms, or 0 when the runner does not measure (CPU).
  virtual double forward(const PagedBatch& pb, const std::vector<uint64_t>& tags, uint64_t input_seed,
                         const std::vector<int64_t>& rows, std::vector<float>& out) = 0;
  // The KV of pool block b, every layer's K then V (KvPoolLayout order), as
  // floats; and back. What a KV tier copies out of and into a GPU block.
  virtual void read_block(int64_t b, std::vector<float>& out) = 0;
  virtual void write_block(int64_t b, const std::vector<float>& in) = 0;
};

// A runner of `shape` (weights from `seed`) over a pool of num_blocks blocks
// of block_size tokens.
using RunnerFactory =
    std::function<std::unique_ptr<ModelRunner>(const ModelShape&, int64_t num_blocks, int32_t block_size, uint64_t seed)>;

// CpuLlama behind the ModelRunner face (always built).
std::unique_ptr<ModelRunner> make_cpu_runner(const ModelShape& shape, int64_t num_blocks, int32_t block_size,
                                             uint64_t seed);

}  // namespace prefixsim::gpu
