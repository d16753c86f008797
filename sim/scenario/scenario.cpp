#include "sim/scenario/scenario.h"

#include "sim/cost/cuda_graphs.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/spec_params.h"
#include "sim/base/text_fields.h"
#include "sim/base/json_out.h"
#include "sim/base/yaml_doc.h"
#include "sim/fleet/admission.h"
#include "sim/fleet/disagg.h"

namespace prefixsim {

namespace po = boost::program_options;
namespace {

class YamlReader {
 public:
  // `line`: where errors point when a node has no mark of its own (values
  // made by a sweep's range); 0 = the node's own line.
  explicit YamlReader(std::string path, long line = 0) : path_(std::move(path)), line_(line) {}
  [[noreturn]] void fail(const YAML::Node& n, const std::string& key, const std::string& msg) const {
    throw InputError(path_, line_ ? line_ : n.Mark().line + 1, key + ": " + msg);
  }
  template <typename T>
  T get(const YAML::Node& n, const std::string& key, const char* what) const {
    T v{};
    try {
      v = n.as<T>();
    } catch (const YAML::Exception&) {
      fail(n, key, std::string("expected ") + what);
    }
    if constexpr (std::is_same_v<T, std::string>)
      if (!valid_utf8(v)) fail(n, key, "must be valid UTF-8 (it goes into report.json)");
    return v;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  long line_;
};

// ---- The option table ----------------------------------------------------

// A setting's place in Scenario: one member pointer per value type.
static_assert(std::is_same_v<int, int32_t>, "tp (int) and block_size (int32_t) share one alternative");
using Field = std::variant<std::string Scenario::*, std::optional<int64_t> Scenario::*,
                           std::optional<double> Scenario::*, uint64_t Scenario::*, int32_t Scenario::*,
                           int64_t Scenario::*, double Scenario::*, bool Scenario::*>;

// How the report's `scenario` echoes a setting.
enum class Echo {
  value,          // always (an unset optional as null)
  null_if_empty,  // a string; null when empty
  if_changed,     // only when it differs from the default (keys added after
                  // report/1 shipped: earlier reports stay byte-identical)
  never,          // run plumbing (output folder, debug checks), not the scenario
  with_fleet,     // only when there is more than one replica (a fleet's settings)
};

struct ScenarioOption {
  const char* flag;  // command-line flag
  const char* key;   // YAML key and report key; "scheduler.x" nests under scheduler
  Field field;
  Echo echo;
  unsigned commands;  // ScenarioCommand mask
  const char* help;
  bool switch_sets = true;  // a bool's flag is a switch that sets this value
};

constexpr unsigned kBoth = kForReplay | kForCompare;
constexpr unsigned kAll = kBoth | kForPlan;  // plan: all but what it searches (tp, replicas) or sizes itself

const std::vector<ScenarioOption>& scenario_options() {
  static const std::vector<ScenarioOption> table = {
      {"trace", "trace", &Scenario::trace, Echo::null_if_empty, kAll | kForAnalyze,
       "trace file (JSONL, .gz/.zst, kv-cache-tester folder or tar); replay's default: the built-in workload"},
      {"workload", "workload", &Scenario::workload, Echo::value, kForReplay | kForGenerate,
       "workload preset or YAML when no trace is given (default chatbot)"},
      {"requests", "requests", &Scenario::requests, Echo::value, kAll | kForGenerate,
       "workload size (default 2000), or replay only the first N trace requests"},
      {"rate", "rate", &Scenario::rate, Echo::value, kAll | kForGenerate,
       "arrival rate, requests/s: a workload's, or a trace's arrivals rescaled to this mean rate"},
      {"time-scale", "time_scale", &Scenario::time_scale, Echo::if_changed, kAll,
       "multiply a trace's gaps between arrivals by F (0.5 = twice the load)"},
      {"warmup", "warmup", &Scenario::warmup, Echo::if_changed, kBoth,
       "replay the first N requests to warm the cache, leaving them out of every figure (a running server)"},
      {"warmup-seconds", "warmup_seconds", &Scenario::warmup_seconds, Echo::if_changed, kBoth,
       "the same for the requests arriving in the first S seconds of the (rescaled) trace"},
      {"seed", "seed", &Scenario::seed, Echo::value, kAll | kForGenerate, "seed for workloads and conversation starts (default 1)"},
      {"format", "format", &Scenario::format, Echo::value, kAll | kForAnalyze,
       "trace format: auto, native, mooncake, bailian, kvcache-tester"},
      {"trace-block-size", "trace_block_size", &Scenario::trace_block_size, Echo::value, kAll | kForAnalyze,
       "tokens per trace hash id (default: 512 Mooncake, 16 Bailian, 64 kv-cache-tester)"},
      {"conversation-rate", "conversation_rate", &Scenario::conversation_rate, Echo::value, kAll,
       "kv-cache-tester conversations started per second (default 1)"},
      {"sort", "sort", &Scenario::sort, Echo::value, kAll | kForAnalyze,
       "accept a trace whose timestamps go backwards by sorting it (buffers the trace)"},
      {"mode", "mode", &Scenario::mode, Echo::value, kForReplay,
       "engine (default: discrete-event simulation) or cache (no time)"},
      {"policy", "policy", &Scenario::policy, Echo::value, kForReplay | kForPlan,
       "eviction policy, name[:key=value,...] (default lru = vLLM); belady, the offline one, in cache mode only "
       "(the trace is read into memory first to learn its future)"},
      {"block-size", "block_size", &Scenario::block_size, Echo::value, kAll | kForAnalyze | kForCatalog, "KV block size in tokens (default 16)"},
      {"replicas", "replicas", &Scenario::replicas, Echo::with_fleet, kForReplay,
       "engine mode: a fleet of N replicas of this server behind --router (default 1)"},
      {"replica-groups", "replica_groups", &Scenario::replica_groups, Echo::if_changed, kForReplay,
       "engine mode: a mixed fleet behind --router, groups of replicas on their own GPU and TP, "
       "\"GPU[:tp=N][:x=N];...\" (e.g. \"h100-sxm-80gb:tp=2:x=4;a100-80gb:tp=4:x=2\"; tp defaults to --tp, x "
       "(replicas) to 1); instead of --replicas"},
      {"router", "router", &Scenario::router, Echo::with_fleet, kForReplay | kForPlan,
       "with --replicas: which replica takes each request, name[:key=value,...]: round-robin (default), random, "
       "least-loaded, session, prefix, kv-aware, llm-d"},
      {"router-kv-lag-ms", "router_kv_lag_ms", &Scenario::router_kv_lag_ms, Echo::if_changed, kAll,
       "with --replicas: the replicas' KV events (block stored / removed) reach a prefix-aware router this many ms "
       "late, as llm-d's and Dynamo's do; 0 (default): it reads the caches as they are"},
      {"router-scrape-ms", "router_scrape_ms", &Scenario::router_scrape_ms, Echo::if_changed, kAll,
       "with --replicas: a router that reads the replicas' load from their metrics (llm-d, least-loaded) reads it as "
       "sampled every this many ms, as llm-d's scheduler scrapes vLLM's (50 ms by default there); 0 (default): live"},
      {"admission", "admission", &Scenario::admission, Echo::if_changed, kAll,
       "admission at the router: off (default), or saturation[:waiting=5,kv=0.8,queue=0]: while every replica has "
       "more than `waiting` requests waiting or more than `kv` of its KV pool in use (llm-d's saturation detector), "
       "a request waits in a router queue of `queue` requests, or is refused when it is full"},
      {"prefill-replicas", "prefill_replicas", &Scenario::prefill_replicas, Echo::if_changed, kBoth,
       "disaggregated prefill and decode: a prefill pool of N instances (with --decode-replicas); 0 (default): "
       "every replica serves both"},
      {"decode-replicas", "decode_replicas", &Scenario::decode_replicas, Echo::if_changed, kBoth,
       "disaggregated: the decode pool's instances"},
      {"prefill-gpu", "prefill_gpu", &Scenario::prefill_gpu, Echo::if_changed, kAll,
       "disaggregated: the prefill pool's GPU (default --gpu)"},
      {"decode-gpu", "decode_gpu", &Scenario::decode_gpu, Echo::if_changed, kAll,
       "disaggregated: the decode pool's GPU (default --gpu)"},
      {"prefill-tp", "prefill_tp", &Scenario::prefill_tp, Echo::if_changed, kBoth,
       "disaggregated: the prefill pool's tensor-parallel size (default --tp)"},
      {"decode-tp", "decode_tp", &Scenario::decode_tp, Echo::if_changed, kBoth,
       "disaggregated: the decode pool's tensor-parallel size (default --tp)"},
      {"prefill-router", "prefill_router", &Scenario::prefill_router, Echo::if_changed, kAll,
       "disaggregated: which prefill instance takes each request (a --router spec; default --router)"},
      {"decode-router", "decode_router", &Scenario::decode_router, Echo::if_changed, kAll,
       "disaggregated: which decode instance takes each request's KV (a --router spec; default least-loaded)"},
      {"disagg", "disagg", &Scenario::disagg, Echo::if_changed, kAll,
       "disaggregated: the serving design, vllm-nixl (default), dynamo or mooncake, "
       "[:first_token=prefill|decode,decode_pick=arrival|after,local_prefill=N,overlap=layerwise|none] "
       "(sim/fleet/disagg.h)"},
      {"kv-link-gbps", "kv_link_gbps", &Scenario::kv_link_gbps, Echo::if_changed, kAll,
       "disaggregated: KV transfer bandwidth per GPU and direction, GB/s (default 50: one 400 Gb/s NIC per GPU); "
       "an instance's NIC is this x its TP; transfers crossing a NIC at once share it; 0: infinitely fast"},
      {"kv-link-latency-us", "kv_link_latency_us", &Scenario::kv_link_latency_us, Echo::if_changed, kAll,
       "disaggregated: added to each KV transfer, microseconds (default 10)"},
      {"kv-fabric-gbps", "kv_fabric_gbps", &Scenario::kv_fabric_gbps, Echo::if_changed, kAll,
       "disaggregated: the fabric every transfer crosses, GB/s in all (default 0: no limit beyond the NICs)"},
      {"model", "model", &Scenario::model, Echo::value, kAll,
       "model from the catalog (default llama-3.1-8b; see prefixsim catalog)"},
      {"gpu", "gpu", &Scenario::gpu, Echo::value, kAll, "GPU from the catalog (default h100-sxm-80gb)"},
      {"gpu-mem-util", "gpu_mem_util", &Scenario::gpu_mem_util, Echo::value, kAll | kForCatalog,
       "fraction of GPU memory vLLM may use (default 0.9)"},
      {"tp", "tp", &Scenario::tp, Echo::value, kBoth | kForCatalog, "tensor-parallel size (default 1)"},
      {"enable-expert-parallel", "enable_expert_parallel", &Scenario::enable_expert_parallel, Echo::if_changed,
       kBoth,
       "MoE: split the routed experts over the replicas x TP ranks, the replicas being one data-parallel group "
       "(vLLM's --enable-expert-parallel with --data-parallel-size = --replicas). Not validated: vLLM's lockstep "
       "steps across the group are not modelled, and the one DP+EP run held is 16-23 % faster in the model than "
       "measured with it (12-17 % slower without)"},
      {"kv-blocks", "kv_blocks", &Scenario::kv_blocks, Echo::value, kForReplay,
       "KV pool size in blocks, null block included"},
      {"kv-tokens", "kv_tokens", &Scenario::kv_tokens, Echo::value, kForReplay, "KV pool capacity in tokens"},
      {"kv-gb", "kv_gb", &Scenario::kv_gb, Echo::value, kForReplay, "KV pool memory in GiB per GPU"},
      {"profile", "profile", &Scenario::profile, Echo::null_if_empty, kAll,
       "cost model (default: the step model fitted on real vLLM runs, see `prefixsim validate`): a step model "
       "from `prefixsim calibrate` (JSON), a per-GPU profile (JSON, or `builtin` for the one shipped for this "
       "model, GPU and TP; `prefixsim catalog` lists them), or `roofline` (datasheet peaks x assumed "
       "efficiencies, never fitted)"},
      {"kv-cache-dtype", "kv_cache_dtype", &Scenario::kv_cache_dtype, Echo::if_changed, kAll,
       "KV cache element type: auto (the model's dtype, default) or fp8 (half the bytes per block)"},
      {"model-file", "model_file", &Scenario::model_file, Echo::if_changed, kAll | kForCatalog,
       "YAML file of extra models in the built-in catalog's schema (sim/cost/catalog/models.yaml)"},
      {"gpu-file", "gpu_file", &Scenario::gpu_file, Echo::if_changed, kAll | kForCatalog,
       "YAML file of extra GPUs in the built-in catalog's schema"},
      {"kv-offloading-size", "kv_offloading_size", &Scenario::kv_offloading_size, Echo::if_changed, kForReplay,
       "KV offloading to CPU memory: GiB per replica summed over its TP ranks (vLLM's flag; inf: unbounded); "
       "an LRU tier below the GPU read and written at 50 GB/s (override with --kv-tier cpu:...)"},
      {"kv-tier", "kv_tiers", &Scenario::kv_tiers, Echo::if_changed, kAll,
       "more KV tiers below the GPU (and the CPU tier), looked up in order: NAME:size=GiB,read=GB/s[,write=GB/s]"
       "[,latency=us][,shared][,policy=lru][,store=compute|evict]; several separated by ';'"},
      {"max-num-seqs", "scheduler.max_num_seqs", &Scenario::max_num_seqs, Echo::value, kAll,
       "scheduler: max running requests (default 256)"},
      {"max-num-batched-tokens", "scheduler.max_num_batched_tokens", &Scenario::max_num_batched_tokens, Echo::value,
       kAll, "scheduler: token budget per step (default 8192)"},
      {"no-chunked-prefill", "scheduler.enable_chunked_prefill", &Scenario::enable_chunked_prefill, Echo::value, kAll,
       "scheduler: admit whole prompts only", false},
      {"long-prefill-token-threshold", "scheduler.long_prefill_token_threshold",
       &Scenario::long_prefill_token_threshold, Echo::value, kAll,
       "scheduler: cap on a prefill chunk (default 0 = off)"},
      {"no-async-scheduling", "scheduler.async_scheduling", &Scenario::async_scheduling, Echo::value, kBoth,
       "scheduler: vLLM's synchronous loop (schedule, run, apply) instead of its default async scheduling, which "
       "schedules step k+1 while step k runs (finishes and frees land a step later)",
       false},
      {"cudagraph-mode", "cudagraph_mode", &Scenario::cudagraph_mode, Echo::value, kBoth,
       "vLLM CUDA graphs: full_and_piecewise (default: decode batches padded to capture sizes, mixed ones too), "
       "full_decode_only, piecewise, or none (--enforce-eager: no padding)"},
      {"host-overhead-per-seq-us", "timing.host_per_seq_us", &Scenario::host_per_seq_us, Echo::value, kBoth,
       "engine-core CPU time per scheduled sequence per step, microseconds (default: the cost model's)"},
      {"request-overhead-ms", "timing.request_overhead_ms", &Scenario::request_overhead_ms, Echo::value, kBoth,
       "per request outside the engine core (HTTP, IPC, detokenization), added to TTFT and e2e (default: the "
       "cost model's)"},
      {"tokenize-us-per-token", "timing.tokenize_us_per_token", &Scenario::tokenize_us_per_token, Echo::value, kBoth,
       "tokenization time per prompt token, microseconds, added to TTFT and e2e (default: the cost model's)"},
      {"series-interval", "series_interval_s", &Scenario::series_interval_s, Echo::value, kForReplay,
       "time-series interval in seconds (default 1; coarsened for long runs)"},
      {"check-invariants", "check_invariants", &Scenario::check_invariants, Echo::never, kAll,
       "verify the block pool's invariants after every step (slow)"},
      {"out", "out", &Scenario::out, Echo::never, kAll | kForAnalyze, "output directory (default prefixsim-out)"},
  };
  return table;
}

template <typename T> struct Unwrap { using type = T; };
template <typename T> struct Unwrap<std::optional<T>> { using type = T; };

template <typename T>
const char* expected_text() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (std::is_same_v<T, bool>) return "true or false";
  else if constexpr (std::is_same_v<T, double>) return "a number";
  else if constexpr (std::is_unsigned_v<T>) return "a non-negative integer";
  else return "an integer";
}

void apply_yaml_value(const YamlReader& y, const ScenarioOption& o, const YAML::Node& v, Scenario& s) {
  std::visit(
      [&](auto member) {
        using T = typename Unwrap<std::remove_reference_t<decltype(s.*member)>>::type;
        s.*member = y.get<T>(v, o.key, expected_text<T>());
      },
      o.field);
}

// The row whose YAML key is `key` ("scheduler.max_num_seqs" for a nested one).
const ScenarioOption* find_key(const std::string& key) {
  for (const ScenarioOption& o : scenario_options())
    if (key == o.key) return &o;
  return nullptr;
}

bool is_kv_size(const ScenarioOption& o) { return is_pool_size_key(o.key); }

}  // namespace

void add_scenario_options(po::options_description& opts, ScenarioCommand command) {
  for (const ScenarioOption& o : scenario_options()) {
    if (!(o.commands & command)) continue;
    std::visit(
        [&](auto member) {
          using T = typename Unwrap<std::remove_reference_t<decltype(Scenario{}.*member)>>::type;
          if constexpr (std::is_same_v<T, bool>) opts.add_options()(o.flag, o.help);
          else opts.add_options()(o.flag, po::value<T>(), o.help);
        },
        o.field);
  }
}

void apply_scenario_flags(const po::variables_map& vm, ScenarioCommand command, Scenario& s) {
  bool size_given = false;
  for (const ScenarioOption& o : scenario_options())
    size_given = size_given || ((o.commands & command) && is_kv_size(o) && vm.count(o.flag));
  if (size_given) s.kv_blocks.reset(), s.kv_tokens.reset(), s.kv_gb.reset();
  for (const ScenarioOption& o : scenario_options()) {
    if (!(o.commands & command) || !vm.count(o.flag)) continue;
    std::visit(
        [&](auto member) {
          using T = typename Unwrap<std::remove_reference_t<decltype(s.*member)>>::type;
          if constexpr (std::is_same_v<T, bool>) s.*member = o.switch_sets;
          else s.*member = vm[o.flag].template as<T>();
        },
        o.field);
  }
}

namespace {

// One top-level or dotted ("scheduler.x") key and its value.
void apply_key(const YamlReader& y, const std::string& key, const YAML::Node& k, const YAML::Node& v, Scenario& s) {
  const ScenarioOption* o = find_key(key);
  if (!o) y.fail(k, key, "unknown key");
  apply_yaml_value(y, *o, v, s);
  if (key == "trace" && s.trace.empty()) y.fail(v, key, "an empty path (leave the key out to replay the workload)");
  if (key == "workload") s.workload_given = true;
  if (key == "kv_cache_dtype" && s.kv_cache_dtype != "auto" && s.kv_cache_dtype != "fp8")
    y.fail(v, key, "must be auto or fp8");
}

}  // namespace

void apply_scenario_yaml(const YAML::Node& root, const std::string& path, Scenario& s) {
  const YamlReader y(path);
  if (!root.IsMap()) throw InputError(path, root.Mark().line + 1, "a scenario is a mapping of keys to values");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "scheduler") {  // the one nested mapping
      if (!v.IsMap()) y.fail(v, key, "expected a mapping");
      for (const auto& sub : v) apply_key(y, "scheduler." + sub.first.as<std::string>(), sub.first, sub.second, s);
      continue;
    }
    if (key.find('.') != std::string::npos) y.fail(kv.first, key, "unknown key");
    apply_key(y, key, kv.first, v, s);
  }
}

