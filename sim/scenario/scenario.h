// The resolved configuration of a replay: defaults, then a scenario YAML
// (--config), then command-line flags, in that order of precedence. The
// whole resolved scenario goes into report.json so a run can be repeated.
//
// One option table (scenario.cpp) declares every setting once: its flag,
// its YAML key (which is also its key in report.json's `scenario`), its
// help and where it applies. `replay` and `compare` take their flags from
// it, scenario files are read through it, and the report echoes it, so the
// commands cannot drift apart on what a setting means.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace prefixsim {

struct Scenario {
  // Input: a trace, or a built-in workload (preset name or workload YAML).
  std::string trace;                    // "" = the workload below
  std::string workload = "chatbot";
  bool workload_given = false;          // set by a scenario file's workload key
  std::optional<int64_t> requests;      // workload size, or the first N requests of a trace
  std::optional<double> rate;           // arrival rate (req/s): a workload's, or a trace rescaled to it
  std::optional<double> time_scale;     // a trace's gaps between arrivals multiplied by this
  std::optional<int64_t> warmup;        // the first N requests warm the cache, uncounted
  std::optional<double> warmup_seconds; // ... or those arriving in the first S seconds
  uint64_t seed = 1;
  std::string format = "auto";
  int32_t trace_block_size = 0;         // 0: the format's default
  double conversation_rate = 1.0;       // kv-cache-tester conversations per second
  bool sort = false;

  std::string mode = "engine";          // engine | cache
  std::string policy = "lru";
  int32_t block_size = 16;

  // A fleet: this many replicas of the server below, behind the router.
  int32_t replicas = 1;
  std::string router = "round-robin";   // name[:key=value,...] (sim/fleet/router.h)
  double router_kv_lag_ms = 0;          // the replicas' KV events reach the router this late (sim/fleet/router_view.h)
  double router_scrape_ms = 0;          // the router reads the replicas' load as sampled this often (sim/fleet/fleet.h)
  std::string admission = "off";        // admission and shedding at the router (sim/fleet/admission.h)
  // A mixed fleet: groups of replicas on their own GPU and TP behind the one
  // router, "GPU[:tp=N][:x=N];..." (parse_replica_groups); "": --replicas
  // replicas of --gpu at --tp.
  std::string replica_groups;
  // Disaggregated prefill and decode (sim/fleet/disagg.h): with
  // prefill_replicas > 0 the fleet is a prefill pool and a decode pool, each
  // of the server below unless its own GPU or TP is given.
  int32_t prefill_replicas = 0;
  int32_t decode_replicas = 0;
  std::string prefill_gpu;              // "": --gpu
  std::string decode_gpu;
  int32_t prefill_tp = 0;               // 0: --tp
  int32_t decode_tp = 0;
  std::string prefill_router;           // "": --router
  std::string decode_router = "least-loaded";
  std::string disagg = "vllm-nixl";     // the design and its parameters
  double kv_link_gbps = 50;             // GB/s per GPU and direction (an instance: x its TP)
  double kv_link_latency_us = 10;
  double kv_fabric_gbps = 0;            // 0: no fabric limit

  std::string model = "llama-3.1-8b";
  std::string gpu = "h100-sxm-80gb";
  double gpu_mem_util = 0.9;
  int tp = 1;
  // vLLM's --enable-expert-parallel with the replicas as its data-parallel
  // engines: a MoE's routed experts split over replicas x TP ranks
  // (sim/cost/cost_model.h ExpertShard).
  bool enable_expert_parallel = false;
  std::optional<int64_t> kv_blocks;
  std::optional<int64_t> kv_tokens;
  std::optional<double> kv_gb;
  std::string profile;                  // calibrated cost-model profile (JSON)
  std::string kv_cache_dtype = "auto";  // auto (the model's dtype) | fp8 (1 byte per element)
  std::string model_file;               // user model catalog (YAML) extending the built-in one
  std::string gpu_file;                 // user GPU catalog (YAML)
  // KV tiers below the GPU pool (sim/kv/kv_tier.h): vLLM's CPU offloading
  // buffer in GiB per replica, and more tiers as ';'-separated specs.
  std::optional<double> kv_offloading_size;
  std::string kv_tiers;

  // vLLM scheduler settings (vLLM's defaults).
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  bool enable_chunked_prefill = true;
  int64_t long_prefill_token_threshold = 0;
  // vLLM's default engine loop (async scheduling) and server timing; the
  // library's engine and cost model default to neither (sim/cost/cost_model.h
  // VllmTiming, sim/engine/engine.h), the CLI to vLLM's defaults.
  bool async_scheduling = true;
  std::string cudagraph_mode = "full_and_piecewise";  // none | piecewise | full_decode_only | full_and_piecewise
  // Unset: the cost model's (the fitted step model's terms, or the
  // roofline's estimates of 10 us, 0.5 ms and 1 us with --profile).
  std::optional<double> host_per_seq_us;       // engine-core CPU per scheduled sequence per step
  std::optional<double> request_overhead_ms;   // per request outside the engine core (HTTP, IPC, detokenize)
  std::optional<double> tokenize_us_per_token; // tokenization, per prompt token

