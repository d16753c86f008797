#include "python/glue.h"

#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/base/error.h"
#include "sim/cli/options.h"

namespace prefixsim::python {

namespace {

// A Python value as the YAML a scenario file would hold. Integers (of any
// size) and strings go as their text, so the reader's own conversion and
// range checks judge them; os.PathLike values as their str().
YAML::Node to_yaml(const py::handle& v) {
  if (v.is_none()) return YAML::Node(YAML::NodeType::Null);
  if (py::isinstance<py::bool_>(v)) return YAML::Node(v.cast<bool>());
  if (py::isinstance<py::float_>(v)) return YAML::Node(v.cast<double>());  // inf as .inf
  if (py::isinstance<py::dict>(v)) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto& [k, x] : v.cast<py::dict>()) map[py::str(k).cast<std::string>()] = to_yaml(x);
    return map;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const py::handle& x : v) seq.push_back(to_yaml(x));
    return seq;
  }
  return YAML::Node(py::str(v).cast<std::string>());
}

// The table keys `command` takes: those of its flags.
std::set<std::string> command_keys(unsigned command) {
  boost::program_options::options_description opts;
  add_scenario_options(opts, static_cast<ScenarioCommand>(command));
  std::set<std::string> keys;
  for (const auto& o : opts.options()) keys.insert(scenario_key_of_flag(o->long_name()));
  return keys;
}

// A key the table knows but `command` does not take (compare's `policy`:
// it takes --policies) is refused here; a key the table does not know is
// left to the reader's "unknown key".
void check_command_keys(const YAML::Node& doc, unsigned command, const char* what) {
  const std::set<std::string> taken = command_keys(command);
  auto check = [&](const std::string& key, const YAML::Node& at) {
    if (scenario_key(key) == key && !taken.count(key))
      throw InputError(kKeywords, at.Mark().line + 1, key + ": " + what + " does not take this key");
  };
  for (const auto& kv : doc) {
    const std::string key = kv.first.as<std::string>();
    if (key != "scheduler" || !kv.second.IsMap()) check(key, kv.first);
    else
      for (const auto& sub : kv.second) check("scheduler." + sub.first.as<std::string>(), sub.first);
  }
}

}  // namespace

void apply_keywords(const py::dict& keywords, const std::optional<std::string>& trace, unsigned command,
                    const char* what, Scenario& s) {
  YAML::Node map(YAML::NodeType::Map);
  if (trace) map["trace"] = *trace;
  for (const auto& [k, v] : keywords) map[py::str(k).cast<std::string>()] = to_yaml(v);
  // Written out and read back, so that each key has a line for the reader's
  // messages to point at, as in a scenario file.
  YAML::Emitter text;
  text << map;
  const YAML::Node doc = YAML::Load(text.c_str());
  if (command) check_command_keys(doc, command, what);
  apply_scenario_yaml(doc, kKeywords, s);
}

TempDir::TempDir() {
  std::string name = (std::filesystem::temp_directory_path() / "prefixsim-XXXXXX").string();
  if (!::mkdtemp(name.data()))
    throw InputError(name + ": cannot create a temporary directory: " + std::strerror(errno));
  path_ = name;
}

TempDir::~TempDir() {
  std::error_code ec;  // best effort: a destructor does not throw
  std::filesystem::remove_all(path_, ec);
}

TraceArg::TraceArg(const py::handle& trace) {
  if (!py::isinstance<py::list>(trace) && !py::isinstance<py::tuple>(trace)) {
    path_ = path_arg(trace);
    return;
  }
  dir_ = std::make_unique<TempDir>();
  path_ = dir_->path() + "/requests.jsonl";
  const py::object dumps = py::module_::import("json").attr("dumps");
  std::ofstream f(path_, std::ios::binary);
  for (const py::handle& r : trace)
    f << dumps(r, py::arg("separators") = py::make_tuple(",", ":")).cast<std::string>() << '\n';
  if (!f.flush()) throw InputError(path_ + ": cannot write the requests");
}

std::string path_arg(const py::handle& v) {
  return py::module_::import("os").attr("fsdecode")(v).cast<std::string>();
}

std::string list_text(const py::handle& v) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) return py::str(v).cast<std::string>();
  std::string text;
  bool first = true;
  for (const py::handle& x : v) {
    text += (first ? "" : ",") + py::str(x).cast<std::string>();
    first = false;
  }
  return text;
}

int threads_arg(int threads) {
  boost::program_options::variables_map vm;
  vm.insert({"threads", boost::program_options::variable_value(threads, false)});
  return cli::resolve_threads(vm);
}

py::object json_to_python(const std::string& text) {
  return py::module_::import("json").attr("loads")(py::bytes(text));
}

}  // namespace prefixsim::python
