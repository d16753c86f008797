// A sweep's grid (`prefixsim sweep grid.yaml`): a base scenario and axes,
// expanded into points, each a complete Scenario.
//
//   base:                      # a scenario mapping (replay --config's keys), or a path to one
//     trace: conv.jsonl
//     mode: engine
//   axes:                      # every scenario key may be an axis
//     policy: [lru, s3fifo]
//     kv_blocks: {from: 1000, to: 4000, step: 1000}   # inclusive
//     replicas: {from: 1, to: 16, factor: 2}          # 1, 2, 4, 8, 16
//   zip:                       # groups whose lists advance together
//     - {model: [llama-3.1-8b, llama-3.1-70b], tp: [1, 4]}
//   charts:                    # optional: a metric against an axis, a line per value of another
//     - {metric: ttft_p99_ms, x: replicas, lines: router}
//
// Points are the Cartesian product of the axes and zip groups, in the order
// they appear, the last varying fastest. Every point is checked before
// anything runs (the scenario's own checks, catalog names, policy and router
// specs, pool sizing); a bad grid is InputError "FILE:LINE: key: message"
// naming the axis value (or base key) at fault.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/scenario/scenario.h"

namespace prefixsim {

struct GridValue {
  YAML::Node node;  // a scalar; made by a range, it has no mark of its own
  long line = 0;    // where it was written (the range's line for a range's values)
};

// One axis, or one zip group: keys that advance together, each with the
// same number of values.
struct GridDimension {
  std::vector<std::string> keys;              // table keys (scheduler ones dotted)
  std::vector<long> key_lines;
  std::vector<std::vector<GridValue>> values;  // [key][value]
  size_t size() const { return values.empty() ? 0 : values[0].size(); }
};

struct GridChart {
  std::string metric, x, lines;  // lines: "" = one line
};

struct Grid {
  std::string path;
  Scenario base;
  nlohmann::ordered_json base_json;  // to_json(base): what resume compares
  std::vector<GridDimension> dims;
  std::vector<std::string> axis_keys;  // every dimension's keys, in order
  std::vector<GridChart> charts;       // as written; empty = the defaults (sweep_report)
};

struct GridPoint {
  Scenario scenario;
  nlohmann::ordered_json params;  // axis key -> the value this point resolved to
  std::vector<size_t> at;         // the value index in each dimension
};

// Parses and checks the grid file (InputError as above).
Grid load_grid(const std::string& path);
// Every point, checked (InputError as above); never empty.
std::vector<GridPoint> expand_grid(const Grid& grid);
// The InputError for point `p`: at the line of its value of `key` (an
// axis), else of its first axis's value; the message names the point.
[[noreturn]] void point_error(const Grid& grid, const GridPoint& p, const std::string& key, const std::string& msg);
// The scenario key an error message "--flag: ..." names, "" when none.
std::string key_of_message(const std::string& msg);
// The metric names a chart may plot (sweep_report's columns).
const std::vector<std::string>& sweep_metric_names();

}  // namespace prefixsim
