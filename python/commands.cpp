#include "python/commands.h"

#include <memory>
#include <optional>
#include <string>

#include "prefixsim_config.h"
#include "reports/compare_text.h"
#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cli/compare_lists.h"
#include "sim/cli/options.h"
#include "sim/scenario/replay_run.h"
#include "sim/study/compare_run.h"
#include "sim/study/sweep.h"

namespace prefixsim::python {

namespace {

// What the CLI prints on stderr beside a good run, as a Python warning.
void warn(const std::string& message) {
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) < 0) throw py::error_already_set();
}

// The flags' lists, read as the command reads them (sim/cli/compare_lists.h).
CompareOptions compare_options(const CompareArgs& a) {
  CompareOptions o;
  auto given = [](const py::object& v) { return v.is_none() ? std::nullopt : std::optional(list_text(v)); };
  cli::read_compare_lists({list_text(a.policies), given(a.kv_blocks), given(a.kv_tokens), given(a.kv_gb),
                           given(a.routers), given(a.replicas), given(a.kv_offloading_size)},
                          o);
  o.scenario.mode = a.mode;  // checked with the scenario (validate)
  o.threads = threads_arg(a.threads);
  return o;
}

}  // namespace

py::object replay(const py::object& trace, const py::object& out, const py::kwargs& keywords) {
  std::optional<TraceArg> input;
  if (!trace.is_none()) input.emplace(trace);
  Scenario s;
  apply_keywords(keywords, input ? std::optional(input->path()) : std::nullopt, 0, "replay", s);
  // replay's rule for TRACE beside a scenario naming a workload.
  if (!s.trace.empty() && s.workload_given) throw InputError("--workload: give a trace or a workload, not both");
  const std::string out_dir = out.is_none() ? "" : path_arg(out);
  std::string json, refusal;
  {
    py::gil_scoped_release nogil;
    const ReplaySetup setup = prepare_replay(s);
    if (!out.is_none())
      check_output_set(out_dir, run_output_names(), "--out", scenario_input_files(setup.scenario));
    ReplayRun run = run_replay(setup, ReplayRunOptions{});
    run.report.tool_version = PREFIXSIM_VERSION;
    if (!out.is_none()) write_run_outputs(out_dir, run.report);
    json = render_report_json(run.report);
    if (run.refused)
      refusal = std::to_string(run.refused) + " request(s) can never fit the KV pool and were not replayed "
                "(scenario.refused_requests); first: " + run.first_refusal;
  }
  if (!refusal.empty()) warn(refusal);
  return json_to_python(json);
}

py::object compare(const py::object& trace, const CompareArgs& args, const py::object& out, bool as_frame,
                   const py::kwargs& keywords) {
  CompareOptions o = compare_options(args);
  const TraceArg input(trace);
  apply_keywords(keywords, input.path(), kForCompare, "compare", o.scenario);
  const std::string out_dir = out.is_none() ? "" : path_arg(out);
  std::string json;
  {
    py::gil_scoped_release nogil;
    if (!out.is_none())
      check_output_set(out_dir, compare_output_names(), "--out", scenario_input_files(o.scenario));
    const CompareReport report = run_compare(o);
    if (!out.is_none()) write_compare_outputs(out_dir, report);
    json = render_compare_json(report);
  }
  py::object result = json_to_python(json);
  return as_frame ? to_frame(result) : result;
}

py::object analyze(const py::object& trace, const AnalyzeArgs& args, const py::object& out,
                   const py::kwargs& keywords) {
  const TraceArg input(trace);
  Scenario s;
  apply_keywords(keywords, input.path(), kForAnalyze, "analyze", s);
  const std::string out_dir = out.is_none() ? "" : path_arg(out);
  std::string json;
  uint64_t left_out = 0;
  {
    py::gil_scoped_release nogil;
    AnalyzeSettings st = analyze_settings(args, s);
    if (!out.is_none()) check_output_set(out_dir, analyze_output_names(), "--out", {s.trace});
    const AnalyzeRun run = run_analyze(s.trace, st);
    if (!out.is_none()) write_analyze_outputs(out_dir, run, "");
    json = run.json;
    left_out = run.analysis.requests_not_analyzed;
  }
  if (left_out)
    warn(std::to_string(left_out) + " requests were left out: the next would pass max_distinct_blocks "
         "(analysis.json requests_not_analyzed)");
  return json_to_python(json);
}

py::object sweep(const py::object& grid, const py::object& out, int threads, bool resume, bool as_frame) {
  SweepOptions o;
  o.grid_path = path_arg(grid);
  o.threads = threads_arg(threads);
  o.resume = resume;
  // run_sweep writes its files as it goes (checkpoints): without out=, into
  // a folder of ours that goes with this call.
  std::unique_ptr<TempDir> scratch;
  if (out.is_none()) scratch = std::make_unique<TempDir>();
  o.out_dir = scratch ? scratch->path() : path_arg(out);
  std::string json;
  {
    py::gil_scoped_release nogil;
    run_sweep(o);
    json = read_whole_file(o.out_dir + "/sweep.json", "sweep.json");
  }
  py::object result = json_to_python(json);
  return as_frame ? to_frame(result) : result;
}

py::object to_frame(const py::dict& report) {
  const py::object frame = py::module_::import("pandas").attr("DataFrame");
  if (!report.contains("results")) throw py::value_error("to_frame: not a compare or sweep report (no results)");
  if (!report.contains("axes")) return frame(report["results"]);  // compare: flat rows
  py::list names, rows;
  for (const py::handle& k : report["axes"]) names.append(k);
  for (const py::handle& k : report["columns"]) names.append(k);
  for (const py::handle& r : report["results"]) {
    py::list row;
    for (const py::handle& k : report["axes"]) row.append(r["params"][k]);
    for (const py::handle& k : report["columns"]) row.append(r[k]);
    rows.append(row);
  }
  return frame(rows, py::arg("columns") = names);
}

}  // namespace prefixsim::python
