// sweep.json, sweep.csv, sweep.md and sweep.html from a grid and the rows of
// the points done so far (sweep_run.h's text, in grid order; a point not yet
// done is ""). Pure functions of their input: a one-process run, an MPI run
// and a resumed run write the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/study/sweep_grid.h"

namespace prefixsim {

nlohmann::ordered_json sweep_json(const Grid& grid, const std::vector<GridPoint>& points,
                                  const std::vector<std::string>& rows);
std::string sweep_csv(const nlohmann::ordered_json& sweep);
std::string sweep_md(const nlohmann::ordered_json& sweep);

// The rows of an earlier sweep.json that `points` can take over (--resume):
// by params, when it was made from the same base. "" where none. Throws
// InputError when the file is not a sweep of the same base.
std::vector<std::string> resumable_rows(const std::string& sweep_json_path, const Grid& grid,
                                        const std::vector<GridPoint>& points);

}  // namespace prefixsim
