// Runs a sweep's points (sweep_grid.h): every distinct input (trace or
// workload with its slice and load) parsed once per process and kept in
// memory, every point resolved and its pool sized before any runs. A point's
// result is its sweep.json row, as text: the one form a thread, an MPI rank
// and a resumed file all hand back, so every way of running a sweep writes
// the same bytes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/scenario/point_run.h"
#include "sim/study/sweep_grid.h"
#include "sim/cost/kv_sizing.h"

namespace prefixsim {

class SweepRunner {
 public:
  // Prepares what the points `todo` need (InputError naming the grid's
  // file, line and key when a point cannot run).
  SweepRunner(const Grid& grid, const std::vector<GridPoint>& points, const std::vector<size_t>& todo);
  // Point i's row (a JSON object, dumped compactly). Thread-safe; throws
  // what the run threw.
  std::string run(size_t i) const;
  // A rough relative cost of point i (heaviest first).
  double weight(size_t i) const;

 private:
  struct Input {
    std::vector<Request> requests;
    std::string format;
    std::map<std::pair<int32_t, bool>, std::pair<PreparedTrace, PolicyContext>> prepared;  // (block size, future)
  };
  struct Prepared {
    ResolvedScenario resolved;
    KvSizing sizing;
    const Input* input = nullptr;
    const PreparedTrace* prepared = nullptr;
    PolicyContext ctx;
  };
  const std::vector<GridPoint>& points_;
  std::map<std::string, std::unique_ptr<Input>> inputs_;  // by input identity
  std::map<size_t, Prepared> ready_;                      // by point
};

}  // namespace prefixsim
