// prefixsim generate: a synthetic workload (preset or YAML) -> native JSONL.
#include <iostream>

#include "sim/base/atomic_file.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"
#include "sim/scenario/scenario.h"
#include "traces/native_writer.h"
#include "workloads/workload.h"

namespace prefixsim::cli {

int cmd_generate(const Args& args) {
  po::options_description opts("options");
  // The workload, --requests, --rate and --seed as a run takes them (each
  // overrides the workload's own when given).
  add_scenario_options(opts, kForGenerate);
  opts.add_options()
      ("output,o", po::value<std::string>(), "output trace (native JSONL), or - for standard output")
      ("list", "list the built-in presets and exit")
      ("show", "print the workload's YAML (a preset's, with its documented parameters) and exit");
  po::positional_options_description pos;
  pos.add("workload", 1);
  po::variables_map vm;
  std::string presets;
  for (const auto& n : workloads::preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  if (!parse_args(args, opts, pos, vm,
                  "prefixsim generate PRESET|FILE.yaml [--requests N] [--rate R] [--seed S] -o trace.jsonl",
                  "Generates a synthetic workload as a native JSONL trace, deterministically: the same\n"
                  "workload and seed give byte-identical output. Presets: " + presets + ".\n"
                  "`--show PRESET` prints a preset's YAML, whose comments document every parameter;\n"
                  "copy and edit it to make your own workload (mixtures of presets with weights and\n"
                  "per-tenant salts included)."))
    return 0;
  if (vm.count("list")) {
    for (const auto& n : workloads::preset_names()) std::cout << n << "\n";
    return 0;
  }
  if (!vm.count("workload"))
    throw InputError("generate: missing the workload argument (a preset: " + presets + "; or a YAML file)");
  const std::string workload = vm["workload"].as<std::string>();
  if (vm.count("show")) {
    if (const std::string* t = workloads::preset_text(workload)) {
      std::cout << *t;
      return 0;
    }
    throw InputError("generate: --show takes a preset name (" + presets + ")");
  }
  Scenario s;
  apply_scenario_flags(vm, kForGenerate, s);
  validate(s);  // the table's ranges; its messages name the flag
  WorkloadOverrides o;
  o.requests = s.requests;
  o.rate = s.rate;
  if (vm.count("seed")) o.seed = s.seed;
  if (!vm.count("output")) throw InputError("generate: missing -o FILE (or -o - for standard output)");
  const std::string out = vm["output"].as<std::string>();

  if (out != "-") {
    check_output_file(out, "-o");
    check_not_an_input(out, "-o", {workload});
  }
  auto src = make_workload(workload, o);  // validates everything before any output exists
  if (out == "-") {
    write_native_jsonl(*src, std::cout);
    std::cout.flush();
    return 0;
  }
  AtomicFile f(out, "-o");
  const uint64_t n = write_native_jsonl(*src, f.stream());
  f.commit();
  std::cerr << "wrote " << n << " requests (" << src->format() << ") to " << out << "\n";
  return 0;
}

}  // namespace prefixsim::cli