void load_scenario_yaml(const std::string& path, Scenario& s) {
  // Read with the input bounds, parsed strictly (one document, no key twice).
  const YAML::Node root = load_yaml_strict(read_whole_file(path, "scenario"), path);
  if (!root.IsMap()) throw InputError(path, 1, "a scenario is a mapping of keys to values");
  apply_scenario_yaml(root, path, s);
}

std::string scenario_key(const std::string& key) {
  if (find_key(key)) return key;
  if (key.find('.') == std::string::npos && find_key("scheduler." + key)) return "scheduler." + key;
  return "";
}

void apply_scenario_value(const std::string& path, long line, const std::string& key, const YAML::Node& value,
                          Scenario& s) {
  const YamlReader y(path, line);
  apply_key(y, key, value, value, s);
}

nlohmann::json scenario_value(const Scenario& s, const std::string& key) {
  const ScenarioOption* o = find_key(key);
  if (!o) throw InternalError("scenario_value: unknown key " + key);
  nlohmann::json x;
  std::visit(
      [&](auto member) {
        const auto& v = s.*member;
        if constexpr (requires { v.has_value(); }) x = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
        else x = v;
      },
      o->field);
  return x;
}

std::string scenario_key_of_flag(const std::string& flag) {
  for (const ScenarioOption& o : scenario_options())
    if (flag == o.flag) return o.key;
  return "";
}

