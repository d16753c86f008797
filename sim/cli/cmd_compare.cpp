// `prefixsim compare`: argv to run_compare (sim/study/compare_run.h) to the
// four documents (reports/compare_text.h, compare.html), written together.
#include <iostream>
#include <unistd.h>

#include "reports/compare_text.h"
#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/compare_lists.h"
#include "sim/cli/options.h"
#include "sim/scenario/scenario.h"
#include "sim/study/compare_run.h"

namespace prefixsim::cli {
namespace {

const char* const kUsage =
    "prefixsim compare TRACE --policies lru,lfu,... --kv-blocks N1,N2,... [--mode cache] [--out DIR]";
const char* const kDescription =
    "Replays one trace under every (policy, pool size) pair on the same vLLM-exact block\n"
    "manager and writes compare.json, compare.csv and compare.md into --out: hit rate in\n"
    "tokens and blocks, evictions, each policy's gap to the offline `belady`, and the\n"
    "hit-rate-vs-capacity curve of each policy. The trace is parsed and hashed once; the\n"
    "pairs run in parallel and the results do not depend on the thread count.\n"
    "Cache mode: each request alone in arrival order (lookup, prompt + output allocated,\n"
    "freed last block first); hit rate = hit tokens / prompt tokens. Engine mode: the\n"
    "discrete-event engine of `replay` (vLLM scheduler, cost model of --model on --gpu:\n"
    "the roofline, or --profile) per pair, adding TTFT p50/p99; hit rate counted at admission. Also writes\n"
    "compare.html (curves and tables, self-contained).\n"
    "Fleets (engine mode): --routers a,b --replicas n1,n2 run every pair on a fleet of each size\n"
    "behind each router, adding the load imbalance (max / mean requests per replica).";

po::options_description compare_flags() {
  po::options_description opts("options");
  opts.add_options()
      ("policies", po::value<std::string>()->default_value("all"),
       "comma-separated policies, name[:key=value,...] each, or 'all' (every registered policy)")
      ("kv-blocks", po::value<std::string>(), "pool sizes in blocks, null block included: N1,N2,...")
      ("kv-tokens", po::value<std::string>(), "pool capacities in tokens: T1,T2,... (rounded up to blocks)")
      ("kv-gb", po::value<std::string>(), "KV memory per GPU in GiB: G1,G2,... (with --model, --gpu, --tp)")
      ("mode", po::value<std::string>()->default_value("cache"),
       "cache (each request alone, no time) or engine (discrete-event engine: adds TTFT p50/p99)")
      ("routers", po::value<std::string>(),
       "engine mode: fleets behind each of these routers, name[:key=value,...] each (see replay --router)")
      ("replicas", po::value<std::string>(),
       "engine mode: fleet sizes N1,N2,...: every policy x size x router runs on a fleet of each (default 1)")
      ("kv-offloading-size", po::value<std::string>(),
       "CPU offloading sizes, GiB per replica: S1,S2,... (0: none, inf: unbounded; see replay "
       "--kv-offloading-size): every pair runs with each, reporting the GPU + CPU hit rate")
      ("threads", po::value<int>()->default_value(0), "worker threads (default: one per core)")
      ("quiet", "print nothing on success");
  // The settings replay takes too, from the same table: an engine pair is
  // the replay with the same flags.
  add_scenario_options(opts, kForCompare);
  return opts;
}


CompareOptions compare_options(const po::variables_map& vm) {
  CompareOptions o;
  const std::string mode = vm["mode"].as<std::string>();
  if (mode != "cache" && mode != "engine") throw InputError("--mode: '" + mode + "' is not a mode (cache or engine)");
  apply_scenario_flags(vm, kForCompare, o.scenario);
  o.scenario.mode = mode;
  auto given = [&](const char* flag) {
    return vm.count(flag) ? std::optional(vm[flag].as<std::string>()) : std::nullopt;
  };
  read_compare_lists({vm["policies"].as<std::string>(), given("kv-blocks"), given("kv-tokens"), given("kv-gb"),
                      given("routers"), given("replicas"), given("kv-offloading-size")},
                     o);
  o.threads = resolve_threads(vm);
  o.progress = !vm.count("quiet") && ::isatty(2);
  return o;
}

}  // namespace

int cmd_compare(const Args& args) {
  const po::options_description opts = compare_flags();
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, kUsage, kDescription)) return 0;
  if (!vm.count("trace")) throw InputError("compare: missing the TRACE argument (see prefixsim compare --help)");
  const CompareOptions options = compare_options(vm);
  const std::string& out_dir = options.scenario.out;
  // Outputs refused before the (long) run.
  check_output_set(out_dir, compare_output_names(), "--out", scenario_input_files(options.scenario));
  const CompareReport report = run_compare(options);
  write_compare_outputs(out_dir, report);
  if (!vm.count("quiet")) std::cout << render_compare_summary(report, out_dir);
  return 0;
}

}  // namespace prefixsim::cli
