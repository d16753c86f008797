// `prefixsim sweep grid.yaml`: every point of a grid (sweep_grid.h) run on
// threads, or on the ranks of an MPI job (sweep_mpi.h), into sweep.json,
// sweep.csv, sweep.md and sweep.html. The files are rewritten every half
// minute with the points done so far, so an interrupted sweep loses at most
// that, and `--resume` runs only the points its sweep.json lacks.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <iostream>
#include <mutex>
#include <thread>

#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/parallel_for.h"
#include "sim/base/progress_line.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/study/sweep_grid.h"
#include "sim/study/sweep_mpi.h"
#include "sim/study/sweep_report.h"
#include "sim/study/sweep_run.h"

namespace prefixsim::cli {
namespace {

const char* const kOutputs[] = {"sweep.json", "sweep.csv", "sweep.md", "sweep.html"};

void write_outputs(const std::string& dir, const Grid& grid, const std::vector<GridPoint>& points,
                   const std::vector<std::string>& rows) {
  const nlohmann::ordered_json j = sweep_json(grid, points, rows);
  OutputSet out(dir, "--out");  // the four files appear together or not at all
  out.add("sweep.json", j.dump(2) + "\n");
  out.add("sweep.csv", sweep_csv(j));
  out.add("sweep.md", sweep_md(j));
  out.add("sweep.html", render_sweep_html(nlohmann::json::parse(j.dump())));
  out.commit();
}

// Rows as they arrive: the progress line (points done / total, ETA) and the
// half-minute checkpoints. Callers serialise on_row (a mutex, or MPI's one
// receiving rank).
class SweepProgress {
 public:
  using Clock = std::chrono::steady_clock;
  SweepProgress(const std::string& dir, const Grid& g, const std::vector<GridPoint>& points,
                std::vector<std::string>& rows, size_t todo, bool show)
      : dir_(dir), grid_(g), points_(points), rows_(rows), todo_(todo), line_(show) {}
  void on_row(size_t i, const std::string& row) {
    rows_[i] = row;
    ++done_;
    if (Clock::now() - last_checkpoint_ > std::chrono::seconds(30)) {
      write_outputs(dir_, grid_, points_, rows_);
      last_checkpoint_ = Clock::now();
    }
    if (!line_.due()) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double eta = elapsed / static_cast<double>(done_) * static_cast<double>(todo_ - done_);
    line_.draw("sweep: " + std::to_string(done_) + " of " + std::to_string(todo_) + " points done, ETA " +
               duration_text(eta * 1e3) + " (last: " + points_[i].params.dump() + ")");
  }
  void clear() { line_.clear(); }

 private:
  std::string dir_;
  const Grid& grid_;
  const std::vector<GridPoint>& points_;
  std::vector<std::string>& rows_;
  size_t todo_, done_ = 0;
  ProgressLine line_;
  Clock::time_point start_ = Clock::now(), last_checkpoint_ = Clock::now();
};

// The points on this process's threads. A point that fails stops the sweep
// after the rows done so far are written (--resume goes on from them).
void run_local(const SweepRunner& runner, const std::vector<size_t>& todo, int threads, SweepProgress& progress,
               const std::function<void()>& checkpoint) {
  std::mutex mu;
  std::exception_ptr first_error;
  const auto order = heaviest_first(todo.size(), [&](size_t k) { return runner.weight(todo[k]); });
  parallel_for(order.size(), threads, [&](size_t k) {
    const size_t i = todo[order[k]];
    std::string row;
    try {
      {
        const std::lock_guard<std::mutex> lock(mu);
        if (first_error) return;
      }
      row = runner.run(i);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu);
      if (!first_error) first_error = std::current_exception();
      return;
    }
    const std::lock_guard<std::mutex> lock(mu);
    progress.on_row(i, row);
  });
  progress.clear();
  if (first_error) {
    checkpoint();
    std::rethrow_exception(first_error);
  }
}

}  // namespace

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
  int threads = resolve_threads(vm);
  const std::string dir = vm["out"].as<std::string>();
  const bool quiet = vm.count("quiet") > 0;
  const int launched = mpi_launch_size();
