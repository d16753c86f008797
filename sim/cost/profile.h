// Calibrated cost-model profiles (schema "prefixsim.profile/1"): the
// coefficients `prefixsim gpu calibrate` fitted from measured engine steps on
// one GPU, model and TP degree, with where and when they were measured and
// how well the fit predicts held-out steps. A profile replaces the roofline
// defaults of the cost model (sim/cost/cost_model.h).
//
// {"schema": "prefixsim.profile/1",
//  "gpu": {"name": "NVIDIA H100 80GB HBM3", "catalog": "h100-sxm-80gb", "sm_count": 132,
//          "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "driver": "550.54.15", "cuda": "12.4"},
//  "model": "llama-3.1-8b", "tp": 1, "date": "2026-11-22T04:00:00Z",
//  "coefficients": {"overhead_s", "linear_s_per_token", "weight_floor_s", "attn_s_per_unit",
//                   "kv_read_s_per_token", "per_seq_s", "allreduce_s_per_token"},
//  "fit": {"method", "train_samples", "held_out_samples", "mape_train", "mape_held_out",
//          "max_ape_held_out"},
//  "provenance": "free text: command line, commit, notes"}
//
// Every coefficient is seconds (per step, per token, per attention unit) and
// non-negative; MAPEs are fractions (0.03 = 3 %). See cost_model.h for the
// step-time formula they enter.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace prefixsim {

inline constexpr const char* kProfileSchema = "prefixsim.profile/1";

// Step time (seconds) = overhead_s + device_overhead_s + per_seq_s * seqs
//   + max(linear_s_per_token * new_tokens, weight_floor_s)
//   + attn_s_per_unit * sum n*(c + n/2) + kv_read_s_per_token * sum (c + n)
//   + allreduce_s_per_token * new_tokens
struct CostCoefficients {
  double overhead_s = 0;             // per step: scheduler, input prep, launches, all-reduce latency
  double linear_s_per_token = 0;     // linear layers, compute-bound regime
  double weight_floor_s = 0;         // linear layers can't beat reading the weights once per step
  double attn_s_per_unit = 0;        // per unit of n*(c + n/2): causal attention FLOPs
  double kv_read_s_per_token = 0;    // per token of context whose K and V are read
  double per_seq_s = 0;              // per scheduled sequence: logits (lm_head) and sampling
  double allreduce_s_per_token = 0;  // TP all-reduce bytes; fitted profiles fold it into linear
  // Mixture of experts (optional, 0 for dense models): a step of n tokens
  // also reads the routed experts one token does not touch, expert_read_s *
  // (expert_miss - expert_miss^n), inside the weight floor, where
  // expert_read_s streams all routed experts of a shard and expert_miss =
  // 1 - k/E (ModelSpec::extra_expert_bytes_read).
  double expert_read_s = 0;
  double expert_miss = 0;
  // Expert parallelism over D data-parallel engines: a rank's experts see
  // the whole group's tokens, D per token of its own batch (sim/cost/cost_model.h
  // ExpertShard); 1 without it. Optional in a profile.
  double expert_token_scale = 1;
  // Device time per step whatever the batch (kernels' fixed floors, TP
  // all-reduce latency): device time, unlike overhead_s, which is the
  // engine core's CPU time and overlaps the device under async scheduling.
  // The fitted step model sets it (sim/cost/step_model.h); optional in a profile.
  double device_overhead_s = 0;
  friend bool operator==(const CostCoefficients&, const CostCoefficients&) = default;
};

struct ProfileGpu {
  std::string name;      // as the driver names it
  std::string catalog;   // the catalog entry it stands for (sim/cost/catalog/gpus.yaml)
  int sm_count = 0;
  double sm_clock_mhz = 0;
  double mem_clock_mhz = 0;
  std::string driver;
  std::string cuda;
  friend bool operator==(const ProfileGpu&, const ProfileGpu&) = default;
};

struct ProfileFit {
  std::string method;           // e.g. "nnls+breakpoint, 1/y weights"
  int64_t train_samples = 0;
  int64_t held_out_samples = 0;
  double mape_train = 0;
  double mape_held_out = 0;
  double max_ape_held_out = 0;
  friend bool operator==(const ProfileFit&, const ProfileFit&) = default;
};

struct Profile {
  ProfileGpu gpu;
  std::string model;  // catalog name (sim/cost/catalog/models.yaml)
  int tp = 1;
  std::string date;   // ISO 8601, UTC
  CostCoefficients coefficients;
  ProfileFit fit;
  std::string provenance;
  friend bool operator==(const Profile&, const Profile&) = default;
};

// "YYYY-MM-DD..." at the start of s: the date form a profile requires.
bool looks_like_iso_date(std::string_view s);

// Reads and validates a profile; InputError "FILE:LINE: field 'x.y' ..." for
// a missing, mistyped or out-of-range field (LINE: where the key appears).
Profile read_profile(const std::string& path);
Profile parse_profile(const std::string& text, const std::string& file);

nlohmann::json to_json(const Profile& p);
nlohmann::json to_json(const CostCoefficients& c);
// Pretty JSON text (2-space indent, trailing newline), the same bytes for the same profile.
std::string profile_text(const Profile& p);
// Validates, then writes atomically.
void write_profile(const std::string& path, const Profile& p);

}  // namespace prefixsim
