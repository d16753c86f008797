// KV pool sizing (DESIGN.md "KV pool sizing"): how many KV blocks one
// tensor-parallel shard holds, derived from the model, the GPU,
// --gpu-mem-util and --tp as vLLM does, unless --kv-blocks / --kv-tokens /
// --kv-gb fixes the pool.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/cost/catalog.h"

namespace prefixsim {

struct KvSizingInput {
  const ModelSpec* model = nullptr;  // required unless an explicit size is given with bytes unknown
  const GpuSpec* gpu = nullptr;      // required for the derived size
  int tp = 1;                        // --tp
  int expert_dp = 1;                 // routed experts split over this many engines (ExpertShard); 1: none
  int block_size = 16;               // --block-size (tokens per block)
  double gpu_mem_util = 0.9;         // --gpu-mem-util (vLLM's gpu_memory_utilization)
  int kv_dtype_bytes = 0;            // 0: the model's dtype (fp8 KV cache: 1)
  // vLLM profiles activations with a dummy batch of this many tokens and
  // this many sequences (its max_num_batched_tokens / max_num_seqs).
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  std::optional<int64_t> activation_reserve_bytes;  // overrides the estimate
  // At most one of these (the CLI flags of the same names):
  std::optional<int64_t> kv_blocks;  // pool size, null block included (as vLLM's num_gpu_blocks)
  std::optional<int64_t> kv_tokens;  // usable capacity in tokens (rounded up to whole blocks)
  std::optional<double> kv_gb;       // KV memory per shard in GiB
};

struct KvSizing {
  int block_size = 0;
  int64_t num_blocks = 0;        // pool size including block 0, the null block
  int64_t bytes_per_block = 0;   // per tensor-parallel shard; 0 when unknown (no model)
  int64_t capacity_tokens = 0;   // (num_blocks - 1) * block_size: the null block holds nothing
  std::string source;            // "derived", "--kv-blocks", "--kv-tokens" or "--kv-gb"
  // The derived arithmetic, per shard (0 when the size was given).
  int64_t gpu_memory_bytes = 0;
  int64_t usable_bytes = 0;        // gpu_memory * gpu_mem_util
  int64_t weight_bytes = 0;        // params * dtype / TP
  int64_t activation_bytes = 0;    // the activation + runtime reserve
  int64_t kv_budget_bytes = 0;     // usable - weights - activations
  std::string explanation;         // the arithmetic in words, for the report
};

// Largest pool a BlockId (int32) can index.
inline constexpr int64_t kMaxKvBlocks = (int64_t{1} << 31) - 1;

// InputError naming the offending flag for absurd values: TP that splits the
// KV heads unevenly, no memory left for KV, more than 2^31 blocks, ...
KvSizing size_kv_pool(const KvSizingInput& in);

// KV bytes per token per shard: 2 (K and V) * kv_heads/TP * head_dim * dtype * layers.
// vLLM replicates KV heads when TP > kv_heads, so a shard holds at least one.
int64_t kv_bytes_per_token(const ModelSpec& m, int tp, int kv_dtype_bytes);

// vLLM's activation + runtime reserve estimate (see kv_sizing.cpp).
int64_t activation_reserve_bytes(const ModelSpec& m, int tp, int64_t max_num_batched_tokens, int64_t max_num_seqs);

// The flags must be consistent: TP in [1, 64] dividing the query heads, and
// kv_heads divisible by TP or TP by kv_heads. InputError naming --tp.
void check_tensor_parallel(const ModelSpec& m, int tp);

// {"block_size","num_blocks","bytes_per_block","capacity_tokens","source",
//  "derivation":{...},"explanation"}: report.json's "kv_cache" section.
nlohmann::json to_json(const KvSizing& k);

}  // namespace prefixsim
