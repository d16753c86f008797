// Model and GPU catalogs (sim/cost/catalog/*.yaml, embedded into the binary at
// build time): the figures KV pool sizing and the cost model start from.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/text_fields.h"

namespace prefixsim {

struct ModelSpec {
  std::string name;    // catalog key, e.g. "llama-3.1-8b"
  std::string source;  // where the figures come from
  int layers = 0;
  int hidden = 0;
  int heads = 0;       // query heads
  int kv_heads = 0;    // key/value heads (GQA)
  int head_dim = 0;
  int intermediate = 0;
  int vocab = 0;
  bool tied_embeddings = false;
  int64_t params = 0;  // total parameters, embeddings included
  int dtype_bytes = 2; // weights and activations (bf16)
  // Optional (0: absent). Mixture of experts: parameters one token goes
  // through, embeddings included as in `params`.
  int64_t active_params = 0;
  // Quantized checkpoints: bytes of weights as loaded (else params * dtype).
  int64_t weight_bytes = 0;
  // Multi-head latent attention: one cached latent of
  // kv_lora_rank + qk_rope_head_dim values per token and layer.
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  // Optional with active_params: routed experts per MoE layer and the top-k
  // each token goes to (shared experts are not counted: every token reads
  // them, so they sit in active_params). They make the weight read grow
  // with the batch: a step of n tokens touches E * (1 - (1 - k/E)^n)
  // experts per layer, not k.
  int experts = 0;
  int experts_per_token = 0;

  bool is_moe() const { return active_params > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  bool has_routing() const { return experts > 0; }
  // Parameters the compute terms count: the active ones for a MoE.
  int64_t compute_params() const { return is_moe() ? active_params : params; }
  // Bytes all the weights occupy in GPU memory (before TP splits them).
  int64_t total_weight_bytes() const { return weight_bytes > 0 ? weight_bytes : params * dtype_bytes; }

  // Parameters of the matmuls every token goes through: all but the token
  // embedding and the lm_head (the embedding is a gather; the lm_head runs
  // only for the one token per sequence that is sampled).
  int64_t per_token_matmul_params() const;
  // Bytes of weights one forward pass of one token reads: everything but the
  // embedding table (of which it gathers a few rows) unless it doubles as
  // the lm_head; a MoE, its active experts only; a quantized checkpoint,
  // weight_bytes / params bytes per parameter on average.
  int64_t weight_bytes_read_per_step() const;
  // Parameters of all routed experts (every MoE layer): with E experts and
  // top-k, active = total - routed * (1 - k/E), so routed = (total - active)
  // / (1 - k/E). 0 without `experts`.
  int64_t routed_expert_params() const;
  // Bytes of the routed experts a step of n tokens reads beyond one token's
  // k per layer, in expectation under uniform independent routing (each
  // token picks k of E; an expert is missed by all n with probability
  // (1 - k/E)^n): routed bytes * ((1 - k/E) - (1 - k/E)^n). 0 for n <= 1 or
  // without `experts`. Real routers are skewed, so this is an upper
  // estimate of the union; it is exact at n = 1 and as n grows large.
  double extra_expert_bytes_read(double tokens) const;
  // Bytes of all routed experts as loaded (the weight_bytes ratio applied).
  double routed_expert_bytes() const;
};

struct GpuSpec {
  std::string name;         // catalog key, e.g. "h100-sxm-80gb"
  std::string description;  // marketing name
  std::string source;
  int64_t memory_bytes = 0;
  double peak_bf16_flops = 0;         // dense, FLOP/s
  double hbm_bandwidth = 0;           // bytes/s
  std::string interconnect;           // nvlink4, pcie4, ...
  double interconnect_bandwidth = 0;  // bytes/s per direction
  double allreduce_latency_s = 0;     // one small-message all-reduce
  int sm_count = 0;
  double cost_per_hour = 0;  // optional (user catalogs): price of one GPU-hour, for `prefixsim plan`; 0 = not given
};

// The built-in catalogs, parsed once (InternalError if the embedded YAML is
// broken -- the catalog test catches that at build time), followed by any
// user entries added with add_user_models / add_user_gpus.
// A deque, so that adding user entries never moves the ones a caller holds.
const std::deque<ModelSpec>& model_catalog();
const std::deque<GpuSpec>& gpu_catalog();

// User catalogs (--model-file, --gpu-file, $PREFIXSIM_CATALOG): parse FILE
// (the built-in schema) and append its entries to the catalog. InputError
// "FILE:LINE: ..." for a bad entry or a name the catalog already has.
// Returns the names added.
std::vector<std::string> add_user_models(const std::string& file);
std::vector<std::string> add_user_gpus(const std::string& file);
// $PREFIXSIM_CATALOG, when set: a folder whose models.yaml and gpus.yaml
// (either may be absent; the folder may not) extend the catalog. Once per
// process; later calls do nothing.
void load_catalog_env();
// "models" or "gpus": which list a user catalog file holds (InputError
// "FILE:1: ..." when it is neither, or unreadable YAML).
std::string catalog_file_kind(const std::string& file);

// Lookup by name; InputError listing the known names when there is none.
// `flag` names the option the name came from, for the message.
const ModelSpec& find_model(std::string_view name, std::string_view flag = "--model");
const GpuSpec& find_gpu(std::string_view name, std::string_view flag = "--gpu");

// Parse catalog YAML text (`file` names it in errors: "FILE:LINE: field ...").
std::vector<ModelSpec> parse_model_catalog(std::string_view yaml, const std::string& file);
std::vector<GpuSpec> parse_gpu_catalog(std::string_view yaml, const std::string& file);

nlohmann::json to_json(const ModelSpec& m);
nlohmann::json to_json(const GpuSpec& g);

// A model catalog name, its canonical spelling; "unknown model ..." at `at` otherwise
// (a line of a text input: calibration samples, steps files).
std::string model_in(const TextLoc& at, std::string_view field, std::string_view v);

}  // namespace prefixsim
