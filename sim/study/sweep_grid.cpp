#include "sim/study/sweep_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "policies/registry.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/yaml_doc.h"
#include "sim/scenario/offline_future.h"
#include "sim/scenario/point_run.h"
#include "sim/cost/catalog.h"
#include "sim/fleet/router.h"

namespace prefixsim {
namespace {

long line_of(const YAML::Node& n) { return n.Mark().line + 1; }

[[noreturn]] void fail(const std::string& path, long line, const std::string& key, const std::string& msg) {
  throw InputError(path, line, key + ": " + msg);
}

// Keys that are run plumbing, or not yet supported per point, never axes.
const std::map<std::string, std::string>& refused_keys() {
  static const std::map<std::string, std::string> m = {
      {"out", "the output folder is sweep's --out, not a scenario setting"},
      {"check_invariants", "a debugging switch, not a scenario setting (sweep --check-invariants)"},
      {"series_interval_s", "sweep writes no time series"},
  };
  return m;
}

std::string format_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.12g", v);  // 0.1 + 0.2 reads 0.3, not 0.30000000000000004
  return buf;
}

// A range mapping's ends and step as read: {from, to, step} (arithmetic)
// or {from, to, factor} (geometric); each also as an integer when it is one.
struct RangeSpec {
  long line = 0;
  bool geometric = false;
  double from = 0, to = 0, by = 0;
  bool integral = false;  // all three are integers
  int64_t from_i = 0, to_i = 0, by_i = 0;
};

RangeSpec read_range(const std::string& path, const std::string& key, const YAML::Node& r) {
  RangeSpec g;
  g.line = line_of(r);
  for (const auto& kv : r) {
    const std::string k = kv.first.as<std::string>();
    if (k != "from" && k != "to" && k != "step" && k != "factor")
      fail(path, line_of(kv.first), key, "a range has from, to and step or factor, not '" + k + "'");
  }
  if (!r["from"] || !r["to"]) fail(path, g.line, key, "a range needs from and to");
  if (!r["step"] == !r["factor"]) fail(path, g.line, key, "a range needs one of step (arithmetic) or factor (geometric)");
  auto number = [&](const char* field, double& d, int64_t& exact) {
    const YAML::Node n = r[field];
    try {
      d = n.as<double>();
    } catch (const YAML::Exception&) {
      fail(path, line_of(n), key, std::string("range ") + field + ": expected a number");
    }
    if (!std::isfinite(d)) fail(path, line_of(n), key, std::string("range ") + field + ": expected a finite number");
    return YAML::convert<int64_t>::decode(n, exact);
  };
  g.geometric = static_cast<bool>(r["factor"]);
  const bool int_from = number("from", g.from, g.from_i), int_to = number("to", g.to, g.to_i);
  const bool int_by = number(g.geometric ? "factor" : "step", g.by, g.by_i);
  g.integral = int_from && int_to && int_by;
  if (!g.geometric && !(g.by > 0)) fail(path, g.line, key, "range step: must be positive");
  if (g.geometric && !(g.by > 1)) fail(path, g.line, key, "range factor: must be more than 1");
  if (g.geometric && !(g.from > 0)) fail(path, g.line, key, "a geometric range starts above 0");
  if (g.from > g.to) fail(path, g.line, key, "an empty axis: the range's from is above its to");
  return g;
}

// A range mapping's values, both ends included; integers stay integers.
std::vector<GridValue> expand_range(const std::string& path, const std::string& key, const YAML::Node& r) {
  const RangeSpec g = read_range(path, key, r);
  const long line = g.line;
  const bool geometric = g.geometric;
  const double from = g.from, to = g.to, by = g.by;
  constexpr size_t kMaxValues = 100000;
  std::vector<GridValue> out;
  auto add = [&](const std::string& text) {
    if (out.size() == kMaxValues) fail(path, line, key, "a range of more than 100000 values");
    out.push_back({YAML::Node(text), line});
  };
  if (g.integral) {
    // Integers are counted exactly: a double loses them past 2^53, where
    // from + i * step stops moving and the range never ends.
    for (int64_t v = g.from_i;;) {
      add(std::to_string(v));
      int64_t next = 0;
      if (geometric ? __builtin_mul_overflow(v, g.by_i, &next) : __builtin_add_overflow(v, g.by_i, &next)) break;
      if (next > g.to_i) break;
      v = next;
    }
    return out;
  }
  // Room for rounding in from + i * step: a billionth of the step, or a
  // few units in the last place of the values (a billionth of their size
  // would let a range near 1e15 run a million values past its end).
  const double magnitude = std::max(std::fabs(from), std::fabs(to));
  const double tolerance = geometric ? 1e-9 * magnitude
                                     : std::max(1e-9 * by, 4 * std::numeric_limits<double>::epsilon() * magnitude);
  for (size_t i = 0;; ++i) {
    const double v = geometric ? from * std::pow(by, static_cast<double>(i)) : from + static_cast<double>(i) * by;
    if (v > to + tolerance) break;
    if (i > 0 && v <= from + (static_cast<double>(i) - 1) * by && !geometric)
      fail(path, line, key, "range step: too small to move past " + format_number(v) + " in a double");
    add(format_number(v));
  }
  return out;
}

// An axis's values: a list of scalars, or a range.
std::vector<GridValue> axis_values(const std::string& path, const std::string& key, const YAML::Node& v) {
  if (v.IsMap()) return expand_range(path, key, v);
  if (!v.IsSequence()) fail(path, line_of(v), key, "an axis is a list of values or a range {from, to, step|factor}");
  if (v.size() == 0) fail(path, line_of(v), key, "an empty axis: give at least one value");
  std::vector<GridValue> out;
  for (const YAML::Node& x : v) {
    if (!x.IsScalar()) fail(path, line_of(x), key, "an axis value is a single value");
    out.push_back({x, line_of(x)});
  }
  return out;
}

// The table key of an axis's YAML key, or a refusal naming it.
std::string axis_key(const std::string& path, const YAML::Node& k) {
  const std::string written = k.as<std::string>();
  const std::string key = scenario_key(written);
  if (key.empty())
    fail(path, line_of(k), written, "unknown key (an axis is a scenario key: see prefixsim replay --help)");
  if (refused_keys().count(key)) fail(path, line_of(k), written, "not an axis: " + refused_keys().at(key));
  return key;
}

// The base's keys (dotted for the scheduler's) and their lines.
std::map<std::string, long> base_keys(const YAML::Node& base) {
  std::map<std::string, long> out;
  for (const auto& kv : base) {
    const std::string k = kv.first.as<std::string>();
    if (k == "scheduler" && kv.second.IsMap()) {
      for (const auto& sub : kv.second) out["scheduler." + sub.first.as<std::string>()] = line_of(sub.first);
    } else {
      out[k] = line_of(kv.first);
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& sweep_metric_names() { return point_figure_names(); }

namespace {

// base: inline or a scenario file; the line of each key it sets.
std::map<std::string, long> read_base(const std::string& path, const YAML::Node& base, Grid& g) {
  std::map<std::string, long> base_lines;
  std::string base_path = path;
  YAML::Node map = base;
  if (base.IsScalar()) {  // a scenario file
    base_path = base.as<std::string>();
    map = load_yaml_strict(read_whole_file(base_path, "scenario"), base_path);
  }
  if (!map.IsMap()) fail(path, line_of(base), "base", "expected a scenario mapping or the path of a scenario file");
  apply_scenario_yaml(map, base_path, g.base);
  for (const auto& [k, line] : base_keys(map)) {
    if (refused_keys().count(k)) fail(base_path, line, k, "not in a sweep: " + refused_keys().at(k));
    base_lines[k] = base_path == path ? line : line_of(base);
  }
  return base_lines;
}

// The keys of axes and zip groups, each refused when it contradicts another
// axis or the base.
class AxisKeys {
 public:
  AxisKeys(const std::string& path, const std::map<std::string, long>& base_lines, Grid& g)
      : path_(path), base_lines_(base_lines), g_(g) {}
  void add(GridDimension& d, const YAML::Node& k, const YAML::Node& v) {
    const std::string key = axis_key(path_, k);
    if (seen_.count(key))
      fail(path_, line_of(k), key, "contradictory: already an axis at line " + std::to_string(seen_[key]));
    if (base_lines_.count(key))
      fail(path_, line_of(k), key, "contradictory: also set in base (line " + std::to_string(base_lines_.at(key)) +
                                       "); an axis replaces it at every point, so remove one");
    for (const auto& [other, line] : seen_)
      if (is_pool_size_key(key) && is_pool_size_key(other))
        fail(path_, line_of(k), key, "contradictory: " + other + " (line " + std::to_string(line) +
                                         ") sizes the pool too; give one of kv_blocks, kv_tokens, kv_gb");
    for (const auto& [other, line] : base_lines_)
      if (is_pool_size_key(key) && is_pool_size_key(other))
        fail(path_, line_of(k), key, "contradictory: base sets " + other + " (line " + std::to_string(line) +
                                         "); give one of kv_blocks, kv_tokens, kv_gb");
    seen_[key] = line_of(k);
    d.keys.push_back(key);
    d.key_lines.push_back(line_of(k));
    d.values.push_back(axis_values(path_, key, v));
    g_.axis_keys.push_back(key);
  }

 private:
  const std::string& path_;
  const std::map<std::string, long>& base_lines_;
  Grid& g_;
  std::map<std::string, long> seen_;  // axis key -> line
};

void read_axes(const std::string& path, const YAML::Node& axes, AxisKeys& keys, Grid& g) {
  if (!axes.IsMap()) fail(path, line_of(axes), "axes", "expected a mapping of scenario keys to lists or ranges");
  for (const auto& kv : axes) {
    if (kv.first.as<std::string>() == "scheduler" && kv.second.IsMap()) {
      for (const auto& sub : kv.second) {
        GridDimension d;
        keys.add(d, sub.first, sub.second);  // scenario_key finds the bare scheduler name
        g.dims.push_back(std::move(d));
      }
      continue;
    }
    GridDimension d;
    keys.add(d, kv.first, kv.second);
    g.dims.push_back(std::move(d));
  }
}

void read_zip(const std::string& path, const YAML::Node& zip, AxisKeys& keys, Grid& g) {
  if (!zip.IsSequence()) fail(path, line_of(zip), "zip", "expected a list of groups (mappings of key: list)");
  for (const YAML::Node& group : zip) {
    if (!group.IsMap() || group.size() == 0)
      fail(path, line_of(group), "zip", "a group is a mapping of scenario keys to lists of one length");
    GridDimension d;
    for (const auto& kv : group) {
      keys.add(d, kv.first, kv.second);
      if (d.values.back().size() != d.values.front().size())
        fail(path, line_of(kv.first), d.keys.back(),
             "contradictory: a zip group's lists advance together, but this one has " +
                 std::to_string(d.values.back().size()) + " values and " + d.keys.front() + " has " +
                 std::to_string(d.values.front().size()));
    }
    g.dims.push_back(std::move(d));
  }
}

GridChart read_chart(const std::string& path, const YAML::Node& c, const Grid& g) {
  if (!c.IsMap()) fail(path, line_of(c), "charts", "expected {metric, x, lines}");
  GridChart chart;
  for (const auto& kv : c) {
    const std::string k = kv.first.as<std::string>();
    std::string v;
    try {
      v = kv.second.as<std::string>();
    } catch (const YAML::Exception&) {
      fail(path, line_of(kv.second), "charts." + k, "expected a name");
    }
    if (k == "metric") {
      if (std::find(sweep_metric_names().begin(), sweep_metric_names().end(), v) == sweep_metric_names().end())
        fail(path, line_of(kv.second), "charts.metric", "'" + v + "' is not a sweep column (sweep.csv's header)");
      chart.metric = v;
    } else if (k == "x" || k == "lines") {
      const std::string key = scenario_key(v);
      if (std::find(g.axis_keys.begin(), g.axis_keys.end(), key) == g.axis_keys.end())
        fail(path, line_of(kv.second), "charts." + k, "'" + v + "' is not an axis of this grid");
      (k == "x" ? chart.x : chart.lines) = key;
    } else {
      fail(path, line_of(kv.first), "charts." + k, "unknown key (a chart has metric, x, lines)");
    }
  }
  if (chart.metric.empty() || chart.x.empty()) fail(path, line_of(c), "charts", "a chart needs metric and x");
  return chart;
}

}  // namespace

Grid load_grid(const std::string& path) {
  const YAML::Node root = load_yaml_strict(read_whole_file(path, "grid"), path);
  if (!root.IsMap()) throw InputError(path, 1, "a grid is a mapping with base, axes, zip and charts");
  Grid g;
  g.path = path;
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (k != "base" && k != "axes" && k != "zip" && k != "charts")
      fail(path, line_of(kv.first), k, "unknown key (a grid has base, axes, zip and charts)");
  }
  std::map<std::string, long> base_lines;
  if (const YAML::Node base = root["base"]) base_lines = read_base(path, base, g);
  g.base_json = nlohmann::ordered_json::parse(to_json(g.base).dump());
  AxisKeys keys(path, base_lines, g);
  if (const YAML::Node axes = root["axes"]) read_axes(path, axes, keys, g);
  if (const YAML::Node zip = root["zip"]) read_zip(path, zip, keys, g);
  if (const YAML::Node charts = root["charts"]) {
    if (!charts.IsSequence()) fail(path, line_of(charts), "charts", "expected a list of {metric, x, lines}");
    for (const YAML::Node& c : charts) g.charts.push_back(read_chart(path, c, g));
  }
  return g;
}

[[noreturn]] void point_error(const Grid& g, const GridPoint& p, const std::string& key_hint, const std::string& msg) {
  // The value at fault: the hinted key's value at this point, else the
  // first axis's; its line, else the file's first.
  std::string key = key_hint;
  long line = 0;
  for (size_t d = 0; d < g.dims.size(); ++d)
    for (size_t k = 0; k < g.dims[d].keys.size(); ++k)
      if (g.dims[d].keys[k] == key_hint || (key_hint.empty() && line == 0)) {
        if (key_hint.empty()) key = g.dims[d].keys[k];
        line = g.dims[d].values[k][p.at[d]].line;
      }
  if (key.empty()) key = "base";
  throw InputError(g.path, line ? line : 1, key + ": " + msg + " (at the point " + p.params.dump() + ")");
}

// The key named by "--flag: ..." in an error message, "" when none.
std::string key_of_message(const std::string& msg) {
  if (msg.rfind("--", 0) != 0) return "";
  const size_t end = msg.find_first_of(":/ ");
  return scenario_key_of_flag(msg.substr(2, end == std::string::npos ? std::string::npos : end - 2));
}

std::vector<GridPoint> expand_grid(const Grid& g) {
  // $PREFIXSIM_CATALOG's files are not the grid's: read them first, so that
  // their errors name them rather than a grid line and a point.
  load_catalog_env();
  size_t total = 1;
  for (const GridDimension& d : g.dims) {
    if (d.size() > 0 && total > 1000000 / d.size()) throw InputError(g.path, 1, "axes: more than 1000000 points");
    total *= d.size();
  }
  std::vector<GridPoint> points;
  std::map<std::string, size_t> by_params;
  for (size_t n = 0; n < total; ++n) {
    GridPoint p;
    p.scenario = g.base;
    p.at.assign(g.dims.size(), 0);
    size_t rest = n;
    for (size_t d = g.dims.size(); d-- > 0;) {
      p.at[d] = rest % g.dims[d].size();
      rest /= g.dims[d].size();
    }
    for (size_t d = 0; d < g.dims.size(); ++d)
      for (size_t k = 0; k < g.dims[d].keys.size(); ++k) {
        const GridValue& v = g.dims[d].values[k][p.at[d]];
        apply_scenario_value(g.path, v.line, g.dims[d].keys[k], v.node, p.scenario);
      }
    for (const std::string& key : g.axis_keys) p.params[key] = scenario_value(p.scenario, key);
    const std::string id = p.params.dump();
    if (by_params.count(id)) point_error(g, p, "", "contradictory: the same point twice (a value repeated in an axis)");
    by_params[id] = n;
    const Scenario& s = p.scenario;
    try {
      validate(s);
      if (!s.trace.empty() && s.workload_given) throw InputError("--workload: give a trace or a workload, not both");
      if (s.mode != "engine" && !s.profile.empty())
        throw InputError("--profile: only engine mode has a cost model (set mode: engine)");
    } catch (const InputError& e) {
      point_error(g, p, key_of_message(e.what()), e.what());
    }
    try {
      PolicyContext probe;
      probe.block_size = s.block_size;
      probe.future = no_future();
      make_policy(s.policy, probe);
      if (needs_future(s.policy) && s.mode == "engine")
        throw InputError("belady needs the trace's future, which only cache mode has (set mode: cache)");
    } catch (const InputError& e) {
      point_error(g, p, "policy", e.what());
    }
    try {
      RouterContext rctx;
      rctx.replicas = static_cast<uint32_t>(s.replicas);
      rctx.block_size = s.block_size;
      make_router(s.router, rctx);
    } catch (const InputError& e) {
      point_error(g, p, "router", e.what());
    }
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace prefixsim
