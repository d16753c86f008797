#include "sim/cost/kv_sizing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/base/error.h"
#include "sim/kv/block_pool.h"

namespace prefixsim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// CUDA context, cuBLAS/NCCL workspaces and CUDA-graph pools: memory vLLM's
// profiling run sees in use besides weights and activations. An estimate
// (~1 GiB on recent vLLM releases on Hopper); --kv-gb fixes the pool exactly.
constexpr int64_t kRuntimeReserveBytes = int64_t{1} << 30;

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void check_block_size(int block_size) {
  if (block_size < 1 || block_size > 65536)
    throw InputError("--block-size: must be in [1, 65536] tokens, got " + std::to_string(block_size));
}

}  // namespace

void check_tensor_parallel(const ModelSpec& m, int tp) {
  if (tp < 1 || tp > 64) throw InputError("--tp: must be in [1, 64], got " + std::to_string(tp));
  if (m.heads % tp != 0)
    throw InputError("--tp: " + std::to_string(tp) + " does not divide " + m.name + "'s " + std::to_string(m.heads) +
                     " attention heads");
  // vLLM splits KV heads evenly, or replicates them when TP exceeds their count.
  if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0)
    throw InputError("--tp: " + std::to_string(tp) + " neither divides nor is a multiple of " + m.name + "'s " +
                     std::to_string(m.kv_heads) + " KV heads");
}

int64_t kv_bytes_per_token(const ModelSpec& m, int tp, int kv_dtype_bytes) {
  // MLA caches one latent per token and layer (no separate K and V), and
  // every shard keeps all of it: vLLM's MLA backends replicate the latent.
  if (m.is_mla()) return int64_t{m.kv_lora_rank + m.qk_rope_head_dim} * kv_dtype_bytes * m.layers;
  const int64_t kv_heads_per_shard = std::max(1, m.kv_heads / tp);
  return 2 * kv_heads_per_shard * m.head_dim * kv_dtype_bytes * m.layers;
}

// vLLM sizes the KV cache after a profiling forward pass of
// max_num_batched_tokens tokens. Its peak is in the MLP, where the input and
// residual (2 x hidden), the fused gate/up output (2 x intermediate/TP) and
// the activated product (intermediate/TP) are live at once; the sampler then
// holds fp32 logits for max_num_seqs sequences over the whole vocabulary.
int64_t activation_reserve_bytes(const ModelSpec& m, int tp, int64_t max_num_batched_tokens, int64_t max_num_seqs) {
  const int64_t inter_shard = ceil_div(m.intermediate, tp);
  const int64_t mlp_peak = max_num_batched_tokens * (2 * int64_t{m.hidden} + 3 * inter_shard) * m.dtype_bytes;
  const int64_t logits = max_num_seqs * int64_t{m.vocab} * 4;
  return mlp_peak + logits + kRuntimeReserveBytes;
}

