// `prefixsim validate RUN...`: observed real runs replayed at their own
// settings, predicted latencies against measured (sim/study/validate.h).
#include <iostream>
#include <thread>

#include "reports/validate_report.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/scenario/scenario_fleet.h"
#include "sim/study/validate.h"

namespace prefixsim::cli {

int cmd_validate(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("run", po::value<std::vector<std::string>>(), "observed runs (files or capture folders)")
      ("profile", po::value<std::string>(), "step model to validate (from prefixsim calibrate; default: the shipped one)")
      ("max-error", po::value<std::string>(),
       "CI gate: exit 1 when a median |error| exceeds it: X for the TTFT, E2E and TPOT means, or METRIC=X,...")
      ("threads", po::value<int>()->default_value(0), "worker threads (default: one per core)")
      ("out", po::value<std::string>()->default_value("prefixsim-out"), "output directory")
      ("quiet", "print nothing on success");
  po::positional_options_description pos;
  pos.add("run", -1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, "prefixsim validate RUN... [--profile STEP_MODEL] [--max-error X] [--out DIR]",
                  "Replays each observed run of a real vLLM server (the workload as sent, at the server's own\n"
                  "settings: model, GPU, TP, replicas, scheduler limits, logged KV block count) under the step\n"
                  "model, and reports the signed and absolute error of TTFT, E2E and TPOT (mean, p50, p90,\n"
                  "p99 where measured) and throughput, per run and as medians over runs. Runs whose requests\n"
                  "failed are saturated: listed apart, not in the medians.\n\n"
                  "RUN: a BLIS run record (JSON), an LLMServingSim capture folder (meta.json,\n"
                  "requests.jsonl, workload.jsonl.gz), or a prefixsim.observed/1 file (sim/study/observed_run.h).\n"
                  "Writes validate.json, validate.md and validate.html to --out."))
    return 0;
  if (!vm.count("run")) throw InputError("validate: give at least one observed RUN");
  int threads = resolve_threads(vm);
  const std::string out = vm["out"].as<std::string>();
  check_output_dir(out, "--out");
  const StepModel model = vm.count("profile") ? read_step_model(vm["profile"].as<std::string>()) : default_step_model();
  const nlohmann::ordered_json doc = validate_runs(vm["run"].as<std::vector<std::string>>(), model, threads);
  std::vector<std::string> failures;
  if (vm.count("max-error")) failures = error_gate_failures(doc, vm["max-error"].as<std::string>());
  write_validate_outputs(out, doc, "prefixsim validate");
  if (!vm.count("quiet") || !failures.empty()) std::cout << render_validate_terminal(doc);
  for (const std::string& f : failures) std::cout << "max-error exceeded: " << f << "\n";
  return failures.empty() ? 0 : 1;
}

}  // namespace prefixsim::cli
