// The module's functions, one per command: keyword arguments in (glue.h),
// the library call the command makes (with the GIL released), and the JSON
// the command writes, as Python objects. out= writes the command's files,
// after the command's checks on them.
#pragma once

#include <pybind11/pybind11.h>

#include "python/glue.h"
#include "sim/study/analyze_run.h"

namespace prefixsim::python {

// `prefixsim replay [TRACE] --KEY VALUE ... [--out DIR]`: report.json.
py::object replay(const py::object& trace, const py::object& out, const py::kwargs& keywords);

// compare's own flags, as given (None: not given).
struct CompareArgs {
  py::object policies, kv_blocks, kv_tokens, kv_gb, routers, replicas, kv_offloading_size;
  std::string mode;
  int threads = 0;
};
// `prefixsim compare TRACE ...`: compare.json, or its results as a DataFrame.
py::object compare(const py::object& trace, const CompareArgs& args, const py::object& out, bool as_frame,
                   const py::kwargs& keywords);

// `prefixsim analyze TRACE ...`: analysis.json.
py::object analyze(const py::object& trace, const AnalyzeArgs& args, const py::object& out,
                   const py::kwargs& keywords);

// `prefixsim sweep GRID ...`: sweep.json (written to a temporary --out
// unless `out` is given), or its points as a DataFrame.
py::object sweep(const py::object& grid, const py::object& out, int threads, bool resume, bool as_frame);

// compare.json's results, or sweep.json's points (the axes' values, then
// the columns, as sweep.csv has them), as a pandas DataFrame.
py::object to_frame(const py::dict& report);

}  // namespace prefixsim::python
