#include "sim/cost/cost_model.h"

#include <algorithm>
#include <cmath>

#include "sim/base/error.h"
#include "sim/cost/kv_sizing.h"

namespace prefixsim {

BatchSummary summarize(const Batch& batch) {
  BatchSummary b;
  for (const ScheduledSeq& s : batch.seqs) b.add(s.num_new_tokens, s.num_computed_tokens);
  return b;
}

double weight_floor_seconds(const CostCoefficients& c, double tokens) {
  const double routed = tokens * c.expert_token_scale;
  if (c.expert_read_s <= 0 || routed <= 1) return c.weight_floor_s;
  return c.weight_floor_s + c.expert_read_s * (c.expert_miss - std::pow(c.expert_miss, routed));
}

ExpertShard expert_shard(const ModelSpec& m, int tp, int expert_dp) {
  if (expert_dp < 1) throw InputError("expert parallelism: the data-parallel size must be >= 1");
  ExpertShard e;
  const double shards = tp;
  e.weight_bytes = static_cast<double>(m.weight_bytes_read_per_step()) / shards;
  if (!m.has_routing()) return e;
  e.expert_miss = 1.0 - static_cast<double>(m.experts_per_token) / m.experts;
  const double routed = m.routed_expert_bytes(), ranks = shards * expert_dp;
  e.expert_bytes = routed / ranks;
  if (expert_dp == 1) return e;
  // One token's k experts, counted in weight_bytes_read_per_step at TP,
  // now live on their own ranks: a rank's share is k/E of its experts, and
  // weight_floor_seconds adds the rest as the group's tokens spread.
  const double one_token = routed * (1.0 - e.expert_miss);
  e.weight_bytes += one_token / ranks - one_token / shards;
  e.token_scale = expert_dp;
  const double peers = expert_dp - 1;
  e.dispatch_bytes_per_token = 2.0 * m.layers * peers * m.hidden * m.dtype_bytes / shards;
  e.dispatch_messages = 2.0 * m.layers * peers;
  return e;
}

double step_seconds(const CostCoefficients& c, const BatchSummary& b) {
  if (b.seqs == 0) return 0;
  const double n = static_cast<double>(b.graph_tokens > 0 ? b.graph_tokens : b.new_tokens);
  return c.overhead_s + c.device_overhead_s + c.per_seq_s * static_cast<double>(b.seqs) +
         std::max(c.linear_s_per_token * n, weight_floor_seconds(c, n)) + c.attn_s_per_unit * b.attn_units +
         c.kv_read_s_per_token * b.context_tokens + c.allreduce_s_per_token * n;
}

TimeNs seconds_to_ns(double s) { return static_cast<TimeNs>(std::ceil(s * 1e9)); }

void add_tensor_parallel_comm(CostCoefficients& c, const ModelSpec& m, const GpuSpec& g, int tp,
                              const CostModelOptions& o) {
  if (tp <= 1) return;
  // Two all-reduces per layer (after attention and after the MLP) of
  // tokens x hidden activations; a ring moves 2*(TP-1)/TP of the bytes
  // over each link, and each all-reduce pays the link latency once.
  const double shards = tp;
  const double ring = 2.0 * (shards - 1) / shards;
  const double link = g.interconnect_bandwidth * o.link_efficiency;
  c.allreduce_s_per_token += 2.0 * m.layers * ring * m.hidden * m.dtype_bytes / link;
  c.overhead_s += 2.0 * m.layers * g.allreduce_latency_s;
}

CostCoefficients roofline_coefficients(const ModelSpec& m, const GpuSpec& g, int tp, const CostModelOptions& o) {
  check_tensor_parallel(m, tp);
  for (double e : {o.mfu_efficiency, o.attn_efficiency, o.bw_efficiency, o.link_efficiency})
    if (!(e > 0 && e <= 1)) throw InputError("cost model: efficiencies must be in (0, 1]");
  if (!(o.overhead_s >= 0)) throw InputError("cost model: overhead_s must be >= 0");
  const double shards = tp;
  const double flops = g.peak_bf16_flops * o.mfu_efficiency;
  const double attn_flops = g.peak_bf16_flops * o.attn_efficiency;
  const double bw = g.hbm_bandwidth * o.bw_efficiency;

  CostCoefficients c;
  // Linear layers: 2 FLOPs per parameter per token, split over the shards.
  c.linear_s_per_token = 2.0 * static_cast<double>(m.per_token_matmul_params()) / shards / flops;
  // ...but never faster than streaming this shard's weights from HBM once.
  // A MoE batch reads more experts than one token does: the union of the
  // tokens' picks (ModelSpec::extra_expert_bytes_read), over this rank's
  // experts (ExpertShard: TP shards, or whole experts under expert parallelism).
  const ExpertShard ep = expert_shard(m, tp, o.expert_dp);
  c.weight_floor_s = ep.weight_bytes / bw;
  c.expert_read_s = ep.expert_bytes / bw;
  c.expert_miss = ep.expert_miss;
  c.expert_token_scale = ep.token_scale;
  // Logits: the lm_head (vocab-parallel under TP) runs for one token per sequence.
  c.per_seq_s = 2.0 * m.vocab * static_cast<double>(m.hidden) / shards / flops;
  // Attention: QK^T and PV are 2*head_dim FLOPs each per query-key pair, per
  // query head (heads/TP per shard), per layer.
  c.attn_s_per_unit = 4.0 * m.head_dim * (m.heads / shards) * m.layers / attn_flops;
  // KV read: every context token's K and V, every layer, this shard's heads.
  const int kv_dtype = o.kv_dtype_bytes > 0 ? o.kv_dtype_bytes : m.dtype_bytes;
  c.kv_read_s_per_token = static_cast<double>(kv_bytes_per_token(m, tp, kv_dtype)) / bw;
  c.overhead_s = o.overhead_s;
  add_tensor_parallel_comm(c, m, g, tp, o);
  c.allreduce_s_per_token += ep.dispatch_bytes_per_token / (g.interconnect_bandwidth * o.link_efficiency);
  c.overhead_s += ep.dispatch_messages * g.allreduce_latency_s;
  return c;
}

ModeledExecutor::ModeledExecutor(const ModelSpec& model, const GpuSpec& gpu, int tp, std::optional<Profile> profile,
                                 const CostModelOptions& options, const VllmTiming& timing)
    : model_name_(model.name),
      gpu_name_(gpu.name),
      tp_(tp),
      options_(options),
      timing_(timing),
      profile_(std::move(profile)) {
  for (double x : {timing_.host_per_seq_s, timing_.request_s, timing_.request_per_prompt_token_s})
    if (!(x >= 0 && std::isfinite(x))) throw InputError("cost model: host and request overheads must be >= 0");
  if (profile_) {
    check_tensor_parallel(model, tp);
    const Profile& p = *profile_;
    if (p.model != model.name || p.gpu.catalog != gpu.name || p.tp != tp)
      throw InputError("--profile: the profile was measured for " + p.model + " on " + p.gpu.catalog + " at TP " +
                       std::to_string(p.tp) + ", but this run uses " + model.name + " on " + gpu.name + " at TP " +
                       std::to_string(tp));
    coef_ = p.coefficients;
  } else {
    coef_ = roofline_coefficients(model, gpu, tp, options);
  }
}

ModeledExecutor::ModeledExecutor(const ModelSpec& model, const GpuSpec& gpu, int tp,
                                 const CostCoefficients& coefficients, nlohmann::json description,
                                 const VllmTiming& timing)
    : model_name_(model.name),
      gpu_name_(gpu.name),
      tp_(tp),
      timing_(timing),
      step_model_(std::move(description)),
      coef_(coefficients) {
  for (double x : {timing_.host_per_seq_s, timing_.request_s, timing_.request_per_prompt_token_s})
    if (!(x >= 0 && std::isfinite(x))) throw InputError("cost model: host and request overheads must be >= 0");
  if (step_model_.is_null()) step_model_ = nlohmann::json::object();
}

BatchSummary ModeledExecutor::padded_summary(const Batch& batch) const {
  BatchSummary b = summarize(batch);
  if (timing_.graphs.enabled()) b.graph_tokens = timing_.graphs.padded_tokens(b.new_tokens, b.uniform_decode());
  return b;
}

TimeNs ModeledExecutor::step_time(const Batch& batch) {
  if (!timing_.any()) return seconds_to_ns(step_seconds(coef_, summarize(batch)));
  const BatchSummary b = padded_summary(batch);
  if (b.seqs == 0) return 0;
  return seconds_to_ns(step_seconds(coef_, b) + timing_.host_per_seq_s * static_cast<double>(b.seqs));
}

StepCost ModeledExecutor::step_cost(const Batch& batch) {
  const BatchSummary b = padded_summary(batch);
  if (b.seqs == 0) return {};
  const double host = coef_.overhead_s + timing_.host_per_seq_s * static_cast<double>(b.seqs);
  return {seconds_to_ns(host), seconds_to_ns(step_seconds(coef_, b) - coef_.overhead_s)};
}

TimeNs ModeledExecutor::request_latency(int64_t prompt_tokens) const {
  return seconds_to_ns(timing_.request_s + timing_.request_per_prompt_token_s * static_cast<double>(prompt_tokens));
}

TimeNs ModeledExecutor::prefill_time(int64_t new_tokens, int64_t cached_tokens) const {
  BatchSummary b;
  b.add(new_tokens, cached_tokens);
  return seconds_to_ns(step_seconds(coef_, b));
}

// How far a planner can trust the times: a profile carries the error of its
// fit on held-out measured steps; the roofline has never been compared with
// measured times, so it says so rather than quoting a figure.
nlohmann::json ModeledExecutor::known_error_json() const {
  if (!step_model_.is_null()) {
    if (step_model_.contains("known_error")) return step_model_["known_error"];
    return {{"validated", false}, {"basis", "none: this step model carries no validation error"}};
  }
  if (profile_) {
    const ProfileFit& f = profile_->fit;
    return {{"validated", true},
            {"basis", "held-out measured engine steps of the profile's own calibration (step times, not TTFT)"},
            {"held_out_samples", f.held_out_samples},
            {"step_mape_held_out", f.mape_held_out},
            {"step_max_ape_held_out", f.max_ape_held_out},
            {"measured_by", profile_->provenance}};
  }
  return {{"validated", false},
          {"basis", "none: datasheet peaks x assumed efficiencies (options), never compared with measured step "
                    "times; calibrate a profile (prefixsim gpu calibrate) to know the error"}};
}

nlohmann::json ModeledExecutor::to_json() const {
  const char* source = !step_model_.is_null() ? "step_model" : profile_ ? "profile" : "roofline";
  nlohmann::json j = {{"source", source},
                      {"model", model_name_},
                      {"gpu", gpu_name_},
                      {"tp", tp_},
                      {"coefficients", prefixsim::to_json(coef_)}};
  if (!step_model_.is_null()) {
    j["step_model"] = {{"terms", step_model_.value("terms", nlohmann::json::object())},
                       {"provenance", step_model_.value("provenance", "")}};
  } else if (profile_) {
    j["profile"] = prefixsim::to_json(*profile_);
  } else {
    j["options"] = {{"mfu_efficiency", options_.mfu_efficiency},
                    {"attn_efficiency", options_.attn_efficiency},
                    {"bw_efficiency", options_.bw_efficiency},
                    {"link_efficiency", options_.link_efficiency},
                    {"overhead_s", options_.overhead_s}};
    if (options_.kv_dtype_bytes > 0) j["options"]["kv_dtype_bytes"] = options_.kv_dtype_bytes;
  }
  if (timing_.any()) {
    nlohmann::json t = {{"cuda_graphs", to_string(timing_.graphs.mode)},
                        {"host_per_seq_s", timing_.host_per_seq_s},
                        {"request_s", timing_.request_s},
                        {"request_per_prompt_token_s", timing_.request_per_prompt_token_s}};
    if (timing_.graphs.enabled()) t["max_capture_size"] = timing_.graphs.capture_sizes.back();
    j["vllm_timing"] = t;
  }
  j["known_error"] = known_error_json();
  return j;
}

}  // namespace prefixsim