bool is_pool_size_key(const std::string& key) { return key == "kv_blocks" || key == "kv_tokens" || key == "kv_gb"; }

namespace {
void validate_disagg(const Scenario& s) {
  auto bad = [](const std::string& flag, const std::string& msg) { throw InputError(flag + ": " + msg); };
  if (s.prefill_replicas < 0 || s.prefill_replicas > 4096) bad("--prefill-replicas", "must be in [0, 4096]");
  if (s.decode_replicas < 0 || s.decode_replicas > 4096) bad("--decode-replicas", "must be in [0, 4096]");
  const Scenario defaults;
  const bool pool_keys = s.prefill_gpu != defaults.prefill_gpu || s.decode_gpu != defaults.decode_gpu ||
                         s.prefill_tp != defaults.prefill_tp || s.decode_tp != defaults.decode_tp ||
                         s.prefill_router != defaults.prefill_router || s.decode_router != defaults.decode_router ||
                         s.disagg != defaults.disagg || s.kv_link_gbps != defaults.kv_link_gbps ||
                         s.kv_link_latency_us != defaults.kv_link_latency_us ||
                         s.kv_fabric_gbps != defaults.kv_fabric_gbps;
  if (!disaggregated(s)) {
    if (s.decode_replicas > 0) bad("--decode-replicas", "needs --prefill-replicas (disaggregated serving)");
    if (pool_keys) bad("--disagg", "the disaggregated settings need --prefill-replicas and --decode-replicas");
    return;
  }
  if (s.decode_replicas < 1) bad("--prefill-replicas", "needs --decode-replicas of at least 1");
  if (s.replicas != 1) bad("--replicas", "give --prefill-replicas and --decode-replicas instead (disaggregated)");
  if (s.mode != "engine") bad("--prefill-replicas", "disaggregated serving runs in engine mode");
  if (s.enable_expert_parallel) bad("--enable-expert-parallel", "not modelled with disaggregated serving");
  for (const auto& [flag, tp] : {std::pair{"--prefill-tp", s.prefill_tp}, std::pair{"--decode-tp", s.decode_tp}})
    if (tp < 0 || tp > 64) bad(flag, "must be in [1, 64] (0: --tp)");
  parse_disagg(s.disagg);
  if (!(s.kv_link_gbps >= 0 && s.kv_link_gbps < 1e6)) bad("--kv-link-gbps", "must be in [0, 1e6) GB/s");
  if (!(s.kv_fabric_gbps >= 0 && s.kv_fabric_gbps < 1e9)) bad("--kv-fabric-gbps", "must be in [0, 1e9) GB/s");
  if (!(s.kv_link_latency_us >= 0 && s.kv_link_latency_us < 1e9)) bad("--kv-link-latency-us", "must be in [0, 1e9) us");
}
}  // namespace