#ifndef PREFIXSIM_MPI
  if (launched > 1)
    throw InputError("sweep: started by an MPI launcher with " + std::to_string(launched) +
                     " processes, but this prefixsim was built without MPI (meson setup -Dmpi=enabled)");
#else
  std::unique_ptr<MpiWorld> world;
  if (launched > 1) world = std::make_unique<MpiWorld>();
  const int rank = world ? world->rank() : 0;
#endif

  // Rank 0 (or the one process) reads the grid and what is already done.
  Grid grid;
  std::vector<GridPoint> points;
  std::vector<std::string> rows;
  std::vector<size_t> todo;
  std::unique_ptr<SweepRunner> runner;
  auto prepare = [&](bool rank0) {
    grid = load_grid(vm["grid"].as<std::string>());
    points = expand_grid(grid);
    rows.assign(points.size(), "");
    if (!rank0) return;
    check_output_dir(dir, "--out");
    // Every file any point reads is an input too (a trace or profile named in the grid).
    std::vector<std::string> inputs = {grid.path};
    for (const GridPoint& p : points)
      for (std::string& f : scenario_input_files(p.scenario)) inputs.push_back(std::move(f));
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (const char* name : kOutputs) {
      check_output_file(dir + "/" + name, "--out");
      check_not_an_input(dir + "/" + name, "--out", inputs);
    }
    if (vm.count("resume") && access((dir + "/sweep.json").c_str(), F_OK) == 0)
      rows = resumable_rows(dir + "/sweep.json", grid, points);
    for (size_t i = 0; i < points.size(); ++i)
      if (rows[i].empty()) todo.push_back(i);
    runner = std::make_unique<SweepRunner>(grid, points, todo);
  };

#ifdef PREFIXSIM_MPI
  if (world && world->size() > 1) {
    if (rank != 0) {
      std::vector<size_t> mine;
      if (!world->broadcast(true, mine)) return 2;  // rank 0 reports why
      try {
        grid = load_grid(vm["grid"].as<std::string>());
        points = expand_grid(grid);
        const SweepRunner worker(grid, points, mine);
        mpi_work([&](size_t i) { return worker.run(i); });
      } catch (const std::exception& e) {
        std::cerr << "prefixsim sweep: rank " << rank << ": " << e.what() << "\n";
        world->abort(dynamic_cast<const InputError*>(&e) ? 2 : 3);
      }
      return 0;
    }
    try {
      prepare(true);
    } catch (...) {
      world->broadcast(false, todo);
      throw;
    }
    runner.reset();  // rank 0 hands out; the workers run
    world->broadcast(true, todo);
    SweepProgress progress(dir, grid, points, rows, todo.size(), !quiet && ::isatty(2));
    try {
      mpi_dispatch(todo, [&](size_t i, const std::string& row) { progress.on_row(i, row); });
    } catch (...) {
      progress.clear();
      write_outputs(dir, grid, points, rows);
      throw;
    }
    progress.clear();
  } else
#endif
  {
    prepare(true);
    SweepProgress progress(dir, grid, points, rows, todo.size(), !quiet && ::isatty(2));
    run_local(*runner, todo, std::min<int>(threads, std::max<int>(1, static_cast<int>(todo.size()))), progress,
              [&] { write_outputs(dir, grid, points, rows); });
  }
  write_outputs(dir, grid, points, rows);
  if (!quiet)
    std::cout << "sweep: " << points.size() << " points (" << points.size() - todo.size()
              << " kept from the earlier sweep.json, " << todo.size() << " run); wrote " << dir
              << "/sweep.{json,csv,md,html}\n";
  return 0;
}

}  // namespace prefixsim::cli
