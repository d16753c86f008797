// `prefixsim check`: compares a run's report.json with a committed baseline and
// decides, metric by metric, whether the run regressed. The CLI wrapper is
// sim/cli/cmd_check.cpp; this is the logic, usable (and tested) on its own.
//
// A baseline is either a full report.json ("prefixsim.report/1") or a small
// baseline file ("prefixsim.baseline/1"):
//   {"schema": "prefixsim.baseline/1",
//    "tool": {"name": "prefixsim", "version": "0.1.0"},
//    "source": "out/report.json",           // the report it was taken from
//    "mode": "engine",                      // or "cache"
//    "metrics": {"hit_rate": 0.61, "ttft_p99": 812.5, ...},   // null: not measured in that mode
//    "tolerances": {"hit_rate": "0.005", "ttft_p99": "5%"},  // optional, the team's own
//    "scenario": {"mode", "model", "gpu", "tp", "block_size", "kv_blocks", "policy", "trace_format"},
//    "trace": {"checksum", "requests", "prompt_tokens", "output_tokens"}}
// The scenario is the serving setup the baseline was measured on: a report
// of another setup (an s3fifo run against an lru baseline, cache mode
// against engine, another pool size) is refused, exit 2, unless
// --allow-scenario-change. The trace is the traffic: a CI gate exists to
// judge new traffic (re-rendered prompt templates) against the old, so a
// change there is reported, never refused.
// Only the metrics a baseline file lists are gated, so a team can gate on
// hit_rate alone.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace prefixsim {

inline constexpr const char* kBaselineSchema = "prefixsim.baseline/1";

// An allowed worsening: absolute (in the metric's unit) or relative to the baseline.
struct Tolerance {
  double value = 0;
  bool relative = false;  // value is a percentage of |baseline|
  std::string text() const;
};

struct CheckMetricDef {
  const char* name;        // "ttft_p99"
  const char* field;       // "latency_ms.ttft.p99" (report.json key path)
  bool higher_is_better;   // hit rates, throughput; latencies and preemptions: lower is better
  bool timed;              // only measured in engine mode
  const char* unit;        // "ratio", "ms", "1/s", "count"
  Tolerance default_tolerance;
};
const std::vector<CheckMetricDef>& check_metrics();

// "hit_rate=0.005,ttft_p99=5%" -> tolerances; unknown metric or bad number: InputError.
std::map<std::string, Tolerance> parse_tolerances(const std::string& spec, const std::string& where = "--tolerance");

// The metrics of one side. A value is nullopt when its section is null because
// the run did not simulate time (cache mode); `present` lists the metrics the
// document provides at all (a baseline file may list a subset).
struct CheckSide {
  std::string file;
  std::string schema;
  std::string mode;
  // The serving setup and the traffic (see above); setup is null for a
  // baseline file written before baselines recorded it.
  nlohmann::ordered_json setup;
  nlohmann::ordered_json traffic;
  std::map<std::string, std::optional<double>> values;
  std::map<std::string, Tolerance> tolerances;  // from a baseline file
};
// Reads a report.json (or, when allow_baseline, a baseline file). Throws
// InputError naming the file and the field for a schema mismatch, a missing
// key, a null or non-numeric metric.
CheckSide load_check_side(const nlohmann::json& doc, const std::string& file, bool allow_baseline);
CheckSide load_check_file(const std::string& path, bool allow_baseline);

// "field 'kv_blocks' is 4096 in the baseline, 8192 in the report", or "" when
// both sides have the same setup.
std::string setup_mismatch(const CheckSide& baseline, const CheckSide& now);
// "the trace differs from the baseline's (checksum ..., requests 50 -> 60)", or "".
std::string traffic_change(const CheckSide& baseline, const CheckSide& now);

enum class Verdict { Improved, Unchanged, WithinTolerance, Regressed, Skipped };
const char* verdict_text(Verdict v);

struct CheckRow {
  const CheckMetricDef* metric;
  std::optional<double> baseline, now;
  Tolerance tolerance;
  Verdict verdict = Verdict::Skipped;
  std::string note;  // why skipped, or what the regression exceeded
};

struct CheckResult {
  std::vector<CheckRow> rows;
  int regressions = 0, skipped = 0;
};

// tolerances: defaults, overridden by the baseline file's, overridden by `cli`.
CheckResult run_check(const CheckSide& baseline, const CheckSide& now, const std::map<std::string, Tolerance>& cli);

std::string render_check_table(const CheckResult& r, const CheckSide& baseline, const CheckSide& now);
std::string render_junit(const CheckResult& r, const CheckSide& baseline, const CheckSide& now);
// The baseline file for `now` (--update-baseline), keeping `tolerances`.
std::string render_baseline(const CheckSide& now, const std::map<std::string, Tolerance>& tolerances);

}  // namespace prefixsim
