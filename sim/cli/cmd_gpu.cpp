// `prefixsim gpu calibrate --samples FILE`: the CPU half of GPU calibration.
// The GPU half, `prefixsim-gpu-bench --calibrate FILE` (gpu/, built with
// -Dcuda=enabled), times real forward steps over a grid of step shapes and
// writes a samples file (sim/cost/calibration_samples.h); this command fits the
// cost model to it and writes a profile (sim/cost/profile.h) for `replay --profile`.
// Measuring in-process is not wired: the simulator binary needs no GPU.
#include <iostream>
#include <string>

#include "sim/cost/calibration_samples.h"
#include "sim/cost/calibration_text.h"
#include "sim/cost/catalog.h"
#include "sim/base/atomic_file.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"
#include "sim/cost/profile.h"
#include "sim/cost/shipped_profiles.h"

namespace prefixsim::cli {

namespace {

constexpr const char* kCalibrateUsage =
    "prefixsim gpu calibrate --samples FILE [--gpu CATALOG_NAME] [--out FILE] [--held-out-every K] [--json]\n"
    "       prefixsim gpu calibrate --from-vidur DIR [--gpu NAME] [--model NAME] [--tp K] [--out-dir DIR]\n"
    "                               [--source TEXT] [--date ISO] [--held-out-every K]";

constexpr const char* kCalibrateHelp =
    "Fits the cost model to measured engine-step times and writes a calibrated profile\n"
    "(schema prefixsim.profile/1) for `prefixsim replay --profile`.\n\n"
    "The samples are not measured here: run `prefixsim-gpu-bench --calibrate FILE` on the\n"
    "GPU machine (a build with -Dcuda=enabled) and bring FILE (schema\n"
    "prefixsim.calibration-samples/1, see sim/cost/calibration_samples.h) to this command.\n"
    "The fit is a weighted (1/time) non-negative least-squares fit with a scan for the\n"
    "weight-bandwidth breakpoint; every K-th sample is held out to estimate the error.\n"
    "Prints the samples per kind, the coefficients and the fit's MAPE (train, held-out,\n"
    "and per kind over all samples). A bad samples file exits 2 naming file, line and field.\n\n"
    "--from-vidur DIR fits Vidur's published operator profiles instead (github.com/microsoft/vidur,\n"
    "data/profiling/compute/<gpu>/<org>/<model>/mlp.csv; DIR may be the checkout, any folder above\n"
    "the files, or one mlp.csv). Per TP degree, every operator and the model's whole non-attention\n"
    "step are fitted with every K-th row (by token count) held out first; the held-out MAPE is printed.\n"
    "With --out-dir, a profile is written per TP degree for a catalog model (matched by shape, or\n"
    "--model) on a catalog GPU (h100, a100, or --gpu): its linear terms from Vidur, attention, KV read,\n"
    "logits, host overhead and all-reduce from the roofline (Vidur's attention.csv are Git LFS objects).";

constexpr const char* kValidateUsage =
    "prefixsim gpu validate --samples FILE [--profile P|builtin] [--gpu CATALOG_NAME] [--max-mape PCT] [--json]";

constexpr const char* kValidateHelp =
    "Holds a cost-model profile against measured step times it was not fitted to, e.g. the\n"
    "batches a replay scheduled (`prefixsim replay --steps-out STEPS`), timed on the GPU by\n"
    "`prefixsim-gpu-bench --calibrate FILE --time-steps STEPS`. Prints, overall and per kind\n"
    "of step, the mean and worst absolute error, the mean signed error (bias) and the summed\n"
    "predicted vs measured time. With --max-mape, exits 1 when the overall MAPE is above it\n"
    "(a CI gate on the cost model). --profile defaults to builtin: the shipped profile for the\n"
    "samples' model, GPU and TP.";

void print_gpu_help(std::ostream& os) {
  os << "usage: prefixsim gpu calibrate|validate --samples FILE [options]   (prefixsim gpu SUB --help for details)\n\n"
        "subcommands:\n"
        "  calibrate  fit the cost model to step times measured by `prefixsim-gpu-bench --calibrate FILE`\n"
        "             on the GPU machine (built with -Dcuda=enabled); write a profile\n"
        "  validate   hold a profile against measured step times (e.g. a replay's steps timed on the GPU)\n";
}

int calibrate_command(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("samples", po::value<std::string>(), "samples file written by prefixsim-gpu-bench --calibrate (required)")
      ("gpu", po::value<std::string>(), "GPU catalog name for the profile (default h100-sxm-80gb for an H100)")
      ("out", po::value<std::string>()->default_value("profile.json"), "profile to write (atomically)")
      ("held-out-every", po::value<int>()->default_value(5),
       "hold out every K-th sample for the error estimate; 0: none")
      ("json", "print the profile's JSON instead of the summary")
      ("from-vidur", po::value<std::string>(), "fit Vidur's operator profiles under DIR instead of --samples")
      ("model", po::value<std::string>(), "--from-vidur: catalog model of the one mlp.csv (default: matched by shape)")
      ("tp", po::value<int>(), "--from-vidur: only this TP degree")
      ("out-dir", po::value<std::string>(), "--from-vidur: write the profiles here")
      ("source", po::value<std::string>(), "--from-vidur: the profiles' provenance (repository, commit)")
      ("date", po::value<std::string>(), "--from-vidur: the profiles' date (ISO 8601), the data's own; required with --out-dir");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, kCalibrateUsage, kCalibrateHelp)) return 0;
  if (vm.count("from-vidur")) {
    if (vm.count("samples")) throw InputError("--from-vidur: give --samples or --from-vidur, not both");
    for (const char* f : {"json"})
      if (vm.count(f)) throw InputError(std::string("--") + f + ": not with --from-vidur");
    if (!vm["out"].defaulted()) throw InputError("--out: --from-vidur writes one profile per model and TP: use --out-dir");
    VidurCalibrateArgs a;
    a.dir = vm["from-vidur"].as<std::string>();
    auto str = [&](const char* k) { return vm.count(k) ? vm[k].as<std::string>() : std::string(); };
    a.gpu = str("gpu"), a.model = str("model"), a.out_dir = str("out-dir"), a.source = str("source"), a.date = str("date");
    a.tp = vm.count("tp") ? vm["tp"].as<int>() : 0;
    if (vm.count("tp") && (a.tp < 1 || a.tp > 64)) throw InputError("--tp: must be in [1, 64]");
    a.held_out_every = vm["held-out-every"].as<int>();
    if (a.held_out_every < 2) throw InputError("--held-out-every: --from-vidur needs a held-out split (K >= 2)");
    return calibrate_from_vidur(a);
  }
  for (const char* f : {"model", "tp", "out-dir", "source", "date"})
    if (vm.count(f)) throw InputError(std::string("--") + f + ": only with --from-vidur");
  if (!vm.count("samples"))
    throw InputError("--samples: required: the file prefixsim-gpu-bench --calibrate wrote (usage: " +
                     std::string(kCalibrateUsage) + ")");
  FitOptions fit;
  fit.held_out_every = vm["held-out-every"].as<int>();
  if (fit.held_out_every < 0 || fit.held_out_every == 1)
    throw InputError("--held-out-every: must be 0 (hold out nothing) or at least 2");

