// The step model fitted on observed real runs (schema "prefixsim.step_model/1"),
// the cost model every run uses unless --profile gives another.
//
// It keeps the roofline's physics (FLOPs, bytes read, collectives: the
// per-unit seconds of StepBasis, from the catalog's datasheet figures and the
// model's config) and fits what a roofline gets wrong, as a few terms shared
// by every model and GPU (no per-run, per-model or per-GPU-name factor):
//
//   bw_inv        1 / the achieved fraction of datasheet memory bandwidth streaming weights
//                 (and a MoE's experts)
//   kv_bw_inv     1 / the same for the paged-attention kernels reading the KV cache
//   flops_inv     1 / the achieved fraction of dense peak in the linear layers and lm_head
//   attn_inv      1 / the achieved fraction of dense peak in attention
//   link_inv      1 / the achieved fraction of the GPU link's bandwidth in TP all-reduces
//   layer_s       device seconds per layer per step: kernels' fixed floors (norms, rotary,
//                 small GEMMs' tails, graph replay), paid whatever the batch
//   step_s        device seconds per step whatever the model's depth: the embedding gather,
//                 the final norm and lm_head's tail, sampling, the graph launch
//   collective_inv  multiplies the catalog's small-message all-reduce latency of the GPU's
//                 link (NVLink or PCIe), paid per peer (TP - 1) by each of a step's 2 x layers
//                 all-reduces at TP > 1
//   host_step_s   engine-core CPU per step (scheduling, input preparation, output processing)
//   host_seq_s    engine-core CPU per scheduled sequence and step
//   request_s     per request, outside the engine core (HTTP, IPC, first token's detokenize
//                 and stream): added to TTFT and e2e as a client measures them
//   tokenize_s    per prompt token, outside the engine core (tokenization)
//
// A step of batch shape b costs (seconds), with B the StepBasis of (model, GPU, TP):
//   device = flops_inv * (B.linear * n [compute-bound] + B.lm_head * S)
//          + bw_inv * B.weights(n) [weight-bound] + kv_bw_inv * B.kv * K
//          + attn_inv * B.attn * A + link_inv * B.allreduce_bytes * n
//          + layer_s * L + step_s + collective_inv * B.collectives
//   host   = host_step_s + host_seq_s * S
// where n is the padded token count, S sequences, K context tokens, A attention
// units (cost_model.h), L layers, and the linear layers take
// the larger of their compute and weight-read times. The device part is linear
// in the terms for a given branch of that max, which is what lets
// `prefixsim calibrate` fit them to end-to-end latencies (sim/study/calibrate.h).
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sim/cost/catalog.h"
#include "sim/cost/cost_model.h"

namespace prefixsim {

inline constexpr const char* kStepModelSchema = "prefixsim.step_model/1";

enum StepTerm : int {
  kBwInv,
  kKvBwInv,
  kFlopsInv,
  kAttnInv,
  kLinkInv,
  kLayerS,
  kStepS,
  kCollectiveInv,
  kHostStepS,
  kHostSeqS,
  kRequestS,
  kTokenizeS,
  kNumStepTerms
};
using StepTerms = std::array<double, kNumStepTerms>;

// Names as in the JSON, and each term's lower bound (an efficiency cannot
// beat the datasheet; a time cannot be negative).
std::string_view step_term_name(int term);
double step_term_lower_bound(int term);
// The roofline's assumptions as terms (CostModelOptions' efficiencies and
// VllmTiming's estimates): where calibration starts.
StepTerms roofline_terms();

struct StepModel {
  StepTerms terms = roofline_terms();
  std::string provenance;          // what it was fitted on, how
  nlohmann::json known_error;      // {"basis", "runs", per metric median/max |error|}: how far to trust it
};

// Seconds per unit at every term = 1 (a fully efficient GPU, no fixed costs),
// for one tensor-parallel shard of `m` on `g`.
struct StepBasis {
  double linear = 0;           // per token: 2 x compute params / TP / peak
  double lm_head = 0;          // per sequence: 2 x vocab x hidden / TP / peak
  double weights = 0;          // per step: weight bytes read / TP / bandwidth
  double experts = 0;          // MoE: this rank's routed experts' bytes / bandwidth ...
  double expert_miss = 0;      // ... read as experts * (miss - miss^(scale x n)) beyond one token's
  double expert_token_scale = 1;  // the group's tokens per engine token under expert parallelism (ExpertShard)
  double attn = 0;             // per attention unit: 4 x head_dim x heads / TP x layers / peak
  double kv = 0;               // per context token: KV bytes / TP / bandwidth
  double allreduce_bytes = 0;  // per token: TP all-reduce and expert dispatch bytes over the link at its datasheet rate
  double layers = 0;
  double collectives = 0;      // per step: 2 x layers x (TP - 1 + D - 1) x the link's all-reduce latency
};
// expert_dp: the data-parallel engines the routed experts are split over
// (expert parallelism, sim/cost/cost_model.h ExpertShard); 1: none.
StepBasis step_basis(const ModelSpec& m, const GpuSpec& g, int tp, int kv_dtype_bytes = 0, int expert_dp = 1);

// The cost-model coefficients of `terms` for this basis (host_step_s as
// overhead_s, the fixed device costs as device_overhead_s); host_seq_s,
// request_s and tokenize_s go to VllmTiming (step_model_timing).
CostCoefficients step_model_coefficients(const StepTerms& terms, const StepBasis& b);
void apply_step_model_timing(const StepTerms& terms, VllmTiming& t);

// What one step contributes to each term (its derivative), split into the
// device part, the host part and a constant (device seconds no term scales):
// device seconds = dot(terms, device) + constant, host = dot(terms, host).
// The compute/weight branch is the one `terms` takes for this step.
struct StepFeatures {
  StepTerms device{};
  StepTerms host{};
  double constant = 0;
};
StepFeatures step_features(const StepTerms& terms, const StepBasis& b, const BatchSummary& padded);

// The model that ships (sim/cost/catalog/step_model.json, fitted by
// `prefixsim calibrate` on ../shared/validation), parsed once.
const StepModel& default_step_model();

// The terms by name, in StepTerm order.
nlohmann::ordered_json step_terms_json(const StepTerms& t);
nlohmann::json to_json(const StepModel& m);
// InputError "FILE: field 'terms.x' ..." for a missing or out-of-range term.
StepModel parse_step_model(const std::string& text, const std::string& file);
StepModel read_step_model(const std::string& path);
// Pretty JSON text, the same bytes for the same model; written atomically.
std::string step_model_text(const StepModel& m);
void write_step_model(const std::string& path, const StepModel& m);
// True when `text` is a step model (its schema), not a per-GPU profile.
bool is_step_model_text(const std::string& text);

}  // namespace prefixsim
