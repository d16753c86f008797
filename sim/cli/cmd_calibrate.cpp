// `prefixsim calibrate --observed RUN... --out step_model.json`: the step
// model's terms fitted to observed real runs (sim/study/calibrate.h).
#include <iostream>
#include <thread>

#include "reports/validate_report.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/study/calibrate.h"
#include "sim/study/validate.h"

namespace prefixsim::cli {

int cmd_calibrate(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("observed", po::value<std::vector<std::string>>()->multitoken(), "observed runs to fit (as validate reads them)")
      ("out", po::value<std::string>(), "the fitted step model (JSON, for --profile anywhere)")
      ("from", po::value<std::string>(), "step model to start from (default: the roofline's terms)")
      ("leave-one-out", "also predict each run with the terms fitted on the others; its error becomes the model's "
                        "known_error")
      ("report", po::value<std::string>(), "also write validate.{json,md,html} of the fit (and held-out/ of "
                                           "leave-one-out) to this directory")
      ("iterations", po::value<int>()->default_value(8), "replay-and-solve rounds at most")
      ("prior-weight", po::value<double>()->default_value(0.05),
       "pull of each term toward its starting value (0: none; a run weighs 1 per measured mean)")
      ("robust-delta", po::value<double>()->default_value(0.25),
       "relative error past which a residual counts linearly (Huber); small: least absolute deviations")
      ("threads", po::value<int>()->default_value(0), "worker threads (default: one per core)")
      ("quiet", "print nothing on success");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm,
                  "prefixsim calibrate --observed RUN... --out step_model.json [--leave-one-out] [--report DIR]",
                  "Fits the step model (sim/cost/step_model.h: achieved bandwidth and compute, per-layer and\n"
                  "per-collective device costs, per-step and per-sequence host costs, the client path) to the\n"
                  "measured TTFT, E2E and TPOT means of observed runs, by replaying them and solving bounded\n"
                  "least squares on relative errors until the terms settle. --leave-one-out prints the error\n"
                  "on runs the fit did not see. The model works wherever --profile does."))
    return 0;
  if (!vm.count("observed")) throw InputError("calibrate: --observed needs at least one RUN");
  if (!vm.count("out")) throw InputError("calibrate: --out FILE is required (where the step model goes)");
  int threads = resolve_threads(vm);
  const std::string out = vm["out"].as<std::string>();
  check_output_file(out, "--out");
  if (vm.count("report")) check_output_dir(vm["report"].as<std::string>(), "--report");
  CalibrateOptions o;
  o.threads = threads;
  o.iterations = vm["iterations"].as<int>();
  if (o.iterations < 1 || o.iterations > 100) throw InputError("--iterations must be in [1, 100]");
  o.leave_one_out = vm.count("leave-one-out") > 0;
  o.prior_weight = vm["prior-weight"].as<double>();
  if (!(o.prior_weight >= 0 && o.prior_weight <= 100)) throw InputError("--prior-weight must be in [0, 100]");
  o.robust_delta = vm["robust-delta"].as<double>();
  if (!(o.robust_delta > 0 && o.robust_delta <= 10)) throw InputError("--robust-delta must be in (0, 10]");
  StepModel start;
  if (vm.count("from")) start = read_step_model(vm["from"].as<std::string>());
  std::vector<ObservedRun> runs;
  for (const std::string& p : vm["observed"].as<std::vector<std::string>>()) runs.push_back(read_observed_run(p));
  const CalibrateResult res = calibrate_runs(runs, start, o);
  if (vm.count("report")) {
    const std::string dir = vm["report"].as<std::string>();
    write_validate_outputs(dir, res.fitted, "prefixsim calibrate: the fitted terms on the runs they were fitted on");
    nlohmann::ordered_json log = {{"schema", "prefixsim.calibrate/1"}, {"rounds", res.iterations}};
    write_file_atomic(dir + "/calibrate.json", log.dump(2) + "\n", "--report");
    if (!res.held_out.is_null())
      write_validate_outputs(dir + "/held-out", res.held_out, "prefixsim calibrate: leave-one-out predictions");
  }
  write_step_model(out, res.model);
  if (!vm.count("quiet")) {
    std::cout << "fitted terms:\n" << step_model_text(res.model);
    std::cout << "in-sample: " << render_validate_terminal(res.fitted);
    if (!res.held_out.is_null()) std::cout << "leave-one-out: " << render_validate_terminal(res.held_out);
  }
  return 0;
}

}  // namespace prefixsim::cli
