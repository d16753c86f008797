// `prefixsim replay`: what a capacity planner runs. A trace (or the built-in
// workload) in; report.json, series.csv, summary.md, metrics.prom and
// report.html out, from a simulation of a vLLM v1 server (engine mode) or a
// request-at-a-time replay through the same block manager (cache mode).
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "policies/registry.h"
#include "prefixsim_config.h"
#include "reports/outputs.h"
#include "sim/engine/cache_replay.h"
#include "sim/cost/catalog.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/replay_collector.h"
#include "sim/cli/scenario.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/base/error.h"
#include "sim/engine/ideal_hit.h"
#include "sim/cost/kv_sizing.h"
#include "sim/cost/profile.h"
#include "sim/cost/shipped_profiles.h"
#include "sim/cost/steps_file.h"
#include "traces/trace_reader.h"
#include "workloads/workload.h"

namespace prefixsim::cli {
namespace {

constexpr int64_t kDefaultWorkloadRequests = 2000;

// The first `limit` requests of a source (a slice of a long trace).
class LimitedSource final : public RequestSource {
 public:
  LimitedSource(RequestSource& inner, int64_t limit) : inner_(inner), left_(limit) {}
  bool next(Request& out) override { return left_-- > 0 && inner_.next(out); }
  std::string format() const override { return inner_.format(); }
  std::string origin() const override { return inner_.origin(); }