Scenario pool_scenario(const Scenario& s, bool prefill) {
  Scenario p = s;
  p.replicas = prefill ? s.prefill_replicas : s.decode_replicas;
  const std::string& gpu = prefill ? s.prefill_gpu : s.decode_gpu;
  const int32_t tp = prefill ? s.prefill_tp : s.decode_tp;
  if (!gpu.empty()) p.gpu = gpu;
  if (tp > 0) p.tp = tp;
  if (prefill && !s.prefill_router.empty()) p.router = s.prefill_router;
  if (!prefill) p.router = s.decode_router;
  p.prefill_replicas = 0;
  p.decode_replicas = 0;
  return p;
}

std::vector<ReplicaGroup> parse_replica_groups(const std::string& spec, int default_tp, const std::string& flag) {
  auto bad = [&](const std::string& msg) { throw InputError(flag + ": " + msg); };
  std::vector<ReplicaGroup> groups;
  int64_t total = 0;
  std::vector<std::string_view> parts;
  for (std::string_view rest = spec;;) {
    const size_t semi = rest.find(';');
    parts.push_back(trim(rest.substr(0, semi)));
    if (semi == std::string_view::npos) break;
    rest.remove_prefix(semi + 1);
  }
  for (const std::string_view part : parts) {
    if (part.empty()) bad("an empty group in '" + spec + "' (groups are GPU[:tp=N][:x=N], split by ';')");
    std::string text(part);
    // The form separates keys by ':'; --router's by ','. Both read.
    const size_t colon = text.find(':');
    if (colon != std::string::npos) std::replace(text.begin() + static_cast<std::ptrdiff_t>(colon) + 1, text.end(), ':', ',');
    ParsedSpec parsed = parse_spec(text, flag);
    if (parsed.name.empty()) bad("a group needs a GPU name: '" + std::string(part) + "'");
    SpecParams p(flag + " " + parsed.name, std::move(parsed.params));
    ReplicaGroup g;
    g.gpu = parsed.name;
    g.tp = static_cast<int>(p.get_double_in("tp", default_tp, 1, 64));
    g.count = static_cast<int32_t>(p.get_double_in("x", 1, 1, 4096));
    if (g.tp != p.get_double("tp", default_tp) || g.count != p.get_double("x", 1))
      bad("tp and x are whole numbers in '" + std::string(part) + "'");
    p.reject_unused();
    total += g.count;
    groups.push_back(std::move(g));
  }
  if (groups.empty()) bad("no group in '" + spec + "'");
  if (total > 4096) bad("at most 4096 replicas in all, got " + std::to_string(total));
  return groups;
}

