// Python values in, the library's inputs out, and its JSON back: what the
// module's four functions (commands.cpp) share. Nothing here decides what a
// setting means: keyword arguments go through the scenario table's YAML
// reader, lists through the CLI's comma-list parsers, requests through the
// trace readers, so every check and message is the CLI's.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>

#include "sim/scenario/scenario.h"

namespace prefixsim::python {

namespace py = pybind11;

// Where keyword-argument errors point: "<keywords>:N: key: message", N the
// argument's line in the YAML mapping they make (as a scenario file's do).
inline constexpr const char* kKeywords = "<keywords>";

// Sets the keyword arguments (scenario YAML keys: mode='cache',
// kv_tokens=1_000_000, scheduler={'max_num_seqs': 64}) on `s`, with `trace`
// (when given) as the first key. `command`: a ScenarioCommand whose keys
// alone are taken (InputError for another, naming `what`); 0: every key, as
// a scenario file given to replay --config.
void apply_keywords(const py::dict& keywords, const std::optional<std::string>& trace, unsigned command,
                    const char* what, Scenario& s);

// A directory of our own, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A trace argument as a path the trace readers open: a str or os.PathLike as
// it is, or a list of requests (dicts with the fields of a JSONL trace line,
// native or Mooncake) written one per line to a temporary requests.jsonl, so
// the reader checks them as it checks a file (errors name that file and the
// request's line, 1-based).
class TraceArg {
 public:
  explicit TraceArg(const py::handle& trace);
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<TempDir> dir_;
  std::string path_;
};

// A path argument (str, bytes or os.PathLike) as a string (os.fsdecode).
std::string path_arg(const py::handle& v);
// A list flag's text: a str as it is; a number, or a list or tuple of them
// joined by ',' (for the CLI's comma-list parsers, options.h).
std::string list_text(const py::handle& v);
// --threads N as the CLI resolves it (0: one per core; negative: InputError).
int threads_arg(int threads);
// JSON text (a file as the CLI writes it) as Python objects (json.loads).
py::object json_to_python(const std::string& text);

}  // namespace prefixsim::python
