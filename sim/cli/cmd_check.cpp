// prefixsim check: the CI gate. Compares a report.json with a committed
// baseline (reports/check.h has the logic and the baseline format).
#include <filesystem>
#include <iostream>

#include "reports/check.h"
#include "sim/base/atomic_file.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"

namespace prefixsim::cli {

namespace {

std::string metrics_help() {
  std::string s = "metrics, their report.json field, direction and default tolerance:\n";
  for (const CheckMetricDef& m : check_metrics()) {
    std::string line = std::string("  ") + m.name;
    line.resize(24, ' ');
    line += m.field;
    line.resize(58, ' ');
    line += m.higher_is_better ? "lower is worse   " : "higher is worse  ";
    line += m.default_tolerance.text();
    s += line + "\n";
  }
  return s;
}

// A report checked against itself proves nothing, and an update would
// destroy it; the files written are refused when they are not regular files
// or are the inputs.
void check_gate_files(const po::variables_map& vm, const std::string& report_path, const std::string& baseline_path,
                      bool update) {
  {
    std::error_code ec;
    if (report_path == baseline_path || std::filesystem::equivalent(report_path, baseline_path, ec))
      throw InputError("--baseline: '" + baseline_path + "' is the report itself; a baseline is a separate file "
                       "(create one with --baseline baseline.json --update-baseline)");
  }
  if (update) {
    check_output_file(baseline_path, "--baseline");
    check_not_an_input(baseline_path, "--baseline", {report_path});
  }
  if (vm.count("junit")) {
    check_output_file(vm["junit"].as<std::string>(), "--junit");
    check_not_an_input(vm["junit"].as<std::string>(), "--junit", {report_path, baseline_path});
  }
}

}  // namespace

int cmd_check(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("report", po::value<std::string>(), "report.json of the run to check")
      ("baseline", po::value<std::string>(), "baseline: a report.json or a prefixsim.baseline/1 file (required)")
      ("tolerance", po::value<std::vector<std::string>>()->composing(),
       "per-metric tolerances, METRIC=ABS or METRIC=REL% (e.g. hit_rate=0.005,ttft_p99=5%); repeatable")
      ("junit", po::value<std::string>(), "also write the verdicts as JUnit XML to this file")
      ("update-baseline", "write REPORT's metrics as the new baseline (to --baseline) and exit 0")
      ("allow-scenario-change",
       "check a report of another serving setup than the baseline's (mode, model, GPU, TP, pool, policy) "
       "with a warning instead of exit 2");
  po::positional_options_description pos;
  pos.add("report", 1);
  po::variables_map vm;
  const std::string usage =
      "prefixsim check REPORT --baseline BASE.json [--tolerance M=V[%],...] [--junit FILE] [--update-baseline]";
  if (!parse_args(args, opts, pos, vm, usage,
                  "Compares the metrics that matter in REPORT (a report.json written by replay) with\n"
                  "a baseline and prints a table: metric | baseline -> now | delta | tolerance | verdict.\n"
                  "A metric regresses when it moved in its worse direction by more than its tolerance:\n"
                  "absolute in the metric's unit, or relative (%) to the baseline value.\n\n" +
                      metrics_help() +
                      "\nA baseline may be a full report.json or a small prefixsim.baseline/1 file, whose\n"
                      "\"tolerances\" (optional) override the defaults; --tolerance overrides both. Only\n"
                      "metrics present on both sides are checked: a cache-mode report has no latency,\n"
                      "throughput or preemptions, and the table says these were skipped.\n\n"
                      "exit: 0 no regression (or baseline updated), 1 a regression, 2 bad input (a missing\n"
                      "metric, a schema mismatch, a bad tolerance), naming the file and field."))
    return 0;
  if (!vm.count("report")) throw InputError("check: missing the REPORT argument (usage: " + usage + ")");
  if (!vm.count("baseline")) throw InputError("check: --baseline is required (usage: " + usage + ")");
  const std::string report_path = vm["report"].as<std::string>();
  const std::string baseline_path = vm["baseline"].as<std::string>();
  std::map<std::string, Tolerance> cli_tol;
  if (vm.count("tolerance"))
    for (const std::string& spec : vm["tolerance"].as<std::vector<std::string>>())
      for (const auto& [k, v] : parse_tolerances(spec)) cli_tol[k] = v;

  const bool update = vm.count("update-baseline") > 0;
  const bool allow_change = vm.count("allow-scenario-change") > 0;
  check_gate_files(vm, report_path, baseline_path, update);
  const CheckSide now = load_check_file(report_path, false);
  if (update && !std::filesystem::exists(baseline_path)) {
    write_file_atomic(baseline_path, render_baseline(now, cli_tol), "--baseline");
    std::cout << "check: wrote a new baseline " << baseline_path << " from " << report_path << "\n";
    return 0;
  }
  const CheckSide base = load_check_file(baseline_path, true);
  if (base.setup.is_null() && !allow_change && !update)
    throw InputError(baseline_path + ": field 'scenario' is missing: the baseline predates scenario checks; "
                     "re-create it with --update-baseline, or pass --allow-scenario-change");
  if (const std::string diff = setup_mismatch(base, now); !diff.empty()) {
    if (!allow_change && !update)
      throw InputError("check: the report's scenario is not the baseline's: " + diff +
                       " (pass --allow-scenario-change to compare them anyway)");
    std::cerr << "prefixsim check: warning: the report's scenario is not the baseline's: " << diff << "\n";
  }
  if (const std::string change = traffic_change(base, now); !change.empty())
    std::cout << "check: " << change << ": the gate compares the new traffic with the baseline's\n";
  const CheckResult result = run_check(base, now, cli_tol);
  std::cout << render_check_table(result, base, now);
  if (vm.count("junit")) write_file_atomic(vm["junit"].as<std::string>(), render_junit(result, base, now), "--junit");
  if (update) {
    std::map<std::string, Tolerance> keep = base.tolerances;  // the team's tolerances survive an update
    for (const auto& [k, v] : cli_tol) keep[k] = v;
    write_file_atomic(baseline_path, render_baseline(now, keep), "--baseline");
    std::cout << "check: updated the baseline " << baseline_path << " from " << report_path << "\n";
    return 0;
  }
  return result.regressions ? 1 : 0;
}

}  // namespace prefixsim::cli