std::vector<Scenario> group_scenarios(const Scenario& s) {
  std::vector<Scenario> out;
  for (const ReplicaGroup& g : parse_replica_groups(s.replica_groups, s.tp)) {
    Scenario p = s;
    p.replica_groups.clear();
    p.replicas = g.count;
    p.gpu = g.gpu;
    p.tp = g.tp;
    out.push_back(std::move(p));
  }
  return out;
}

int32_t fleet_replicas(const Scenario& s) {
  if (!mixed_fleet(s)) return s.replicas;
  int32_t n = 0;
  for (const ReplicaGroup& g : parse_replica_groups(s.replica_groups, s.tp)) n += g.count;
  return n;
}

void validate(const Scenario& s) {
  auto bad = [](const std::string& flag, const std::string& msg) { throw InputError(flag + ": " + msg); };
  const std::pair<const char*, const std::string*> strings[] = {
      {"--trace", &s.trace}, {"--workload", &s.workload}, {"--format", &s.format}, {"--mode", &s.mode},
      {"--policy", &s.policy}, {"--router", &s.router}, {"--model", &s.model}, {"--gpu", &s.gpu}, {"--profile", &s.profile},
      {"--kv-tier", &s.kv_tiers}, {"--out", &s.out}};
  for (const auto& [flag, str] : strings)
    if (!valid_utf8(*str)) bad(flag, "must be valid UTF-8 (it goes into report.json)");
  if (s.kv_cache_dtype != "auto" && s.kv_cache_dtype != "fp8")
    bad("--kv-cache-dtype", "must be auto or fp8, not '" + s.kv_cache_dtype + "'");
  if (s.mode != "engine" && s.mode != "cache") bad("--mode", "must be engine or cache, not '" + s.mode + "'");
  if (s.block_size < 1 || s.block_size > 4096) bad("--block-size", "must be in [1, 4096]");
  if (s.trace_block_size < 0 || s.trace_block_size > (1 << 20)) bad("--trace-block-size", "must be in [1, 2^20]");
  if (s.requests && (*s.requests < 1 || *s.requests > (int64_t{1} << 40))) bad("--requests", "must be in [1, 2^40]");
  if (s.rate && !(*s.rate > 0 && *s.rate < 1e9)) bad("--rate", "must be in (0, 1e9) requests per second");
  if (s.time_scale && !(*s.time_scale > 0 && *s.time_scale <= 1e6)) bad("--time-scale", "must be in (0, 1e6]");
  if (s.time_scale && s.rate) bad("--time-scale", "give --rate or --time-scale, not both (both set the load)");
  if (s.time_scale && s.trace.empty())
    bad("--time-scale", "rescales a trace's arrivals; a workload takes --rate instead");
  if (s.warmup && *s.warmup < 0) bad("--warmup", "must be >= 0 requests");
  if (s.warmup_seconds && !(*s.warmup_seconds >= 0 && *s.warmup_seconds < 9.2e9)) bad("--warmup-seconds", "must be in [0, 9.2e9) seconds");
  if (s.warmup && s.warmup_seconds) bad("--warmup", "give --warmup or --warmup-seconds, not both");
  if (!(s.router_kv_lag_ms >= 0 && s.router_kv_lag_ms <= 3.6e6))
    bad("--router-kv-lag-ms", "must be in [0, 3600000] ms, got " + number_text(s.router_kv_lag_ms));
  if (!(s.router_scrape_ms >= 0 && s.router_scrape_ms <= 3.6e6))
    bad("--router-scrape-ms", "must be in [0, 3600000] ms, got " + number_text(s.router_scrape_ms));
  if (parse_admission(s.admission).enabled && s.mode == "cache")
    bad("--admission", "engine mode only (cache mode replays one request at a time: no load to shed)");
  validate_disagg(s);
  if (mixed_fleet(s)) {
    if (!valid_utf8(s.replica_groups)) bad("--replica-groups", "must be valid UTF-8 (it goes into report.json)");
    parse_replica_groups(s.replica_groups, s.tp);
    if (s.mode != "engine") bad("--replica-groups", "a fleet runs in engine mode");
    if (s.replicas != 1) bad("--replicas", "give each group's replicas in --replica-groups (x=N) instead");
    if (disaggregated(s)) bad("--replica-groups", "not with disaggregated pools (give --prefill-gpu/--decode-gpu)");
    if (s.enable_expert_parallel) bad("--enable-expert-parallel", "not modelled in a mixed fleet");
  }
  if (!(s.conversation_rate > 0 && s.conversation_rate < 1e9)) bad("--conversation-rate", "must be in (0, 1e9) conversations per second");
  if (!(s.gpu_mem_util > 0 && s.gpu_mem_util <= 1)) bad("--gpu-mem-util", "must be in (0, 1]");
  if (s.tp < 1 || s.tp > 64) bad("--tp", "must be in [1, 64]");
  if (s.replicas < 1 || s.replicas > 4096) bad("--replicas", "must be in [1, 4096]");
  if (s.replicas > 1 && s.mode != "engine")
    bad("--replicas", "a fleet runs in engine mode (cache mode replays one cache, with no time to route by)");
  const int sizes = (s.kv_blocks ? 1 : 0) + (s.kv_tokens ? 1 : 0) + (s.kv_gb ? 1 : 0);
  if (sizes > 1) bad("--kv-blocks/--kv-tokens/--kv-gb", "give at most one of them");
  if (s.max_num_seqs < 1 || s.max_num_seqs > 1 << 20) bad("--max-num-seqs", "must be in [1, 2^20]");
  if (s.max_num_batched_tokens < 1 || s.max_num_batched_tokens > int64_t{1} << 30)
    bad("--max-num-batched-tokens", "must be in [1, 2^30]");
  if (s.max_num_batched_tokens < s.max_num_seqs)
    bad("--max-num-batched-tokens", "must be at least --max-num-seqs (vLLM's config rule)");
  if (s.long_prefill_token_threshold < 0) bad("--long-prefill-token-threshold", "must be >= 0");
  parse_cuda_graph_mode(s.cudagraph_mode, "--cudagraph-mode");
  const std::pair<const char*, std::optional<double>> overheads[] = {{"--host-overhead-per-seq-us", s.host_per_seq_us},
                                                       {"--request-overhead-ms", s.request_overhead_ms},
                                                       {"--tokenize-us-per-token", s.tokenize_us_per_token}};
  for (const auto& [flag, x] : overheads)
    if (x && !(*x >= 0 && *x < 1e9)) bad(flag, "must be in [0, 1e9)");
  if (!(s.series_interval_s > 0 && s.series_interval_s < 1e9)) bad("--series-interval", "must be in (0, 1e9) seconds");
}

