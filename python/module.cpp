// `import prefixsim`: the CLI's replay, compare, analyze and sweep as Python
// functions returning the JSON the command writes as a dict. The bindings
// only: argument names, defaults and documentation (commands.h runs them).
#include <pybind11/pybind11.h>

#include "prefixsim_config.h"
#include "python/commands.h"
#include "sim/base/error.h"

namespace prefixsim::python {
namespace {

const char* const kModuleDoc = R"(prefixsim: the prefix-cache simulator's commands as functions.

Each function takes what its command takes: a trace (a path, or a list of
requests: dicts with the fields of a JSONL trace line) and scenario keys as
keyword arguments, the keys of a scenario YAML (mode='cache',
kv_tokens=1_000_000, policy='lru', scheduler={'max_num_seqs': 64}, ...).
It returns the JSON the command writes as a dict (report.json,
compare.json, analysis.json, sweep.json); out='DIR' also writes the
command's files there. Bad input raises prefixsim.Error (a ValueError)
with the command's one-line message.)";

const char* const kReplayDoc = R"(replay(trace=None, *, out=None, **scenario) -> dict

prefixsim replay: report.json as a dict. Without a trace, the built-in
workload (scenario key `workload`).

    prefixsim.replay('trace.jsonl', mode='cache', kv_tokens=1_000_000)['prefix_cache']['hit_rate'])";

const char* const kCompareDoc = R"(compare(trace, *, policies='all', kv_blocks=None, kv_tokens=None, kv_gb=None,
        mode='cache', routers=None, replicas=None, kv_offloading_size=None,
        threads=0, out=None, as_frame=False, **scenario) -> dict | DataFrame

prefixsim compare: compare.json as a dict, or with as_frame=True its
results as a pandas DataFrame (one row per run). The lists take a list or
the flag's comma text (kv_tokens=[10_000, 100_000] or '10000,100000');
exactly one of kv_blocks, kv_tokens, kv_gb.)";

const char* const kAnalyzeDoc = R"(analyze(trace, *, top=10, window=60, lru_kv_tokens=137392, tier_gpu_tokens=0,
        max_distinct_blocks=2**25, out=None, **scenario) -> dict

prefixsim analyze: analysis.json as a dict. Scenario keys: format,
trace_block_size, block_size, sort.)";

const char* const kSweepDoc = R"(sweep(grid, *, out=None, threads=0, resume=False, as_frame=False) -> dict | DataFrame

prefixsim sweep: sweep.json as a dict (the grid is a YAML file, as the
command takes it), or with as_frame=True its points as a pandas DataFrame
(the axes' values, then the columns, as sweep.csv). Without out, the files
are written to a temporary folder removed afterwards.)";

const char* const kToFrameDoc = R"(to_frame(report) -> DataFrame

The rows of a compare or sweep dict as a pandas DataFrame (what as_frame=True returns).)";

// The module's contents: names, defaults and docstrings of the functions.
void bind(py::module_& m) {
  m.doc() = kModuleDoc;
  py::options options;
  options.disable_function_signatures();  // each docstring starts with its own, in Python's terms
  m.attr("__version__") = PREFIXSIM_VERSION;
  // InputError: the CLI's exit 2 and its message; anything else stays a RuntimeError.
  py::register_exception<InputError>(m, "Error", PyExc_ValueError);
  m.def("replay", &replay, kReplayDoc, py::arg("trace") = py::none(), py::kw_only(), py::arg("out") = py::none());
  m.def(
      "compare",
      [](const py::object& trace, const py::object& policies, const py::object& kv_blocks, const py::object& kv_tokens,
         const py::object& kv_gb, const std::string& mode, const py::object& routers, const py::object& replicas,
         const py::object& kv_offloading_size, int threads, const py::object& out, bool as_frame,
         const py::kwargs& keywords) {
        const CompareArgs args{policies, kv_blocks, kv_tokens, kv_gb, routers, replicas, kv_offloading_size, mode,
                               threads};
        return compare(trace, args, out, as_frame, keywords);
      },
      kCompareDoc, py::arg("trace"), py::kw_only(), py::arg("policies") = "all", py::arg("kv_blocks") = py::none(),
      py::arg("kv_tokens") = py::none(), py::arg("kv_gb") = py::none(), py::arg("mode") = "cache",
      py::arg("routers") = py::none(), py::arg("replicas") = py::none(), py::arg("kv_offloading_size") = py::none(),
      py::arg("threads") = 0, py::arg("out") = py::none(), py::arg("as_frame") = false);
  m.def(
      "analyze",
      [](const py::object& trace, size_t top, double window, int64_t lru_kv_tokens, int64_t tier_gpu_tokens,
         uint64_t max_distinct_blocks, const py::object& out, const py::kwargs& keywords) {
        const AnalyzeArgs args{top, window, lru_kv_tokens, tier_gpu_tokens, max_distinct_blocks};
        return analyze(trace, args, out, keywords);
      },
      kAnalyzeDoc, py::arg("trace"), py::kw_only(), py::arg("top") = AnalyzeArgs{}.top,
      py::arg("window") = AnalyzeArgs{}.window_s, py::arg("lru_kv_tokens") = AnalyzeArgs{}.lru_kv_tokens,
      py::arg("tier_gpu_tokens") = AnalyzeArgs{}.tier_gpu_tokens,
      py::arg("max_distinct_blocks") = AnalyzeArgs{}.max_distinct_blocks, py::arg("out") = py::none());
  m.def("sweep", &sweep, kSweepDoc, py::arg("grid"), py::kw_only(), py::arg("out") = py::none(),
        py::arg("threads") = 0, py::arg("resume") = false, py::arg("as_frame") = false);
  m.def("to_frame", &to_frame, kToFrameDoc, py::arg("report"));
}

}  // namespace
}  // namespace prefixsim::python

PYBIND11_MODULE(prefixsim, m) { prefixsim::python::bind(m); }
