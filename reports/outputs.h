// The report writers. Each render_* is a pure function of its input (same
// input, byte-identical text); write_run_outputs puts all five files of a run
// into a directory, each written atomically (temporary name + rename).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/base/atomic_file.h"

#include "reports/run_report.h"

namespace prefixsim {

// report.json, schema "prefixsim.report/1" (DESIGN.md's key paths, plus mode,
// prefix_cache.lookups, ttft_histogram_s and ttft_cdf_ms). Keys in a fixed
// order, numbers in shortest round-trip form, NaN as null, 2-space indent.
nlohmann::ordered_json report_to_json(const RunReport& r);
std::string render_report_json(const RunReport& r);
// series.csv: one row per interval (header names the columns and units).
std::string render_series_csv(const RunReport& r);
// summary.md: the headline numbers as Markdown tables.
std::string render_summary_md(const RunReport& r);
// metrics.prom: Prometheus text exposition with vLLM's metric names.
std::string render_metrics_prom(const RunReport& r);
// report.html: one self-contained page (Chart.js inlined), opens offline.
std::string render_report_html(const RunReport& r);
// compare's page (its text forms: compare_text.h): hit rate vs capacity per policy, and a policy x capacity
// table. compare_json has "results": [{policy, kv_blocks, capacity_tokens,
// hit_rate, block_hit_rate, evictions}, ...] and optionally "scenario".
std::string render_compare_html(const nlohmann::json& compare_json);

// sweep's page: its charts (a metric against an axis, a line per value of
// another, the other axes at the first point's values) and the table of
// points, from sweep.json (sim/study/sweep_report.h).
std::string render_sweep_html(const nlohmann::json& sweep_json);
// plan's page: the runs behind the answer (TTFT p99 and hit rate against
// replicas, a line per TP and offload) and the answer, from plan.json
// (plan.md and the terminal's lines: plan_text.h).
std::string render_plan_html(const nlohmann::json& plan_json);

// A few lines for the terminal after a run.
std::string render_terminal_summary(const RunReport& r);
// A duration given in ms, in the unit that keeps it readable: "12.34 ms",
// "45.6 s", "12.5 min", "3.2 h".
std::string duration_text(double ms);

// compare's four files (compare.json, .csv, .md, .html; compare_text.h and
// render_compare_html), written into out_dir as one set (an OutputSet).
const std::vector<std::string>& compare_output_names();
struct CompareReport;
void write_compare_outputs(const std::string& out_dir, const CompareReport& r);

// The five files of a run's output directory, in the order written.
const std::vector<std::string>& run_output_names();
// Creates out_dir (and parents) and writes report.json, series.csv,
// summary.md, metrics.prom and report.html into it, as one set with the
// finished files `also` (e.g. --steps-out): all appear, or none (an
// OutputSet). Throws InputError when the directory cannot be created or written.
void write_run_outputs(const std::string& out_dir, const RunReport& r, const std::vector<AtomicFile*>& also = {});

}  // namespace prefixsim