  double series_interval_s = 1.0;       // time-series resolution (coarsened for long runs)
  std::string out = "prefixsim-out";
  bool check_invariants = false;
};

// Where a setting applies (a bit mask over the commands that share the table).
// analyze, catalog and generate take the few settings they share with a run
// from the table too, so a flag means one thing with one range everywhere.
enum ScenarioCommand : unsigned {
  kForReplay = 1,
  kForCompare = 2,
  kForPlan = 4,
  kForAnalyze = 8,
  kForCatalog = 16,
  kForGenerate = 32
};

// Adds the table's flags for `command` to `opts`.
void add_scenario_options(boost::program_options::options_description& opts, ScenarioCommand command);
// Sets what the flags of `command` give, on top of `s`. A pool size flag
// replaces whatever size a scenario file gave.
void apply_scenario_flags(const boost::program_options::variables_map& vm, ScenarioCommand command, Scenario& s);

// Applies a scenario YAML file on top of `s`; unknown keys and bad values are
// InputError "FILE:LINE: key: message".
void load_scenario_yaml(const std::string& path, Scenario& s);
// The same for a parsed mapping (a sweep's `base`); errors name `path`.
void apply_scenario_yaml(const YAML::Node& map, const std::string& path, Scenario& s);
// The table's key for a YAML key: itself, "scheduler.x" for a bare
// scheduler key "x", or "" when the scenario has no such key.
std::string scenario_key(const std::string& key);
// Sets one table key (scenario_key's form) from a YAML value; errors are
// "PATH:LINE: key: message", LINE the node's own unless `line` is given.
void apply_scenario_value(const std::string& path, long line, const std::string& key, const YAML::Node& value,
                          Scenario& s);
// The value of one table key in `s` (an unset optional as null).
nlohmann::json scenario_value(const Scenario& s, const std::string& key);
// The YAML key of a flag name ("tp" for "tp"; "scheduler.max_num_seqs" for
// "max-num-seqs"), "" when none.
std::string scenario_key_of_flag(const std::string& flag);
bool is_pool_size_key(const std::string& key);  // kv_blocks, kv_tokens, kv_gb
// Checks ranges and combinations (InputError naming the flag).
void validate(const Scenario& s);
nlohmann::json to_json(const Scenario& s);
// Bytes per KV cache element for s.kv_cache_dtype: 0 (the model's dtype) for auto, 1 for fp8.
int kv_dtype_bytes(const Scenario& s);
// Every file a run of `s` reads (trace, workload YAML, profile, model and
// GPU catalogs, $PREFIXSIM_CATALOG's files): the paths no output may be
// (check_not_an_input). Names that are not files (a preset, `builtin`) stat
// as absent and never match.
std::vector<std::string> scenario_input_files(const Scenario& s);
// The engines a MoE's routed experts are split over: the replicas under
// expert parallelism, else 1.
int expert_dp(const Scenario& s);
// Disaggregated prefill and decode asked for (prefill_replicas > 0).
inline bool disaggregated(const Scenario& s) { return s.prefill_replicas > 0; }
// One pool of a disaggregated scenario as a scenario of its own: its
// replicas, GPU, TP and router (the others as `s`).
Scenario pool_scenario(const Scenario& s, bool prefill);

// One group of a mixed fleet: `count` replicas of the model on `gpu` at `tp`.
struct ReplicaGroup {
  std::string gpu;
  int tp = 1;
  int32_t count = 1;
};
// "h100-sxm-80gb:tp=2:x=4;a100-80gb:tp=4:x=2": groups split by ';', each a
// GPU name and its keys after ':' (or ','): tp (default `default_tp`), x
// (replicas, default 1). InputError naming `flag` on a malformed spec, an
// unknown key or a value out of range; the GPU names are checked against
// the catalog when the scenario is resolved.
std::vector<ReplicaGroup> parse_replica_groups(const std::string& spec, int default_tp,
                                               const std::string& flag = "--replica-groups");
// A mixed fleet asked for (--replica-groups).
inline bool mixed_fleet(const Scenario& s) { return !s.replica_groups.empty(); }
// Each group of a mixed scenario as a scenario of its own: its replicas, GPU
// and TP (the others as `s`), in the spec's order.
std::vector<Scenario> group_scenarios(const Scenario& s);
// The replicas of a fleet: the groups' sum in a mixed one, else --replicas.
int32_t fleet_replicas(const Scenario& s);

}  // namespace prefixsim
