// `prefixsim replay`: what a capacity planner runs. A trace (or the built-in
// workload) in; report.json, series.csv, summary.md, metrics.prom and
// report.html out, from a simulation of a vLLM v1 server (engine mode) or a
// request-at-a-time replay through the same block manager (cache mode).
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "prefixsim_config.h"
#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/interrupt.h"
#include "sim/cli/backend_mode.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/scenario/replay_run.h"
#include "sim/scenario/scenario.h"

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

// The scenario of the flags over --config's.
Scenario replay_scenario(const po::variables_map& vm) {
  Scenario s;
  if (vm.count("trace") && vm["trace"].as<std::string>().empty())
    throw InputError("TRACE: an empty path (leave TRACE out to replay the built-in workload)");
  if (vm.count("config")) load_scenario_yaml(vm["config"].as<std::string>(), s);
  const bool config_trace = !s.trace.empty();
  apply_scenario_flags(vm, kForReplay, s);
  // A trace brings its own requests and times: workload settings given
  // with it would be silently ignored.
  if (!s.trace.empty() && (vm.count("workload") || (config_trace && s.workload_given)))
    throw InputError("--workload: give a trace or a workload, not both");
  return s;
}

// Outputs: refused before the run when they would replace something that is
// not a regular file, or one of the inputs.
void check_replay_outputs(const po::variables_map& vm, const Scenario& s) {
  std::vector<std::string> inputs = scenario_input_files(s);
  if (vm.count("config")) inputs.push_back(vm["config"].as<std::string>());
  check_output_set(s.out, run_output_names(), "--out", inputs);
  // A file written beside --out's (and renamed in with them).
  const auto check_beside = [&](const std::string& flag) {
    const std::string path = vm[flag].as<std::string>();
    check_output_file(path, "--" + flag);
    check_not_an_input(path, "--" + flag, inputs);
    // Before the run, not at the last rename: the outputs need not exist yet.
    for (const std::string& name : run_output_names())
      if (same_path(path, s.out + "/" + name))
        throw InputError("--" + flag + ": " + path + " is --out's " + name + "; write it elsewhere");
  };
  if (vm.count("shadow-samples")) {
    check_beside("shadow-samples");
    if (vm.count("steps-out") && same_path(vm["steps-out"].as<std::string>(), vm["shadow-samples"].as<std::string>()))
      throw InputError("--shadow-samples: the same file as --steps-out");
  }
  if (vm.count("steps-out")) {
    check_beside("steps-out");
    if (s.mode != "engine") throw InputError("--steps-out: only engine mode schedules steps (cache mode has none)");
    if (fleet_replicas(s) > 1) throw InputError("--steps-out: writes one replica's batches; run it with --replicas 1");
  }
}

// Writes the report (and the steps with it) and says so; the exit code.
int finish_replay(const po::variables_map& vm, const Scenario& s, ReplayRun& run, BackendHooks* hooks) {
  run.report.tool_version = PREFIXSIM_VERSION;
  std::vector<AtomicFile*> also;
  if (run.steps) also.push_back(&run.steps->file());
  if (hooks && hooks->samples()) also.push_back(hooks->samples());
  write_run_outputs(s.out, run.report, also);
  if (!vm.count("quiet")) {
    std::cout << render_terminal_summary(run.report);
    std::cout << "wrote " << s.out << "/{report.json,series.csv,summary.md,metrics.prom,report.html}\n";
  }
  if (hooks && hooks->check() && !hooks->check()->failure.empty()) {
    std::cerr << "prefixsim replay: backend check failed: " << hooks->check()->failure << "\n";
    return 1;
  }
  if (run.refused)
    std::cerr << "prefixsim replay: warning: " << run.refused
              << " request(s) can never fit the KV pool and were not replayed (counted in report.json "
                 "scenario.refused_requests); first: "
              << run.first_refusal << "\n";
  return 0;
}

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
  const ReplaySetup setup = prepare_replay(replay_scenario(vm));
  const Scenario& s = setup.scenario;
  ReplayRunOptions o;
  o.steps_every = vm["steps-every"].as<uint64_t>();
  check_replay_outputs(vm, s);
  const std::unique_ptr<gpu::Backend> backend = make_backend(vm, s, *setup.resolved.model, setup.kv.num_blocks);
  std::optional<BackendHooks> hooks;
  if (backend) o.backend = &hooks.emplace(*backend, setup, vm);
  if (o.steps_every < 1) throw InputError("--steps-every: must be at least 1");
  if (vm.count("steps-out")) o.steps_out = vm["steps-out"].as<std::string>();
  o.progress = !vm.count("quiet") && ::isatty(2);

  g_interrupt_requested.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, nullptr);
  try {
    ReplayRun run = run_replay(setup, o);
    return finish_replay(vm, s, run, hooks ? &*hooks : nullptr);
  } catch (const Interrupted&) {
    std::cerr << "prefixsim replay: interrupted: no report written\n";
    return 130;
  }
}

}  // namespace prefixsim::cli
