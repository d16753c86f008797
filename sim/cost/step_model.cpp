#include "sim/cost/step_model.h"

#include <algorithm>
#include <cmath>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/json_keys.h"
#include "sim/cost/kv_sizing.h"

namespace prefixsim {

namespace catalog_data {
extern const std::string_view kStepModelJson;  // generated from sim/cost/catalog/step_model.json
}

namespace {

constexpr const char* kTermNames[kNumStepTerms] = {
    "bw_inv", "kv_bw_inv", "flops_inv", "attn_inv", "link_inv", "layer_s", "step_s", "collective_inv",
    "host_step_s", "host_seq_s", "request_s", "tokenize_s"};

}  // namespace

std::string_view step_term_name(int term) { return kTermNames[term]; }

double step_term_lower_bound(int term) { return term <= kLinkInv ? 1.0 : 0.0; }

StepTerms roofline_terms() {
  const CostModelOptions o;
  StepTerms t{};
  t[kBwInv] = 1.0 / o.bw_efficiency;
  t[kKvBwInv] = 1.0 / o.bw_efficiency;
  t[kFlopsInv] = 1.0 / o.mfu_efficiency;
  t[kAttnInv] = 1.0 / o.attn_efficiency;
  t[kLinkInv] = 1.0 / o.link_efficiency;
  t[kLayerS] = 0;
  t[kStepS] = 0;
  t[kCollectiveInv] = 1;  // the catalog's latency estimate as it stands
  t[kHostStepS] = o.overhead_s;
  t[kHostSeqS] = 10e-6;
  t[kRequestS] = 0.5e-3;
  t[kTokenizeS] = 1e-6;
  return t;
}

StepBasis step_basis(const ModelSpec& m, const GpuSpec& g, int tp, int kv_dtype_bytes, int expert_dp) {
  check_tensor_parallel(m, tp);
  const double shards = tp, peak = g.peak_bf16_flops, bw = g.hbm_bandwidth;
  StepBasis b;
  b.linear = 2.0 * static_cast<double>(m.per_token_matmul_params()) / shards / peak;
  b.lm_head = 2.0 * m.vocab * static_cast<double>(m.hidden) / shards / peak;
  const ExpertShard ep = expert_shard(m, tp, expert_dp);
  b.weights = ep.weight_bytes / bw;
  b.experts = ep.expert_bytes / bw;
  b.expert_miss = ep.expert_miss;
  b.expert_token_scale = ep.token_scale;
  b.attn = 4.0 * m.head_dim * (m.heads / shards) * m.layers / peak;
  const int kv_dtype = kv_dtype_bytes > 0 ? kv_dtype_bytes : m.dtype_bytes;
  b.kv = static_cast<double>(kv_bytes_per_token(m, tp, kv_dtype)) / bw;
  if (tp > 1) {
    const double ring = 2.0 * (shards - 1) / shards;
    b.allreduce_bytes = 2.0 * m.layers * ring * m.hidden * m.dtype_bytes / g.interconnect_bandwidth;
    b.collectives = 2.0 * m.layers * (shards - 1) * g.allreduce_latency_s;
  }
  b.allreduce_bytes += ep.dispatch_bytes_per_token / g.interconnect_bandwidth;
  b.collectives += ep.dispatch_messages * g.allreduce_latency_s;
  b.layers = m.layers;
  return b;
}

CostCoefficients step_model_coefficients(const StepTerms& t, const StepBasis& b) {
  CostCoefficients c;
  c.overhead_s = t[kHostStepS];
  c.device_overhead_s = t[kLayerS] * b.layers + t[kStepS] + t[kCollectiveInv] * b.collectives;
  c.linear_s_per_token = t[kFlopsInv] * b.linear;
  c.weight_floor_s = t[kBwInv] * b.weights;
  c.expert_read_s = t[kBwInv] * b.experts;
  c.expert_miss = b.expert_miss;
  c.expert_token_scale = b.expert_token_scale;
  c.per_seq_s = t[kFlopsInv] * b.lm_head;
  c.attn_s_per_unit = t[kAttnInv] * b.attn;
  c.kv_read_s_per_token = t[kKvBwInv] * b.kv;
  c.allreduce_s_per_token = t[kLinkInv] * b.allreduce_bytes;
  return c;
}

void apply_step_model_timing(const StepTerms& t, VllmTiming& timing) {
  timing.host_per_seq_s = t[kHostSeqS];
  timing.request_s = t[kRequestS];
  timing.request_per_prompt_token_s = t[kTokenizeS];
}

StepFeatures step_features(const StepTerms& t, const StepBasis& b, const BatchSummary& padded) {
  StepFeatures f;
  if (padded.seqs == 0) return f;
  const double n = static_cast<double>(padded.graph_tokens > 0 ? padded.graph_tokens : padded.new_tokens);
  const double seqs = static_cast<double>(padded.seqs);
  const double routed = n * b.expert_token_scale;  // as weight_floor_seconds
  const double weights = b.experts > 0 && routed > 1
                             ? b.weights + b.experts * (b.expert_miss - std::pow(b.expert_miss, routed))
                             : b.weights;
  // The branch step_seconds takes: max(linear * n, floor).
  if (t[kFlopsInv] * b.linear * n >= t[kBwInv] * weights) f.device[kFlopsInv] += b.linear * n;
  else f.device[kBwInv] += weights;
  f.device[kFlopsInv] += b.lm_head * seqs;
  f.device[kKvBwInv] = b.kv * padded.context_tokens;
  f.device[kAttnInv] = b.attn * padded.attn_units;
  f.device[kLinkInv] = b.allreduce_bytes * n;
  f.device[kLayerS] = b.layers;
  f.device[kStepS] = 1;
  f.device[kCollectiveInv] = b.collectives;
  f.host[kHostStepS] = 1;
  f.host[kHostSeqS] = seqs;
  return f;
}

nlohmann::ordered_json step_terms_json(const StepTerms& t) {
  nlohmann::ordered_json j;
  for (int k = 0; k < kNumStepTerms; ++k) j[std::string(kTermNames[k])] = t[static_cast<size_t>(k)];
  return j;
}

namespace {
// The file's fields in the file's order.
nlohmann::ordered_json ordered_model(const StepModel& m) {
  nlohmann::ordered_json j = {{"schema", kStepModelSchema}, {"terms", step_terms_json(m.terms)}, {"provenance", m.provenance}};
  if (!m.known_error.is_null()) j["known_error"] = nlohmann::ordered_json::parse(m.known_error.dump());
  return j;
}
}  // namespace

nlohmann::json to_json(const StepModel& m) { return nlohmann::json::parse(ordered_model(m).dump()); }

bool is_step_model_text(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() && j.contains("schema") && j["schema"] == kStepModelSchema;
}

StepModel parse_step_model(const std::string& text, const std::string& file) {
  const nlohmann::json j = nlohmann::json::parse(text, refuse_duplicate_json_keys(text, file), false);
  auto fail = [&](const std::string& field, const std::string& msg) -> void {
    throw InputError(file + ": field '" + field + "': " + msg);
  };
  if (j.is_discarded() || !j.is_object()) throw InputError(file + ": not a JSON object");
  if (!j.contains("schema") || j["schema"] != kStepModelSchema)
    fail("schema", std::string("must be \"") + kStepModelSchema + "\"");
  if (!j.contains("terms") || !j["terms"].is_object()) fail("terms", "missing or not an object");
  StepModel m;
  for (auto it = j["terms"].begin(); it != j["terms"].end(); ++it) {
    const std::string key = it.key();
    if (std::find_if(std::begin(kTermNames), std::end(kTermNames), [&](const char* n) { return key == n; }) ==
        std::end(kTermNames))
      fail("terms." + key, "unknown term");
  }
  for (int k = 0; k < kNumStepTerms; ++k) {
    const std::string name = kTermNames[k];
    if (k == kStepS && !j["terms"].contains(name)) continue;  // added later: a model fitted without it has none
    if (!j["terms"].contains(name)) fail("terms." + name, "missing");
    const nlohmann::json& v = j["terms"][name];
    if (!v.is_number()) fail("terms." + name, "must be a number");
    const double x = v.get<double>();
    if (!(std::isfinite(x) && x >= step_term_lower_bound(k) && x < 1e3))
      fail("terms." + name, "must be a finite number >= " + std::to_string(step_term_lower_bound(k)));
    m.terms[static_cast<size_t>(k)] = x;
  }
  if (j.contains("provenance")) {
    if (!j["provenance"].is_string()) fail("provenance", "must be a string");
    m.provenance = j["provenance"].get<std::string>();
  }
  if (j.contains("known_error")) m.known_error = j["known_error"];
  return m;
}

StepModel read_step_model(const std::string& path) {
  return parse_step_model(read_whole_file(path, "step model"), path);
}

std::string step_model_text(const StepModel& m) {
  return ordered_model(m).dump(2) + "\n";
}

void write_step_model(const std::string& path, const StepModel& m) {
  write_file_atomic(path, step_model_text(m));
}

const StepModel& default_step_model() {
  static const StepModel m =
      parse_step_model(std::string(catalog_data::kStepModelJson), "sim/cost/catalog/step_model.json");
  return m;
}

}  // namespace prefixsim