 private:
  RequestSource& inner_;
  int64_t left_;
};

void add_replay_options(po::options_description& o) {
  o.add_options()
      ("trace", po::value<std::string>(), "trace file (JSONL, .gz/.zst, kv-cache-tester folder or tar); "
                                          "default: the built-in workload")
      ("config", po::value<std::string>(), "scenario YAML; flags given here override it")
      ("workload", po::value<std::string>(), "workload preset or YAML when no trace is given (default chatbot)")
      ("requests", po::value<int64_t>(), "workload size (default 2000), or replay only the first N trace requests")
      ("rate", po::value<double>(), "workload arrival rate, requests/s")
      ("seed", po::value<uint64_t>(), "seed for workloads and conversation starts (default 1)")
      ("format", po::value<std::string>(), "trace format: auto, native, mooncake, kvcache-tester")
      ("trace-block-size", po::value<int32_t>(), "tokens per trace hash id (default: 512 Mooncake, 64 kv-cache-tester)")
      ("conversation-rate", po::value<double>(), "kv-cache-tester conversations started per second (default 1)")
      ("sort", "accept a trace whose timestamps go backwards by sorting it (buffers the trace)")
      ("mode", po::value<std::string>(), "engine (default: discrete-event simulation) or cache (no time)")
      ("policy", po::value<std::string>(), "eviction policy, name[:key=value,...] (default lru = vLLM)")
      ("block-size", po::value<int32_t>(), "KV block size in tokens (default 16)")
      ("kv-blocks", po::value<int64_t>(), "KV pool size in blocks, null block included")
      ("kv-tokens", po::value<int64_t>(), "KV pool capacity in tokens")
      ("kv-gb", po::value<double>(), "KV pool memory in GiB per GPU")
      ("model", po::value<std::string>(), "model from the catalog (default llama-3.1-8b; see prefixsim catalog)")
      ("gpu", po::value<std::string>(), "GPU from the catalog (default h100-sxm-80gb)")
      ("gpu-mem-util", po::value<double>(), "fraction of GPU memory vLLM may use (default 0.9)")
      ("tp", po::value<int>(), "tensor-parallel size (default 1)")
      ("kv-cache-dtype", po::value<std::string>(),
       "KV cache element type: auto (the model's dtype, default) or fp8 (half the bytes per block)")
      ("model-file", po::value<std::string>(),
       "YAML file of extra models in the built-in catalog's schema (sim/cost/catalog/models.yaml)")
      ("gpu-file", po::value<std::string>(), "YAML file of extra GPUs in the built-in catalog's schema")
      ("profile", po::value<std::string>(),
       "calibrated cost-model profile replacing the roofline: a JSON file, or `builtin` for the one shipped "
       "for this model, GPU and TP (`prefixsim catalog` lists them)")
      ("max-num-seqs", po::value<int64_t>(), "scheduler: max running requests (default 256)")
      ("max-num-batched-tokens", po::value<int64_t>(), "scheduler: token budget per step (default 8192)")
      ("no-chunked-prefill", "scheduler: admit whole prompts only")
      ("long-prefill-token-threshold", po::value<int64_t>(), "scheduler: cap on a prefill chunk (default 0 = off)")
      ("series-interval", po::value<double>(), "time-series interval in seconds (default 1; coarsened for long runs)")
      ("check-invariants", "verify the block pool's invariants after every step (slow)")
      ("steps-out", po::value<std::string>(),
       "engine mode: also write the scheduled batches (prefixsim.steps/1 CSV, one row per sequence) to this "
       "file, for timing on a GPU (prefixsim-gpu-bench --time-steps) and `prefixsim gpu validate`")
      ("steps-every", po::value<uint64_t>()->default_value(1), "with --steps-out: keep steps 1, 1+K, 1+2K, ...")
      ("out", po::value<std::string>(), "output directory (default prefixsim-out)")
      ("quiet", "print nothing on success");
}

void apply_flags(const po::variables_map& vm, Scenario& s) {
  auto str = [&](const char* k, std::string& dst) {
    if (vm.count(k)) dst = vm[k].as<std::string>();
  };
  str("trace", s.trace);
  str("workload", s.workload);
  str("format", s.format);
  str("mode", s.mode);
  str("policy", s.policy);
  str("model", s.model);
  str("gpu", s.gpu);
  str("profile", s.profile);
  str("kv-cache-dtype", s.kv_cache_dtype);
  str("model-file", s.model_file);
  str("gpu-file", s.gpu_file);
  str("out", s.out);
  if (vm.count("requests")) s.requests = vm["requests"].as<int64_t>();
  if (vm.count("rate")) s.rate = vm["rate"].as<double>();
  if (vm.count("seed")) s.seed = vm["seed"].as<uint64_t>();
  if (vm.count("trace-block-size")) s.trace_block_size = vm["trace-block-size"].as<int32_t>();
  if (vm.count("conversation-rate")) s.conversation_rate = vm["conversation-rate"].as<double>();
  if (vm.count("sort")) s.sort = true;
  if (vm.count("block-size")) s.block_size = vm["block-size"].as<int32_t>();
  // A size flag replaces whatever size the scenario file gave.
  if (vm.count("kv-blocks") || vm.count("kv-tokens") || vm.count("kv-gb")) {
    s.kv_blocks.reset();
    s.kv_tokens.reset();
    s.kv_gb.reset();
  }
  if (vm.count("kv-blocks")) s.kv_blocks = vm["kv-blocks"].as<int64_t>();
  if (vm.count("kv-tokens")) s.kv_tokens = vm["kv-tokens"].as<int64_t>();
  if (vm.count("kv-gb")) s.kv_gb = vm["kv-gb"].as<double>();
  if (vm.count("gpu-mem-util")) s.gpu_mem_util = vm["gpu-mem-util"].as<double>();
  if (vm.count("tp")) s.tp = vm["tp"].as<int>();
  if (vm.count("max-num-seqs")) s.max_num_seqs = vm["max-num-seqs"].as<int64_t>();
  if (vm.count("max-num-batched-tokens")) s.max_num_batched_tokens = vm["max-num-batched-tokens"].as<int64_t>();
  if (vm.count("no-chunked-prefill")) s.enable_chunked_prefill = false;
  if (vm.count("long-prefill-token-threshold"))
    s.long_prefill_token_threshold = vm["long-prefill-token-threshold"].as<int64_t>();
  if (vm.count("series-interval")) s.series_interval_s = vm["series-interval"].as<double>();
  if (vm.count("check-invariants")) s.check_invariants = true;
}

std::unique_ptr<RequestSource> open_input(const Scenario& s) {
  if (s.trace.empty()) {
    WorkloadOverrides o;
    o.requests = s.requests.value_or(kDefaultWorkloadRequests);
    o.rate = s.rate;
    o.seed = s.seed;
    return make_workload(s.workload, o);
  }
  TraceOptions t;
  t.format = s.format;
  t.trace_block_size = s.trace_block_size;
  t.conversation_rate = s.conversation_rate;
  t.seed = s.seed;
  t.sort = s.sort;
  return open_trace(s.trace, t);
}

extern "C" void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

int cmd_replay(const Args& args) {
  po::options_description opts("options");
  add_replay_options(opts);
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm,
                  "prefixsim replay [TRACE] [--config scenario.yaml] [--policy P] [--mode engine|cache]\n"
                  "                 [--block-size B] [--kv-blocks N | --kv-tokens N | --kv-gb G]\n"
                  "                 [--model M --gpu G --gpu-mem-util F --tp K] [--profile P] [--out DIR]",
                  "Replays a request trace against a vLLM-v1-exact prefix cache and reports hit rate and\n"
                  "TTFT. Engine mode (default) simulates a vLLM v1 server: FCFS scheduler with chunked\n"
                  "prefill and preemption, steps priced by a roofline cost model (or a calibrated\n"
                  "--profile). Cache mode replays each request alone (lookup, allocate, free): hit rates\n"
                  "only, no time. With no TRACE it replays the chatbot workload, 2,000 requests, on\n"
                  "llama-3.1-8b / h100-sxm-80gb. The KV pool is sized from the model and GPU like vLLM\n"
                  "does unless --kv-blocks/--kv-tokens/--kv-gb is given.\n\n"
                  "Writes report.json (prefixsim.report/1), series.csv, summary.md, metrics.prom (vLLM\n"
                  "metric names) and report.html to --out, each atomically. Ctrl-C stops the run and\n"
                  "writes nothing."))
    return 0;
  Scenario s;
  if (vm.count("trace") && vm["trace"].as<std::string>().empty())
    throw InputError("TRACE: an empty path (leave TRACE out to replay the built-in workload)");
  if (vm.count("config")) load_scenario_yaml(vm["config"].as<std::string>(), s);
  const bool config_trace = !s.trace.empty();
  apply_flags(vm, s);
  // A trace brings its own requests and times: workload settings given
  // with it would be silently ignored.
  if (!s.trace.empty()) {
    if (vm.count("workload") || (config_trace && s.workload_given))
      throw InputError("--workload: give a trace or a workload, not both");
    if (vm.count("rate") || s.rate)
      throw InputError("--rate: not supported with a trace (a trace's arrival times are replayed as recorded; "
                       "use a workload to choose a rate)");
  }
  validate(s);