  const std::string path = vm["samples"].as<std::string>(), out = vm["out"].as<std::string>();
  check_output_file(out, "--out");
  check_not_an_input(out, "--out", {path});
  const CalibrationSamples s = read_calibration_samples(path);
  const std::string gpu = calibration_gpu(vm.count("gpu") ? vm["gpu"].as<std::string>() : "", s.gpu);
  const Calibration cal = calibrate(s, path, gpu, fit);
  write_profile(out, cal.profile);
  if (vm.count("json"))
    std::cout << profile_text(cal.profile);
  else
    std::cout << calibration_summary_text(s, cal, path, out);
  return 0;
}

int validate_command(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("samples", po::value<std::string>(), "measured steps (prefixsim.calibration-samples/1), required")
      ("profile", po::value<std::string>()->default_value("builtin"), "profile JSON, or builtin")
      ("gpu", po::value<std::string>(), "GPU catalog name (default h100-sxm-80gb for an H100)")
      ("max-mape", po::value<double>(), "exit 1 when the overall MAPE (percent) is above this")
      ("json", "print JSON instead of the summary");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, kValidateUsage, kValidateHelp)) return 0;
  if (!vm.count("samples")) throw InputError("--samples: required (usage: " + std::string(kValidateUsage) + ")");
  const std::string path = vm["samples"].as<std::string>();
  const CalibrationSamples s = read_calibration_samples(path);
  const std::string gpu = calibration_gpu(vm.count("gpu") ? vm["gpu"].as<std::string>() : "", s.gpu);
  const Profile p = resolve_profile(vm["profile"].as<std::string>(), s.model, gpu, s.tp);
  const Validation v = validate_profile(p, s);
  const double limit = vm.count("max-mape") ? vm["max-mape"].as<double>() : -1;
  if (vm.count("max-mape") && !(limit >= 0)) throw InputError("--max-mape: must be a percentage >= 0");
  if (vm.count("json")) std::cout << validation_json(p, v, path).dump(2) << "\n";
  else std::cout << validation_text(p, s, v, path);
  if (limit >= 0 && v.all.mape * 100 > limit) {
    std::cerr << "prefixsim gpu validate: MAPE " << percent_text(v.all.mape) << " is above --max-mape " << limit << " %\n";
    return 1;
  }
  return 0;
}

}  // namespace

int cmd_gpu(const Args& args) {
  if (args.empty()) {
    print_gpu_help(std::cout);
    return 2;  // like `prefixsim` alone: usage, but not a successful run
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_gpu_help(std::cout);
    return 0;
  }
  if (args[0] == "calibrate") return calibrate_command(Args(args.begin() + 1, args.end()));
  if (args[0] == "validate") return validate_command(Args(args.begin() + 1, args.end()));
  throw InputError("unknown subcommand '" + args[0] + "' (usage: " + kCalibrateUsage + " | " + kValidateUsage + ")");
}

}  // namespace prefixsim::cli
