#include "sim/study/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <vector>

#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/parallel_for.h"
#include "sim/base/progress_line.h"
#include "sim/study/sweep_grid.h"
#include "sim/study/sweep_mpi.h"
#include "sim/study/sweep_report.h"
#include "sim/study/sweep_run.h"

namespace prefixsim {
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

// The grid, its points and their rows (those kept by a resume filled in).
struct SweepState {
  Grid grid;
  std::vector<GridPoint> points;
  std::vector<std::string> rows;
  std::vector<size_t> todo;
};

// Rank 0 (or the one process) reads the grid and what is already done, and
// refuses outputs that would replace a non-file or one of the inputs.
SweepState prepare(const SweepOptions& o) {
  SweepState st;
  st.grid = load_grid(o.grid_path);
  st.points = expand_grid(st.grid);
  st.rows.assign(st.points.size(), "");
  check_output_dir(o.out_dir, "--out");
  // Every file any point reads is an input too (a trace or profile named in the grid).
  std::vector<std::string> inputs = {st.grid.path};
  for (const GridPoint& p : st.points)
    for (std::string& f : scenario_input_files(p.scenario)) inputs.push_back(std::move(f));
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  for (const char* name : kOutputs) {
    check_output_file(o.out_dir + "/" + name, "--out");
    check_not_an_input(o.out_dir + "/" + name, "--out", inputs);
  }
  if (o.resume && access((o.out_dir + "/sweep.json").c_str(), F_OK) == 0)
    st.rows = resumable_rows(o.out_dir + "/sweep.json", st.grid, st.points);
  for (size_t i = 0; i < st.points.size(); ++i)
    if (st.rows[i].empty()) st.todo.push_back(i);
  return st;
}

// Rows as they arrive: the progress line (points done / total, ETA) and the
// half-minute checkpoints. Callers serialise on_row (a mutex, or MPI's one
// receiving rank).
class SweepProgress {
 public:
  using Clock = std::chrono::steady_clock;
  SweepProgress(const std::string& dir, SweepState& st, bool show)
      : dir_(dir), st_(st), todo_(st.todo.size()), line_(show) {}
  void on_row(size_t i, const std::string& row) {
    st_.rows[i] = row;
    ++done_;
    if (Clock::now() - last_checkpoint_ > std::chrono::seconds(30)) {
      write_outputs(dir_, st_.grid, st_.points, st_.rows);
      last_checkpoint_ = Clock::now();
    }
    if (!line_.due()) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double eta = elapsed / static_cast<double>(done_) * static_cast<double>(todo_ - done_);
    line_.draw("sweep: " + std::to_string(done_) + " of " + std::to_string(todo_) + " points done, ETA " +
               duration_text(eta * 1e3) + " (last: " + st_.points[i].params.dump() + ")");
  }
  void clear() { line_.clear(); }

 private:
  std::string dir_;
  SweepState& st_;
  size_t todo_, done_ = 0;
  ProgressLine line_;
  Clock::time_point start_ = Clock::now(), last_checkpoint_ = Clock::now();
};

// The points on this process's threads. A point that fails stops the sweep
// after the rows done so far are written (resume goes on from them).
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

SweepState run_on_threads(const SweepOptions& o) {
  SweepState st = prepare(o);
  const SweepRunner runner(st.grid, st.points, st.todo);
  SweepProgress progress(o.out_dir, st, o.progress);
  run_local(runner, st.todo, std::min<int>(o.threads, std::max<int>(1, static_cast<int>(st.todo.size()))), progress,
            [&] { write_outputs(o.out_dir, st.grid, st.points, st.rows); });
  return st;
}

#ifdef PREFIXSIM_MPI
// Ranks 1..N-1: run the points rank 0 hands out.
int run_mpi_worker(const SweepOptions& o, const MpiWorld& world) {
  std::vector<size_t> mine;
  if (!world.broadcast(true, mine)) return 2;  // rank 0 reports why
  try {
    const Grid grid = load_grid(o.grid_path);
    const std::vector<GridPoint> points = expand_grid(grid);
    const SweepRunner worker(grid, points, mine);
    mpi_work([&](size_t i) { return worker.run(i); });
  } catch (const std::exception& e) {
    std::cerr << "prefixsim sweep: rank " << world.rank() << ": " << e.what() << "\n";
    world.abort(dynamic_cast<const InputError*>(&e) ? 2 : 3);
  }
  return 0;
}

// Rank 0: prepares, checks every point (as the workers will), hands the points out.
SweepState run_mpi_root(const SweepOptions& o, const MpiWorld& world) {
  SweepState st;
  try {
    st = prepare(o);
    const SweepRunner check(st.grid, st.points, st.todo);
  } catch (...) {
    world.broadcast(false, st.todo);
    throw;
  }
  world.broadcast(true, st.todo);
  SweepProgress progress(o.out_dir, st, o.progress);
  try {
    mpi_dispatch(st.todo, [&](size_t i, const std::string& row) { progress.on_row(i, row); });
  } catch (...) {
    progress.clear();
    write_outputs(o.out_dir, st.grid, st.points, st.rows);
    throw;
  }
  progress.clear();
  return st;
}
#endif

}  // namespace

SweepOutcome run_sweep(const SweepOptions& o) {
  const int launched = mpi_launch_size();
  SweepState st;
#ifndef PREFIXSIM_MPI
  if (launched > 1)
    throw InputError("sweep: started by an MPI launcher with " + std::to_string(launched) +
                     " processes, but this prefixsim was built without MPI (meson setup -Dmpi=enabled)");
  st = run_on_threads(o);
#else
  std::unique_ptr<MpiWorld> world;
  if (launched > 1) world = std::make_unique<MpiWorld>();
  if (world && world->size() > 1) {
    if (world->rank() != 0) return {0, 0, run_mpi_worker(o, *world)};
    st = run_mpi_root(o, *world);
  } else {
    st = run_on_threads(o);
  }
#endif
  write_outputs(o.out_dir, st.grid, st.points, st.rows);
  return {st.points.size(), st.todo.size(), std::nullopt};
}

}  // namespace prefixsim
