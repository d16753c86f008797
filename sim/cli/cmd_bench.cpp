// `prefixsim bench`: runs the registered benchmarks several times and prints
// the median of every metric (and the spread), as a table or JSON.
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "policies/policy_bench.h"
#include "policies/registry.h"
#include "prefixsim_config.h"
#include "sim/base/bench.h"
#include "sim/kv/block_bench.h"
#include "sim/engine/engine_bench.h"
#include "traces/analysis_bench.h"
#include "traces/trace_bench.h"
#include "workloads/workload_bench.h"
#include "workloads/stream_bench.h"
#include "sim/cli/commands.h"
#include "sim/cli/replay_bench.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"

namespace prefixsim::cli {
namespace {

// Every room's benchmarks, in one list.
std::vector<BenchCase> all_bench_cases() {
  std::vector<BenchCase> all;
  auto add = [&all](std::vector<BenchCase> cs) {
    for (auto& c : cs) all.push_back(std::move(c));
  };
  add(block_bench_cases([] { return make_policy("lru"); }));
  add(engine_bench_cases([] { return make_policy("lru"); }));
  add(trace_bench_cases());
  add(policy_bench_cases());
  add(analysis_bench_cases());
  add(workload_bench_cases());
  add(stream_bench_cases([] { return make_policy("lru"); }));
  add(replay_bench_cases());
  return all;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int cmd_bench(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("names", po::value<std::vector<std::string>>(), "benchmarks to run (default: all)")
      ("repeat", po::value<int>()->default_value(5), "runs per benchmark; the median is reported")
      ("quick", "smaller inputs (a smoke run)")
      ("list", "list the benchmarks and exit")
      ("json", "print results as JSON")
      ("shared", po::value<std::string>()->default_value(std::string(PREFIXSIM_SOURCE_DIR) + "/../shared"),
       "the shared data folder (real traces, goldens)");
  po::positional_options_description pos;
  pos.add("names", -1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, "prefixsim bench [NAME...] [--repeat N] [--quick] [--json] [--list]",
                  "Runs benchmarks and prints the median of each metric over --repeat runs, with\n"
                  "the minimum and maximum beside it. Benchmarks that need ../shared data are skipped\n"
                  "when it is absent. Speed is measured here, never by timed tests."))
    return 0;
  const auto cases = all_bench_cases();
  if (vm.count("list")) {
    for (const auto& c : cases) std::cout << c.name << "\t" << c.description << "\n";
    return 0;
  }
  std::vector<std::string> names;
  if (vm.count("names")) names = vm["names"].as<std::vector<std::string>>();
  for (const auto& n : names)
    if (std::none_of(cases.begin(), cases.end(), [&](const BenchCase& c) { return c.name == n; }))
      throw InputError("bench: unknown benchmark '" + n + "' (see prefixsim bench --list)");
  const int repeat = vm["repeat"].as<int>();
  if (repeat < 1 || repeat > 1000) throw InputError("bench: --repeat must be in [1, 1000]");
  BenchOptions bo;
  bo.quick = vm.count("quick") > 0;
  bo.shared_dir = vm["shared"].as<std::string>();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : cases) {
    if (!names.empty() && std::find(names.begin(), names.end(), c.name) == names.end()) continue;
    std::map<std::string, std::vector<double>> values;
    std::map<std::string, std::string> units;
    std::vector<std::string> order;
    for (int i = 0; i < repeat; ++i) {
      for (const auto& m : c.run(bo)) {
        if (!values.count(m.name)) order.push_back(m.name);
        values[m.name].push_back(m.value);
        units[m.name] = m.unit;
      }
    }
    if (order.empty()) {
      if (!vm.count("json")) std::cout << c.name << ": skipped (its data is absent)\n";
      continue;
    }
    for (const auto& name : order) {
      const auto& v = values[name];
      const double med = median(v);
      const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
      if (vm.count("json")) {
        out.push_back({{"bench", c.name}, {"metric", name}, {"median", med}, {"min", lo}, {"max", hi},
                       {"unit", units[name]}, {"runs", v.size()}});
      } else {
        std::printf("%-16s %-28s %14.6g %-12s (min %.4g, max %.4g, %zu runs)\n", c.name.c_str(), name.c_str(), med,
                    units[name].c_str(), lo, hi, v.size());
      }
    }
    std::cout.flush();
  }
  if (vm.count("json")) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace prefixsim::cli