  // Everything that can be refused is checked before the (long) run starts.
  if (!s.model_file.empty()) add_user_models(s.model_file);
  if (!s.gpu_file.empty()) add_user_gpus(s.gpu_file);
  const ModelSpec& model = find_model(s.model);
  const GpuSpec& gpu = find_gpu(s.gpu);
  KvSizingInput kin;
  kin.model = &model;
  kin.gpu = &gpu;
  kin.tp = s.tp;
  kin.block_size = s.block_size;
  kin.gpu_mem_util = s.gpu_mem_util;
  kin.max_num_batched_tokens = s.max_num_batched_tokens;
  kin.max_num_seqs = s.max_num_seqs;
  kin.kv_blocks = s.kv_blocks;
  kin.kv_tokens = s.kv_tokens;
  kin.kv_gb = s.kv_gb;
  kin.kv_dtype_bytes = kv_dtype_bytes(s);
  const KvSizing kv_size = size_kv_pool(kin);
  const uint64_t steps_every = vm["steps-every"].as<uint64_t>();
  // Outputs: refused before the run when they would replace something that
  // is not a regular file, or one of the inputs.
  {
    std::vector<std::string> inputs = {s.trace, s.profile, s.workload};
    if (vm.count("config")) inputs.push_back(vm["config"].as<std::string>());
    check_output_dir(s.out, "--out");
    for (const std::string& name : run_output_names()) {
      check_output_file(s.out + "/" + name, "--out");
      check_not_an_input(s.out + "/" + name, "--out", inputs);
    }
    if (vm.count("steps-out")) {
      check_output_file(vm["steps-out"].as<std::string>(), "--steps-out");
      check_not_an_input(vm["steps-out"].as<std::string>(), "--steps-out", inputs);
    }
  }
  if (vm.count("steps-out") && s.mode != "engine")
    throw InputError("--steps-out: only engine mode schedules steps (cache mode has none)");
  if (steps_every < 1) throw InputError("--steps-every: must be at least 1");
  std::optional<Profile> profile;
  if (!s.profile.empty()) profile = resolve_profile(s.profile, model.name, gpu.name, s.tp);
  PolicyContext pctx;
  pctx.block_size = s.block_size;
  auto policy = make_policy(s.policy, pctx);
  const std::string policy_name = canonical_policy_name(s.policy);

