// `mpirun -np N prefixsim sweep grid.yaml`: rank 0 hands the points out one
// at a time to ranks 1..N-1 as each finishes its last (a point costs seconds
// to minutes, unevenly, so a static split would leave ranks idle), and
// gathers their rows into the same files a one-process run writes. Built
// with the meson feature `mpi` (Open MPI); sweep_mpi.cpp is compiled only then.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace prefixsim {

// The number of processes an MPI launcher (mpirun, mpiexec, srun) started
// this one among, from its environment; 1 when not launched by one.
int mpi_launch_size();

#ifdef PREFIXSIM_MPI
// MPI_Init on construction, MPI_Finalize on destruction.
class MpiWorld {
 public:
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0's list of points to run, to every rank; `ok` false (rank 0
  // failed before the run: it reports why) gives every rank false.
  bool broadcast(bool ok, std::vector<size_t>& todo) const;
  // Ends every rank with `code` (an error on one rank must not leave the
  // others waiting for it).
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, size_ = 1;
};

// Rank 0: hands out `todo` and calls on_row(i, row) for each row as it
// arrives (in completion order). Throws InputError / InternalError with a
// worker's error message once every worker has stopped.
void mpi_dispatch(const std::vector<size_t>& todo, const std::function<void(size_t, const std::string&)>& on_row);
// Ranks 1..N-1: runs the points rank 0 hands out until it says stop.
void mpi_work(const std::function<std::string(size_t)>& run);
#endif

}  // namespace prefixsim
