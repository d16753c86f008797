// `prefixsim plan TRACE --slo ttft_p99=2s,hit_rate>=0.5 --gpu G --model M`:
// the cheapest fleet meeting an SLO (sim/study/plan_run.h says how it is
// searched). Here: argv to PlanOptions, one run_plan, plan.json, plan.md
// (reports/plan_text.h) and plan.html written as one set, and the exit code
// (1 when no fleet meets the SLO).
#include <unistd.h>

#include <cmath>
#include <iostream>

#include "reports/outputs.h"
#include "reports/plan_text.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/fleet/router.h"
#include "sim/study/plan_run.h"

namespace prefixsim::cli {
namespace {

po::options_description plan_flags() {
  po::options_description opts("options");
  opts.add_options()
      ("slo", po::value<std::string>(), "the service level to meet: ttft_p99=2s[,hit_rate>=0.5,...] (see below)")
      ("tp", po::value<std::string>()->default_value("1,2,4,8"), "tensor-parallel sizes to try")
      ("prefill-tp", po::value<std::string>(), "split fleets: the prefill pool's TPs to try (default: --tp's)")
      ("decode-tp", po::value<std::string>(), "split fleets: the decode pool's TPs to try (default: --tp's)")
      ("replica-groups", po::value<std::string>(),
       "a mixed fleet of two groups, \"GPU[:tp=N];GPU[:tp=N]\": each group's count is searched (no x=)")
      ("max-replicas", po::value<int64_t>()->default_value(64), "the largest fleet to try per shape")
      ("routers", po::value<std::string>(), "also run these routers at the answer, to compare: a,b,...")
      ("gpu-cost", po::value<std::string>(), "price of one GPU-hour, or each GPU's: h100-sxm-80gb=2.99,a100-80gb=1.49 "
                                             "(default: the GPU catalog's cost_per_hour; without either, cost = number "
                                             "of GPUs)")
      ("threads", po::value<int>()->default_value(0), "runs at once: fleet shapes searched side by side, and a thread with no shape left runs the next counts of a doubling ahead (default: one per core)")
      ("full-runs", "run every fleet to the end (default: a run stops once a latency term of the SLO can no longer "
                    "hold, e.g. more than 1 % of the trace's requests already over a p99 bound; it fails either way, so "
                    "the answer is the same, but that run's figures are not measured)")
      ("quiet", "print nothing on success");
  for (const PlanDimension* d : plan_dimensions()) {
    opts.add_options()(d->flag, po::value<std::string>(), d->help);
    opts.add_options()(d->cost_flag, po::value<double>(),
                       (std::string("price of one ") + d->unit + "-hour of " + d->key + " (default 0)").c_str());
  }
  add_scenario_options(opts, kForPlan);
  return opts;
}

const char* const kUsage =
    "prefixsim plan TRACE --slo ttft_p99=2s[,hit_rate>=0.5] [--model M --gpu G] [--tp 1,2,4,8]\n"
    "               [--router R] [--routers a,b] [--gpu-cost C] [--requests N] [--out DIR]\n"
    "               [--prefill-tp 4,8 --decode-tp 8 --disagg D --kv-link-gbps G]\n"
    "               [--replica-groups \"h100-sxm-80gb:tp=1;a100-80gb:tp=2\"]";
const char* const kDescription =
    "Finds the cheapest fleet (replicas x TP) of --model on --gpu that meets the SLO when\n"
    "it serves TRACE, in engine mode: for every TP, the fewest replicas meeting it, by doubling\n"
    "(1, 2, 4, ...) then bisection, not a blind grid; each TP's answer is priced (--gpu-cost per\n"
    "GPU-hour, or the number of GPUs) and the cheapest wins. Prints the answer with its margin\n"
    "and the runs behind it (the answer meets the SLO; one replica fewer does not); writes\n"
    "plan.json, plan.md and plan.html to --out. Bisection assumes more replicas never hurt;\n"
    "a hit-rate bound can break that (a prefix-blind router spreads sessions thinner as the\n"
    "fleet grows): every violation seen among the runs is reported.\n\n"
    "Disaggregated serving: any of --disagg, --prefill-tp, --decode-tp, --prefill-gpu,\n"
    "--decode-gpu, --prefill-router, --decode-router, --kv-link-gbps, --kv-link-latency-us,\n"
    "--kv-fabric-gbps adds split fleets (every prefill TP x decode TP) to the aggregated ones:\n"
    "for each, doubling at 1:1 until a fleet meets the SLO, the fewest prefill instances by\n"
    "bisection, then the fewest decode instances, then along the staircase both ways (more\n"
    "prefill and fewer decode, fewer prefill and more decode) as far as a fleet could still\n"
    "cost less; --max-replicas bounds each pool.\n\n"
    "Mixed fleets: --replica-groups \"GPU[:tp=N];GPU[:tp=N]\" (two groups, tp default --tp)\n"
    "adds each group's server alone (an aggregated shape, where --gpu and --tp do not give it)\n"
    "and the two together behind --router, searched over each group's count as the split\n"
    "search does; each group is priced by its own GPU.\n\n"
    "SLO terms: ttft_mean, ttft_p50, ttft_p90, ttft_p99, queue_p99, e2e_p99, tpot_p50, tpot_p99\n"
    "with <= (or =) and a value in s or ms; hit_rate, block_hit_rate with >= (or =) and a\n"
    "fraction or a percentage;\n"
    "refusal_rate (requests not served: never fit, or shed by --admission) with <= (or =).\n"
    "--requests N (the first N requests) bounds a long trace's run time.";

std::vector<int> tp_list(const std::string& flag, const std::string& text) {
  std::vector<int> tps;
  for (int64_t tp : parse_positive_int_list(flag, text)) {
    if (tp > 64) throw InputError(flag + ": " + std::to_string(tp) + " is more than 64");
    tps.push_back(static_cast<int>(tp));
  }
  return tps;
}

// The flags that ask for split fleets: the search's own and the
// disaggregated scenario keys plan takes.
bool split_asked(const po::variables_map& vm) {
  for (const char* flag : {"prefill-tp", "decode-tp", "disagg", "prefill-gpu", "decode-gpu", "prefill-router",
                           "decode-router", "kv-link-gbps", "kv-link-latency-us", "kv-fabric-gbps"})
    if (vm.count(flag)) return true;
  return false;
}

// The search's flags: TPs, fleet size, routers, prices and dimensions.
void search_options(const po::variables_map& vm, PlanOptions& o) {
  o.tps = tp_list("--tp", vm["tp"].as<std::string>());
  o.tps_given = !vm["tp"].defaulted();
  if (split_asked(vm)) {
    const std::string all = vm["tp"].as<std::string>();
    o.prefill_tps = tp_list("--prefill-tp", vm.count("prefill-tp") ? vm["prefill-tp"].as<std::string>() : all);
    o.decode_tps = tp_list("--decode-tp", vm.count("decode-tp") ? vm["decode-tp"].as<std::string>() : all);
    o.split_tps_given = vm.count("prefill-tp") || vm.count("decode-tp") || o.tps_given;
  }
  if (vm.count("replica-groups")) o.mix = parse_plan_mix(vm["replica-groups"].as<std::string>(), o.base.tp);
  o.max_replicas = vm["max-replicas"].as<int64_t>();
  if (o.max_replicas < 1 || o.max_replicas > 4096) throw InputError("--max-replicas: must be in [1, 4096]");
  if (vm.count("routers")) {
    o.routers = parse_spec_list("--routers", vm["routers"].as<std::string>());
    for (const std::string& r : o.routers) make_router(r, RouterContext{});
  }
  make_router(o.base.router, RouterContext{});
  o.threads = resolve_threads(vm);
  o.full_runs = vm.count("full-runs") > 0;
  if (vm.count("gpu-cost")) parse_gpu_costs(vm["gpu-cost"].as<std::string>(), o);
  // Extra dimensions: their values (default: 0 only) and prices.
  for (const PlanDimension* d : plan_dimensions()) {
    const std::string flag = std::string("--") + d->flag;
    o.extra_values.push_back(vm.count(d->flag) ? parse_gib_list(flag, vm[d->flag].as<std::string>())
                                               : std::vector<double>{0});
    for (double v : o.extra_values.back())  // a priced dimension needs a finite size
      if (!std::isfinite(v)) throw InputError(flag + ": 'inf' has no price; give sizes in " + d->unit);
    o.extra_costs.push_back(vm.count(d->cost_flag) ? vm[d->cost_flag].as<double>() : 0);
    if (!(o.extra_costs.back() >= 0)) throw InputError(std::string("--") + d->cost_flag + ": must be >= 0");
  }
}

}  // namespace

int cmd_plan(const Args& args) {
  const po::options_description opts = plan_flags();
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, kUsage, kDescription)) return 0;
  if (!vm.count("trace")) throw InputError("plan: missing the TRACE argument (see prefixsim plan --help)");
  if (!vm.count("slo")) throw InputError("plan: --slo is required (e.g. --slo ttft_p99=2s)");
  PlanOptions o;
  o.slo = parse_slo(vm["slo"].as<std::string>());
  apply_scenario_flags(vm, kForPlan, o.base);
  o.base.mode = "engine";
  // Split fleets: the disaggregated settings are checked on one of each
  // pool; the search sets the counts (and clears them for aggregated shapes).
  if (split_asked(vm)) o.base.prefill_replicas = o.base.decode_replicas = 1;
  validate(o.base);
  search_options(vm, o);
  o.progress = !vm.count("quiet") && ::isatty(2);

  const std::string& dir = o.base.out;
  check_output_dir(dir, "--out");
  for (const char* name : {"/plan.json", "/plan.md", "/plan.html"}) {
    check_output_file(dir + name, "--out");
    check_not_an_input(dir + name, "--out", scenario_input_files(o.base));
  }
  const PlanResult r = run_plan(o);
  OutputSet out(dir, "--out");
  out.add("plan.json", r.plan.dump(2) + "\n");
  out.add("plan.md", render_plan_md(r.plan, o.base.router));
  out.add("plan.html", render_plan_html(nlohmann::json::parse(r.plan.dump())));
  out.commit();
  if (!vm.count("quiet")) std::cout << render_plan_terminal(r.plan) << "wrote " << dir << "/plan.{json,md,html}\n";
  return r.met ? 0 : 1;
}

}  // namespace prefixsim::cli