  auto input = open_input(s);
  std::unique_ptr<LimitedSource> limited;
  RequestSource* src = input.get();
  if (!s.trace.empty() && s.requests) {
    limited = std::make_unique<LimitedSource>(*input, *s.requests);
    src = limited.get();
  }
  IdealHitSource ideal(*src, s.block_size, s.mode == "cache");

  RunReport report;
  report.mode = s.mode;
  report.tool_version = PREFIXSIM_VERSION;
  report.scenario = to_json(s);
  report.scenario["policy_resolved"] = policy_name;
  report.scenario["kv_sizing"] = to_json(kv_size);
  report.scenario["model_spec"] = to_json(model);
  report.scenario["gpu_spec"] = to_json(gpu);
  report.trace.path = s.trace;
  report.trace.format = s.trace.empty() ? "workload:" + s.workload : input->format();
  report.kv_cache.block_size = static_cast<uint64_t>(kv_size.block_size);
  report.kv_cache.num_blocks = static_cast<uint64_t>(kv_size.num_blocks);
  report.kv_cache.bytes_per_block = static_cast<uint64_t>(kv_size.bytes_per_block);
  report.kv_cache.capacity_tokens = static_cast<uint64_t>(kv_size.capacity_tokens);

  g_interrupted.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, nullptr);
  uint64_t refused = 0;
  std::string first_refusal;
  std::unique_ptr<StepsWriter> steps;  // committed with the report, as one set
  try {
    if (s.mode == "cache") {
      const CacheReplayResult r = run_cache_replay(ideal, s.block_size, kv_size.num_blocks, std::move(policy),
                                                   s.check_invariants);
      if (g_interrupted.load()) throw Interrupted{};
      report.trace.requests = r.requests + r.refused_requests;
      report.trace.prompt_tokens = static_cast<uint64_t>(r.prompt_tokens + r.refused_prompt_tokens);
      report.trace.output_tokens = static_cast<uint64_t>(r.output_tokens);
      auto& pc = report.prefix_cache;
      pc.queried_tokens = static_cast<uint64_t>(r.prompt_tokens);
      pc.hit_tokens = static_cast<uint64_t>(r.hit_tokens);
      pc.hit_rate = r.prompt_tokens ? r.hit_rate : kNotAvailable;
      pc.block_hit_rate = r.queried_blocks ? r.block_hit_rate : kNotAvailable;
      pc.evictions = r.evictions;
      pc.lookups.requests = r.requests;
      pc.lookups.queries = static_cast<uint64_t>(r.prompt_tokens);
      pc.lookups.hits = static_cast<uint64_t>(r.hit_tokens);
      report.series_axis = "request";
      refused = r.refused_requests;
      if (refused) first_refusal = "a request needs more blocks than the whole pool";
    } else {
      BlockPool pool(static_cast<int32_t>(kv_size.num_blocks), true, std::move(policy));
      KvCacheManager kv(s.block_size, pool);
      CostModelOptions cost_options;
      cost_options.kv_dtype_bytes = kv_dtype_bytes(s);
      ModeledExecutor exec(model, gpu, s.tp, profile, cost_options);
      report.scenario["cost_model"] = exec.to_json();
      SchedulerConfig sc;
      sc.max_num_seqs = s.max_num_seqs;
      sc.max_num_batched_tokens = s.max_num_batched_tokens;
      sc.enable_chunked_prefill = s.enable_chunked_prefill;
      sc.long_prefill_token_threshold = s.long_prefill_token_threshold;
      Engine engine(sc, kv, exec);
      ReplayCollector collector(s.block_size, s.series_interval_s, !vm.count("quiet") && ::isatty(2));
      engine.set_observer(&collector);
      if (vm.count("steps-out")) {
        const std::string source = "prefixsim replay " + (s.trace.empty() ? "workload " + s.workload : s.trace) +
                                   ", policy " + policy_name + ", " + std::to_string(kv_size.num_blocks) +
                                   " blocks, " + model.name + " on " + gpu.name + " at TP " + std::to_string(s.tp) +
                                   ", every " + std::to_string(steps_every) + " step(s)";
        steps = std::make_unique<StepsWriter>(vm["steps-out"].as<std::string>(), model.name, s.tp, s.block_size,
                                              source);
        collector.record_steps(steps.get(), steps_every);
      }
      if (s.check_invariants) collector.check_pool(&pool);
      const EngineResult res = engine.run(ideal);
      if (steps) steps->file().finish();
      collector.fill(report, res);
      report.trace.requests = res.arrived;
      report.trace.prompt_tokens = static_cast<uint64_t>(ideal.prompt_tokens());
      report.trace.output_tokens = res.output_tokens;
      report.prefix_cache.evictions = pool.evictions();
      report.scenario["event_fingerprint"] = res.event_fingerprint;
      refused = res.refused;
      first_refusal = collector.first_refusal();
    }
  } catch (const Interrupted&) {
    std::cerr << "prefixsim replay: interrupted: no report written\n";
    return 130;
  }
  if (g_interrupted.load()) {
    std::cerr << "prefixsim replay: interrupted: no report written\n";
    return 130;
  }
  report.prefix_cache.ideal_hit_rate = ideal.valid() ? ideal.hit_rate() : kNotAvailable;
  if (!ideal.valid() && ideal.prompt_tokens() > 0)
    report.scenario["ideal_hit_rate_note"] = "not computed: the trace has more than " +
                                             std::to_string(IdealHitSource::kMaxDistinctBlocks) +
                                             " distinct blocks (bounded memory); prefixsim analyze computes it";
  report.scenario["refused_requests"] = refused;
  std::vector<AtomicFile*> also;
  if (steps) also.push_back(&steps->file());
  write_run_outputs(s.out, report, also);
  if (!vm.count("quiet")) {
    std::cout << render_terminal_summary(report);
    std::cout << "wrote " << s.out << "/{report.json,series.csv,summary.md,metrics.prom,report.html}\n";
  }
  if (refused)
    std::cerr << "prefixsim replay: warning: " << refused
              << " request(s) can never fit the KV pool and were not replayed (counted in report.json "
                 "scenario.refused_requests); first: "
              << first_refusal << "\n";
  return 0;
}

}  // namespace prefixsim::cli
