// `prefixsim sweep`'s run: every point of a grid (sweep_grid.h) on threads,
// or on the ranks of an MPI job (sweep_mpi.h), into sweep.json, sweep.csv,
// sweep.md and sweep.html. The files are rewritten every half minute with
// the points done so far, so an interrupted sweep loses at most that, and
// `resume` runs only the points its sweep.json lacks.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace prefixsim {

struct SweepOptions {
  std::string grid_path;
  std::string out_dir;
  bool resume = false;
  int threads = 1;          // per process
  bool progress = false;    // a progress line (points done, ETA)
};

struct SweepOutcome {
  size_t points = 0;  // in the grid
  size_t ran = 0;     // run now (the others were kept from the earlier sweep.json)
  // An MPI rank other than 0 ends here with this exit code and prints nothing
  // (rank 0 reports for all).
  std::optional<int> worker_exit;
};

// InputError (exit 2) naming the grid's file, line and key for a bad grid or
// point; a point that fails stops the sweep after the rows done so far are
// written. Under an MPI launcher in a build without MPI: InputError.
SweepOutcome run_sweep(const SweepOptions& o);

}  // namespace prefixsim