nlohmann::json to_json(const Scenario& s) {
  static const Scenario defaults;
  nlohmann::json j;
  for (const ScenarioOption& o : scenario_options()) {
    if (o.echo == Echo::never) continue;
    std::visit(
        [&](auto member) {
          const auto& v = s.*member;
          nlohmann::json x;
          if constexpr (requires { v.has_value(); }) x = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
          else x = v;
          if (o.echo == Echo::if_changed && v == defaults.*member) return;
          if (o.echo == Echo::with_fleet && s.replicas == 1 && !disaggregated(s) && !mixed_fleet(s)) return;
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, std::string>)
            if (o.echo == Echo::null_if_empty && v.empty()) x = nullptr;
          const std::string_view key = o.key;
          const size_t dot = key.find('.');
          if (dot == std::string_view::npos) j[std::string(key)] = std::move(x);
          else j[std::string(key.substr(0, dot))][std::string(key.substr(dot + 1))] = std::move(x);
        },
        o.field);
  }
  // A trace brings its own requests: the workload setting is not in play.
  if (!s.trace.empty()) j["workload"] = nullptr;
  // JSON has no infinity: an unbounded CPU tier is echoed as the flag takes it.
  if (s.kv_offloading_size && std::isinf(*s.kv_offloading_size)) j["kv_offloading_size"] = "inf";
  return j;
}

int kv_dtype_bytes(const Scenario& s) { return s.kv_cache_dtype == "fp8" ? 1 : 0; }

std::vector<std::string> scenario_input_files(const Scenario& s) {
  std::vector<std::string> files = {s.trace, s.workload, s.profile, s.model_file, s.gpu_file};
  if (const char* dir = std::getenv("PREFIXSIM_CATALOG"); dir && *dir)
    for (const char* name : {"/models.yaml", "/gpus.yaml"}) files.push_back(std::string(dir) + name);
  return files;
}

int expert_dp(const Scenario& s) { return s.enable_expert_parallel ? s.replicas : 1; }

}  // namespace prefixsim
