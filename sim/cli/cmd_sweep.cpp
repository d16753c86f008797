// `prefixsim sweep grid.yaml`: every point of a grid on threads or MPI ranks
// (sim/study/sweep.h) into sweep.json, .csv, .md and .html.
#include <unistd.h>

#include <iostream>

#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/study/sweep.h"

namespace prefixsim::cli {

int cmd_sweep(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("grid", po::value<std::string>(), "the grid YAML: base scenario, axes, zip groups, charts")
      ("out", po::value<std::string>()->default_value("prefixsim-out"), "output directory")
      ("resume", "keep the points already in --out/sweep.json (same base scenario) and run only the others")
      ("threads", po::value<int>()->default_value(0), "worker threads per process (default: one per core)")
      ("quiet", "print nothing on success");
  po::positional_options_description pos;
  pos.add("grid", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, "prefixsim sweep grid.yaml [--out DIR] [--resume] [--threads N]",
                  "Runs every point of a grid: a base scenario (replay --config's keys) and axes over any\n"
                  "scenario key, as lists or ranges {from, to, step|factor}, their Cartesian product, or\n"
                  "`zip` groups that advance together. Each distinct trace or workload is parsed once per\n"
                  "process. Writes sweep.json, sweep.csv (one row per point: its parameters and the\n"
                  "headline figures), sweep.md and sweep.html (a metric against an axis, a line per value\n"
                  "of another) into --out, rewritten every 30 s with the points done so far; --resume\n"
                  "runs only the points missing from them. Under `mpirun -np N` (a build with -Dmpi=enabled)\n"
                  "rank 0 hands the points out to the other ranks and writes the same files."))
    return 0;
  if (!vm.count("grid")) throw InputError("sweep: missing the grid.yaml argument (see prefixsim sweep --help)");
  SweepOptions o;
  o.threads = resolve_threads(vm);
  o.grid_path = vm["grid"].as<std::string>();
  o.out_dir = vm["out"].as<std::string>();
  o.resume = vm.count("resume") > 0;
  const bool quiet = vm.count("quiet") > 0;
  o.progress = !quiet && ::isatty(2);
  const SweepOutcome r = run_sweep(o);
  if (r.worker_exit) return *r.worker_exit;
  if (!quiet)
    std::cout << "sweep: " << r.points << " points (" << r.points - r.ran << " kept from the earlier sweep.json, "
              << r.ran << " run); wrote " << o.out_dir << "/sweep.{json,csv,md,html}\n";
  return 0;
}

}  // namespace prefixsim::cli