KvSizing size_kv_pool(const KvSizingInput& in) {
  check_block_size(in.block_size);
  const int given = in.kv_blocks.has_value() + in.kv_tokens.has_value() + in.kv_gb.has_value();
  if (given > 1) throw InputError("--kv-blocks, --kv-tokens and --kv-gb: give at most one of them");
  if (in.model) check_tensor_parallel(*in.model, in.tp);

  KvSizing k;
  k.block_size = in.block_size;
  const int kv_dtype = in.kv_dtype_bytes > 0 ? in.kv_dtype_bytes : (in.model ? in.model->dtype_bytes : 2);
  if (in.model) k.bytes_per_block = kv_bytes_per_token(*in.model, in.tp, kv_dtype) * in.block_size;
  const std::string per_block =
      in.model && in.model->is_mla()
          ? "bytes/block = " + std::to_string(in.block_size) + " tokens x (" +
                std::to_string(in.model->kv_lora_rank) + " kv_lora_rank + " +
                std::to_string(in.model->qk_rope_head_dim) + " qk_rope_head_dim) latent (MLA, on every shard) x " +
                std::to_string(kv_dtype) + " bytes x " + std::to_string(in.model->layers) +
                " layers = " + std::to_string(k.bytes_per_block) + " (" + fmt("%.2f", k.bytes_per_block / 1048576.0) +
                " MiB)"
      : in.model ? "bytes/block = 2 (K,V) x " + std::to_string(in.block_size) + " tokens x " +
                     std::to_string(std::max(1, in.model->kv_heads / in.tp)) + " KV heads/shard x " +
                     std::to_string(in.model->head_dim) + " head dim x " + std::to_string(kv_dtype) + " bytes x " +
                     std::to_string(in.model->layers) + " layers = " + std::to_string(k.bytes_per_block) + " (" +
                     fmt("%.2f", k.bytes_per_block / 1048576.0) + " MiB)"
               : "bytes/block unknown (no --model)";

  if (in.kv_blocks) {
    k.source = "--kv-blocks";
    if (*in.kv_blocks < 2 || *in.kv_blocks > kMaxKvBlocks)
      throw InputError("--kv-blocks: must be in [2, 2^31-1] (the count includes the null block), got " +
                       std::to_string(*in.kv_blocks));
    k.num_blocks = *in.kv_blocks;
  } else if (in.kv_tokens) {
    k.source = "--kv-tokens";
    const int64_t max_tokens = (kMaxKvBlocks - 1) * in.block_size;
    if (*in.kv_tokens < 1 || *in.kv_tokens > max_tokens)
      throw InputError("--kv-tokens: must be in [1, " + std::to_string(max_tokens) + "] at block size " +
                       std::to_string(in.block_size) + ", got " + std::to_string(*in.kv_tokens));
    k.num_blocks = ceil_div(*in.kv_tokens, in.block_size) + 1;
  } else if (in.kv_gb) {
    k.source = "--kv-gb";
    if (!in.model) throw InputError("--kv-gb: needs --model to know the bytes per block");
    if (!std::isfinite(*in.kv_gb) || *in.kv_gb <= 0 || *in.kv_gb > 1e6)
      throw InputError("--kv-gb: must be a positive number of GiB up to 1e6, got " + fmt("%g", *in.kv_gb));
    k.kv_budget_bytes = static_cast<int64_t>(std::floor(*in.kv_gb * kGiB));
    const int64_t blocks = k.kv_budget_bytes / k.bytes_per_block;
    if (blocks < 2)
      throw InputError("--kv-gb: " + fmt("%g", *in.kv_gb) + " GiB holds fewer than 2 blocks of " +
                       std::to_string(k.bytes_per_block) + " bytes");
    if (blocks > kMaxKvBlocks)
      throw InputError("--kv-gb: " + fmt("%g", *in.kv_gb) + " GiB would need more than 2^31 blocks");
    k.num_blocks = blocks;
  } else {
    k.source = "derived";
    if (!in.model || !in.gpu) throw InputError("--model and --gpu: both are needed to size the KV pool (or give --kv-blocks)");
    if (!(in.gpu_mem_util > 0 && in.gpu_mem_util <= 1))
      throw InputError("--gpu-mem-util: must be in (0, 1], got " + fmt("%g", in.gpu_mem_util));
    if (in.max_num_batched_tokens < 1 || in.max_num_seqs < 1)
      throw InputError("max_num_batched_tokens and max_num_seqs must be positive");
    const ModelSpec& m = *in.model;
    k.gpu_memory_bytes = in.gpu->memory_bytes;
    k.usable_bytes = static_cast<int64_t>(std::floor(static_cast<double>(in.gpu->memory_bytes) * in.gpu_mem_util));
    k.weight_bytes = ceil_div(m.total_weight_bytes(), in.tp);
    if (in.expert_dp > 1 && m.has_routing()) {
      // Expert parallelism: this rank holds 1 / (TP x D) of the routed experts, not 1 / TP.
      const double routed = m.routed_expert_bytes();
      k.weight_bytes -= static_cast<int64_t>(std::floor(routed / in.tp - routed / (in.tp * in.expert_dp)));
    }
    k.activation_bytes = in.activation_reserve_bytes
                             ? *in.activation_reserve_bytes
                             : activation_reserve_bytes(m, in.tp, in.max_num_batched_tokens, in.max_num_seqs);
    k.kv_budget_bytes = k.usable_bytes - k.weight_bytes - k.activation_bytes;
    const int64_t blocks = k.kv_budget_bytes > 0 ? k.kv_budget_bytes / k.bytes_per_block : 0;
    if (blocks < 2)
      throw InputError("--gpu-mem-util: no memory left for the KV cache: " + m.name + " on " + in.gpu->name +
                       " at TP " + std::to_string(in.tp) + " needs " + fmt("%.2f", (k.weight_bytes + k.activation_bytes) / kGiB) +
                       " GiB for weights and activations of " + fmt("%.2f", k.usable_bytes / kGiB) +
                       " GiB usable (raise --gpu-mem-util or --tp, pick a larger --gpu, or give --kv-blocks)");
    if (blocks > kMaxKvBlocks)
      throw InputError("--block-size: the derived pool exceeds 2^31 blocks; use a larger block size");
    k.num_blocks = blocks;
  }
  k.capacity_tokens = (k.num_blocks - 1) * in.block_size;
  check_pool_fits_memory(k.num_blocks, k.source == "derived" ? "--gpu-mem-util" : k.source);

  std::string& e = k.explanation;
  e = per_block + ". ";
  if (k.source == "derived") {
    e += "KV budget per shard = " + std::to_string(k.gpu_memory_bytes) + " B GPU memory x " + fmt("%g", in.gpu_mem_util) +
         " (--gpu-mem-util) - " + std::to_string(k.weight_bytes) + " B weights (" +
         (in.model->weight_bytes > 0
              ? std::to_string(in.model->weight_bytes) + " B quantized checkpoint"
              : std::to_string(in.model->params) + " params x " + std::to_string(in.model->dtype_bytes) + " B") +
         " / TP " + std::to_string(in.tp) + ") - " +
         std::to_string(k.activation_bytes) + " B activations and runtime = " + std::to_string(k.kv_budget_bytes) +
         " B (" + fmt("%.2f", k.kv_budget_bytes / kGiB) + " GiB). num_blocks = floor(budget / bytes per block) = " +
         std::to_string(k.num_blocks) + ". ";
  } else if (k.source == "--kv-gb") {
    e += "KV budget = " + fmt("%g", *in.kv_gb) + " GiB (--kv-gb) = " + std::to_string(k.kv_budget_bytes) +
         " B; num_blocks = floor(budget / bytes per block) = " + std::to_string(k.num_blocks) + ". ";
  } else if (k.source == "--kv-tokens") {
    e += "num_blocks = ceil(" + std::to_string(*in.kv_tokens) + " tokens (--kv-tokens) / " +
         std::to_string(in.block_size) + ") + 1 null block = " + std::to_string(k.num_blocks) + ". ";
  } else {
    e += "num_blocks = " + std::to_string(k.num_blocks) + " (--kv-blocks). ";
  }
  e += "Block 0 is vLLM's null block, so " + std::to_string(k.num_blocks - 1) + " blocks x " +
       std::to_string(in.block_size) + " tokens = " + std::to_string(k.capacity_tokens) + " tokens of KV capacity.";
  return k;
}

nlohmann::json to_json(const KvSizing& k) {
  nlohmann::json j = {{"block_size", k.block_size},
                      {"num_blocks", k.num_blocks},
                      {"bytes_per_block", k.bytes_per_block},
                      {"capacity_tokens", k.capacity_tokens},
                      {"source", k.source}};
  if (k.source == "derived")
    j["derivation"] = {{"gpu_memory_bytes", k.gpu_memory_bytes},
                       {"usable_bytes", k.usable_bytes},
                       {"weight_bytes", k.weight_bytes},
                       {"activation_bytes", k.activation_bytes},
                       {"kv_budget_bytes", k.kv_budget_bytes}};
  j["explanation"] = k.explanation;
  return j;
}

}  // namespace prefixsim
