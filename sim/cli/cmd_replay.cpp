// `prefixsim replay`: what a capacity planner runs. A trace (or the built-in
// workload) in; report.json, series.csv, summary.md, metrics.prom and
// report.html out, from a simulation of a vLLM v1 server (engine mode) or a
// request-at-a-time replay through the same block manager (cache mode).
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include "policies/registry.h"
#include "prefixsim_config.h"
#include "reports/outputs.h"
#include "sim/engine/cache_replay.h"
#include "sim/cost/catalog.h"
#include "sim/cli/backend_mode.h"
#include "sim/cli/commands.h"
#include "sim/scenario/offline_future.h"
#include "sim/cli/options.h"
#include "sim/scenario/replay_collector.h"
#include "sim/scenario/run_memory.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_run.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/base/error.h"
#include "sim/engine/ideal_hit.h"
#include "sim/cost/kv_sizing.h"
#include "sim/cost/profile.h"
#include "sim/cost/shipped_profiles.h"
#include "sim/cost/steps_file.h"
#include "traces/trace_checksum.h"
#include "workloads/workload.h"

namespace prefixsim::cli {
namespace {

void add_replay_options(po::options_description& o) {
  add_scenario_options(o, kForReplay);
  o.add_options()
      ("config", po::value<std::string>(), "scenario YAML; flags given here override it")
      ("steps-out", po::value<std::string>(),
       "engine mode: also write the scheduled batches (prefixsim.steps/1 CSV, one row per sequence) to this "
       "file, for timing on a GPU (prefixsim-gpu-bench --time-steps) and `prefixsim gpu validate`")
      ("steps-every", po::value<uint64_t>()->default_value(1), "with --steps-out: keep steps 1, 1+K, 1+2K, ...")
      ("quiet", "print nothing on success");
  add_backend_options(o);
}

extern "C" void on_sigint(int) { g_interrupt_requested.store(true); }

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
                  "                 [--model M --gpu G --gpu-mem-util F --tp K] [--profile P]\n"
                  "                 [--replicas N --router R] [--out DIR]",
                  "Replays a request trace against a vLLM-v1-exact prefix cache and reports hit rate and\n"
                  "TTFT. Engine mode (default) simulates a vLLM v1 server: FCFS scheduler with chunked\n"
                  "prefill and preemption, steps priced by a roofline cost model (or a calibrated\n"
                  "--profile). Cache mode replays each request alone (lookup, allocate, free): hit rates\n"
                  "only, no time. With no TRACE it replays the chatbot workload, 2,000 requests, on\n"
                  "llama-3.1-8b / h100-sxm-80gb. The KV pool is sized from the model and GPU like vLLM\n"
                  "does unless --kv-blocks/--kv-tokens/--kv-gb is given. --replicas N simulates a fleet\n"
                  "of N such servers on one clock behind --router (round-robin, random, least-loaded,\n"
                  "session, prefix, kv-aware, llm-d), each request routed once at its arrival.\n\n"
                  "Writes report.json (prefixsim.report/1), series.csv, summary.md, metrics.prom (vLLM\n"
                  "metric names) and report.html to --out, each atomically. Ctrl-C stops the run and\n"
                  "writes nothing."))
    return 0;
  Scenario s;
  if (vm.count("trace") && vm["trace"].as<std::string>().empty())
    throw InputError("TRACE: an empty path (leave TRACE out to replay the built-in workload)");
  if (vm.count("config")) load_scenario_yaml(vm["config"].as<std::string>(), s);
  const bool config_trace = !s.trace.empty();
  apply_scenario_flags(vm, kForReplay, s);
  // A trace brings its own requests and times: workload settings given
  // with it would be silently ignored.
  if (!s.trace.empty()) {
    if (vm.count("workload") || (config_trace && s.workload_given))
      throw InputError("--workload: give a trace or a workload, not both");
  }
  validate(s);

  // Everything that can be refused is checked before the (long) run starts.
  const ResolvedScenario resolved = resolve_scenario(s);
  const ModelSpec& model = *resolved.model;
  const GpuSpec& gpu = *resolved.gpu;
  const KvSizing kv_size = size_kv_pool(kv_sizing_input(s, resolved));
  const std::vector<TierSpec> tier_specs = scenario_tiers(s, model);
  check_run_fits_memory(run_blocks(s, kv_size, tier_specs), "--replicas");
  const uint64_t steps_every = vm["steps-every"].as<uint64_t>();
  const std::unique_ptr<gpu::Backend> backend = make_backend(vm, s, model, kv_size.num_blocks);
  std::optional<gpu::BackendCheckResult> backend_check;
  // Outputs: refused before the run when they would replace something that
  // is not a regular file, or one of the inputs.
  {
    std::vector<std::string> inputs = scenario_input_files(s);
    if (vm.count("config")) inputs.push_back(vm["config"].as<std::string>());
    check_output_dir(s.out, "--out");
    for (const std::string& name : run_output_names()) {
      check_output_file(s.out + "/" + name, "--out");
      check_not_an_input(s.out + "/" + name, "--out", inputs);
    }
    if (vm.count("steps-out")) {
      const std::string steps_path = vm["steps-out"].as<std::string>();
      check_output_file(steps_path, "--steps-out");
      check_not_an_input(steps_path, "--steps-out", inputs);
      // Before the run, not at the last rename: the outputs need not exist yet.
      for (const std::string& name : run_output_names())
        if (same_path(steps_path, s.out + "/" + name))
          throw InputError("--steps-out: " + steps_path + " is --out's " + name + "; write the steps elsewhere");
    }
  }
  if (vm.count("steps-out") && s.mode != "engine")
    throw InputError("--steps-out: only engine mode schedules steps (cache mode has none)");
  if (vm.count("steps-out") && s.replicas > 1)
    throw InputError("--steps-out: writes one replica's batches; run it with --replicas 1");
  if (steps_every < 1) throw InputError("--steps-every: must be at least 1");
  PolicyContext pctx;
  pctx.block_size = s.block_size;
  // belady: checked now against an empty future, made after the pre-pass.
  const bool offline = needs_future(s.policy);
  if (offline && s.mode != "cache") refuse_future_in_engine_mode("--policy");
  if (offline) pctx.future = no_future();
  auto policy = make_policy(s.policy, pctx);
  const std::string policy_name = canonical_policy_name(s.policy);

  const WarmupSource* warmup = nullptr;
  auto input = open_scenario_input(s, resolved, &warmup);
  IdealHitSource ideal(*input, s.block_size, s.mode == "cache");

  RunReport report;
  report.mode = s.mode;
  report.tool_version = PREFIXSIM_VERSION;
  report.scenario = to_json(s);
  report.scenario["policy_resolved"] = policy_name;
  report.scenario["kv_sizing"] = to_json(kv_size);
  report.scenario["model_spec"] = to_json(model);
  report.scenario["gpu_spec"] = to_json(gpu);
  report.trace.path = s.trace;
  if (!s.trace.empty()) report.trace.checksum = trace_checksum(s.trace);
  report.trace.format = s.trace.empty() ? "workload:" + s.workload : input->format();
  report.kv_cache.block_size = static_cast<uint64_t>(kv_size.block_size);
  report.kv_cache.num_blocks = static_cast<uint64_t>(kv_size.num_blocks);
  report.kv_cache.bytes_per_block = static_cast<uint64_t>(kv_size.bytes_per_block);
  report.kv_cache.capacity_tokens = static_cast<uint64_t>(kv_size.capacity_tokens);

  g_interrupt_requested.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, nullptr);
  uint64_t refused = 0;
  std::string first_refusal;
  std::unique_ptr<StepsWriter> steps;  // committed with the report, as one set
  try {
    if (s.mode == "cache") {
      CacheSeriesCollector collector(!vm.count("quiet") && ::isatty(2));
      const CacheReplayHook hook = [&](const CacheReplayer& rep) { return collector.after_request(rep); };
      CacheReplayResult r;
      FleetTiers tiers;
      if (offline) {  // the trace read ahead (as compare reads it), then replayed from memory
        const PreparedTrace trace = prepass(ideal, s.block_size, true, pctx);
        tiers = FleetTiers(tier_specs, 1, std::max<uint32_t>(trace.num_keys(), 1), s.block_size);
        r = run_cache_replay(trace, kv_size.num_blocks, make_policy(s.policy, pctx), s.check_invariants, hook,
                             tiers.stack(0));
      } else {
        tiers = FleetTiers(tier_specs, 1, 0, s.block_size);
        ideal.defer();  // accounted after each lookup: the pool's hits are not probed again
        r = run_cache_replay(ideal, s.block_size, kv_size.num_blocks, std::move(policy), s.check_invariants, hook,
                             tiers.stack(0), &ideal);
      }
      report.tiers = tiers.report();
      throw_if_interrupted();
      collector.fill(report);
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
      if (!report.tiers.empty()) {
        pc.tier_hit_tokens = static_cast<uint64_t>(r.tier_hit_tokens);
        pc.hit_rate_with_tiers =
            r.prompt_tokens ? static_cast<double>(r.hit_tokens + r.tier_hit_tokens) / static_cast<double>(r.prompt_tokens)
                            : kNotAvailable;
      }
      report.series_axis = "request";
      refused = r.refused_requests;
      if (refused) first_refusal = "a request needs more blocks than the whole pool";
    } else {
      const ExecutorWrap wrap = backend ? backend_wrap(*backend) : ExecutorWrap{};
      Fleet fleet(s, resolved, kv_size.num_blocks, s.policy, pctx, backend ? &wrap : nullptr);
      report.scenario["cost_model"] = fleet.replicas[0]->exec.to_json();
      ReplayCollector collector(s.block_size, s.series_interval_s, !vm.count("quiet") && ::isatty(2),
                                static_cast<uint32_t>(s.replicas));
      fleet.set_observer(&collector);
      fleet.add_tiers(tier_specs);
      if (backend) listen_to_tiers(*backend, fleet);
      collector.set_tiers(!tier_specs.empty());
      if (vm.count("steps-out")) {
        const std::string source = "prefixsim replay " + (s.trace.empty() ? "workload " + s.workload : s.trace) +
                                   ", policy " + policy_name + ", " + std::to_string(kv_size.num_blocks) +
                                   " blocks, " + model.name + " on " + gpu.name + " at TP " + std::to_string(s.tp) +
                                   ", every " + std::to_string(steps_every) + " step(s)";
        // Steps inside --out: make --out now (the report makes it at the end).
        const std::filesystem::path steps_dir = std::filesystem::path(vm["steps-out"].as<std::string>()).parent_path();
        if (!steps_dir.empty() && !std::filesystem::exists(steps_dir) && same_path(steps_dir.string(), s.out))
          std::filesystem::create_directories(steps_dir);
        steps = std::make_unique<StepsWriter>(vm["steps-out"].as<std::string>(), model.name, s.tp, s.block_size,
                                              source);
        collector.record_steps(steps.get(), steps_every);
      }
      if (s.check_invariants) {
        std::vector<const BlockPool*> pools;
        for (const auto& r : fleet.replicas) pools.push_back(&r->pool);
        collector.check_pools(std::move(pools));
      }
      const FleetResult fres = fleet.run(ideal);
      const EngineResult& res = fres.total;
      if (steps) steps->file().finish();
      collector.fill(report, res);
      report.timed->load.time_scale = resolved.time_scale;
      // With a warm-up, the trace section describes the counted requests
      // (run.warmup_requests says how many more were replayed first).
      report.trace.requests = res.arrived - (warmup ? warmup->marked() : 0);
      report.trace.prompt_tokens = static_cast<uint64_t>(ideal.prompt_tokens());
      report.trace.output_tokens = warmup ? collector.counted_output_tokens() : res.output_tokens;
      std::vector<uint64_t> evictions;
      for (const auto& r : fleet.replicas) evictions.push_back(r->pool.evictions());
      report.prefix_cache.evictions = 0;
      for (uint64_t e : evictions) report.prefix_cache.evictions += e;
      collector.fill_fleet(report, fres.replicas, evictions);
      report.router_view = fleet.router_view_report();
      report.tiers = fleet.tiers.report();
      if (s.check_invariants) {
        const std::string broken = fleet.tiers.check_invariants();
        if (!broken.empty()) throw InternalError("kv tier invariant violated: " + broken);
      }
      report.run.event_fingerprint = res.event_fingerprint;
      if (backend) backend_check = finish_backend(*backend, s, resolved, kv_size.num_blocks, pctx, report);
      refused = res.refused;
      first_refusal = collector.first_refusal();
    }
  } catch (const Interrupted&) {
    std::cerr << "prefixsim replay: interrupted: no report written\n";
    return 130;
  }
  if (interrupt_requested()) {
    std::cerr << "prefixsim replay: interrupted: no report written\n";
    return 130;
  }
  report.prefix_cache.ideal_hit_rate = ideal.valid() ? ideal.hit_rate() : kNotAvailable;
  if (!ideal.valid() && ideal.prompt_tokens() > 0)
    report.run.notes.push_back("ideal hit rate not computed: the trace has more than " +
                                             std::to_string(IdealHitSource::kMaxDistinctBlocks) +
                                             " distinct blocks (bounded memory); prefixsim analyze computes it");
  report.run.refused_requests = refused;
  if (warmup) {
    report.run.warmup_requests = warmup->marked();
    char span[64];
    std::snprintf(span, sizeof span, "%.3f", warmup->marked_span_s());
    report.run.notes.push_back("warm-up: the first " + std::to_string(warmup->marked()) +
                               " requests (arrivals up to " + span +
                               " s after the first) warmed the cache and are left out of every figure");
  }
  std::vector<AtomicFile*> also;
  if (steps) also.push_back(&steps->file());
  write_run_outputs(s.out, report, also);
  if (!vm.count("quiet")) {
    std::cout << render_terminal_summary(report);
    std::cout << "wrote " << s.out << "/{report.json,series.csv,summary.md,metrics.prom,report.html}\n";
  }
  if (backend_check && !backend_check->failure.empty()) {
    std::cerr << "prefixsim replay: backend check failed: " << backend_check->failure << "\n";
    return 1;
  }
  if (refused)
    std::cerr << "prefixsim replay: warning: " << refused
              << " request(s) can never fit the KV pool and were not replayed (counted in report.json "
                 "scenario.refused_requests); first: "
              << first_refusal << "\n";
  return 0;
}

}  // namespace prefixsim::cli
