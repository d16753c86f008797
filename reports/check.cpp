#include "reports/check.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "prefixsim_config.h"
#include "reports/run_report.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"

namespace prefixsim {

namespace {
using json = nlohmann::json;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string format_value(const CheckMetricDef& m, double v) {
  const std::string u = m.unit;
  if (u == "ratio") return fmt("%.4f", v);
  if (u == "ms") return fmt("%.2f ms", v);
  if (u == "1/s") return fmt("%.2f/s", v);
  return fmt("%.0f", v);
}

std::string format_delta(const CheckMetricDef& m, double base, double now) {
  const double d = now - base;
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + string.
  std::string s = d >= 0 ? "+" : "";
  s += format_value(m, d);
  if (base != 0) s += fmt(" (%+.2f%%)", 100.0 * d / std::fabs(base));
  return s;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

const CheckMetricDef* find_metric(const std::string& name) {
  for (const CheckMetricDef& m : check_metrics())
    if (name == m.name) return &m;
  return nullptr;
}

std::string known_metrics() {
  std::string s;
  for (const CheckMetricDef& m : check_metrics()) {
    if (!s.empty()) s += ", ";
    s += m.name;
  }
  return s;
}

// Follows "a.b.c" in doc. Returns nullopt when the first section is null and
// the metric is measured only in engine mode (a cache-mode report).
std::optional<double> lookup(const json& doc, const CheckMetricDef& m, const std::string& file) {
  const json* cur = &doc;
  std::string path;
  std::istringstream parts(m.field);
  std::string key;
  bool first = true;
  while (std::getline(parts, key, '.')) {
    if (!path.empty()) path += '.';
    path += key;
    if (!cur->is_object()) throw InputError(file + ": field '" + path + "': parent is not an object");
    auto it = cur->find(key);
    if (it == cur->end()) throw InputError(file + ": field '" + path + "' is missing (metric " + m.name + ")");
    cur = &*it;
    if (cur->is_null()) {
      if (first && m.timed) return std::nullopt;
      throw InputError(file + ": field '" + path + "' is null (metric " + m.name + ")");
    }
    first = false;
  }
  if (!cur->is_number()) throw InputError(file + ": field '" + path + "' is not a number (metric " + m.name + ")");
  return cur->get<double>();
}

}  // namespace

std::string Tolerance::text() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, relative ? "%g%%" : "%g", value);
  return buf;
}

const std::vector<CheckMetricDef>& check_metrics() {
  // Defaults: half a point of hit rate (0.005) is well beyond the noise of a
  // deterministic replay yet catches a real template change; latencies and
  // throughput move with the cost model, so they get 5 % relative.
  static const std::vector<CheckMetricDef> defs = {
      {"hit_rate", "prefix_cache.hit_rate", true, false, "ratio", {0.005, false}},
      {"block_hit_rate", "prefix_cache.block_hit_rate", true, false, "ratio", {0.005, false}},
      {"ttft_p50", "latency_ms.ttft.p50", false, true, "ms", {5, true}},
      {"ttft_p99", "latency_ms.ttft.p99", false, true, "ms", {5, true}},
      {"e2e_p99", "latency_ms.e2e.p99", false, true, "ms", {5, true}},
      {"requests_per_s", "throughput.requests_per_s", true, true, "1/s", {5, true}},
      {"output_tokens_per_s", "throughput.output_tokens_per_s", true, true, "1/s", {5, true}},
      {"preemptions", "engine.preemptions", false, true, "count", {10, true}},
  };
  return defs;
}

std::map<std::string, Tolerance> parse_tolerances(const std::string& spec, const std::string& where) {
  std::map<std::string, Tolerance> out;
  std::istringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError(where + ": '" + item + "' is not METRIC=VALUE or METRIC=VALUE% (e.g. hit_rate=0.005,ttft_p99=5%)");
    const std::string name = item.substr(0, eq);
    std::string val = item.substr(eq + 1);
    if (!find_metric(name)) throw InputError(where + ": unknown metric '" + name + "' (known: " + known_metrics() + ")");
    Tolerance t;
    if (!val.empty() && val.back() == '%') {
      t.relative = true;
      val.pop_back();
    }
    size_t used = 0;
    try {
      t.value = std::stod(val, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (val.empty() || used != val.size() || !std::isfinite(t.value) || t.value < 0)
      throw InputError(where + ": tolerance of " + name + " must be a non-negative number or percentage, got '" +
                       item.substr(eq + 1) + "'");
    out[name] = t;
  }
  return out;
}

namespace {

// A side's values must mean something: ratios in [0, 1], everything else a
// finite number >= 0, and at least one metric to compare (an empty baseline
// would pass every check).
void check_values(const CheckSide& s, const std::string& file, const char* where) {
  size_t present = 0;
  for (const auto& [name, v] : s.values) {
    if (!v) continue;
    ++present;
    const CheckMetricDef* m = find_metric(name);
    const bool ratio = m && std::string(m->unit) == "ratio";
    if (!std::isfinite(*v) || *v < 0 || (ratio && *v > 1)) {
      const std::string field = where[0] ? std::string(where) + "." + name : std::string(m ? m->field : name.c_str());
      throw InputError(file + ": field '" + field + "' is " + json(*v).dump() + ", expected " +
                       (ratio ? "a ratio in [0, 1]" : "a number >= 0"));
    }
  }
  if (present == 0) throw InputError(file + ": no metrics to check (" + known_metrics() + ")");
}

}  // namespace

namespace {

// The value at a dotted key path of a report, or null.
nlohmann::ordered_json at_path(const json& doc, const std::string& path) {
  const json* cur = &doc;
  size_t from = 0;
  while (true) {
    const size_t dot = path.find('.', from);
    const std::string key = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
    if (dot == std::string::npos) return nlohmann::ordered_json::parse(cur->dump());
    from = dot + 1;
  }
}

void setup_of_report(const json& doc, CheckSide& s) {
  s.setup = nlohmann::ordered_json::object();
  s.setup["mode"] = s.mode;
  s.setup["model"] = at_path(doc, "scenario.model");
  s.setup["gpu"] = at_path(doc, "scenario.gpu");
  s.setup["tp"] = at_path(doc, "scenario.tp");
  s.setup["block_size"] = at_path(doc, "kv_cache.block_size");
  s.setup["kv_blocks"] = at_path(doc, "kv_cache.num_blocks");
  nlohmann::ordered_json policy = at_path(doc, "scenario.policy_resolved");
  s.setup["policy"] = policy.is_null() ? at_path(doc, "scenario.policy") : policy;
  s.setup["trace_format"] = at_path(doc, "trace.format");
  s.traffic = nlohmann::ordered_json::object();
  for (const char* k : {"checksum", "requests", "prompt_tokens", "output_tokens"})
    s.traffic[k] = at_path(doc, std::string("trace.") + k);
}

}  // namespace

std::string setup_mismatch(const CheckSide& baseline, const CheckSide& now) {
  if (baseline.setup.is_null() || now.setup.is_null()) return "";
  for (auto it = baseline.setup.begin(); it != baseline.setup.end(); ++it) {
    const nlohmann::ordered_json other = now.setup.contains(it.key()) ? now.setup[it.key()] : nullptr;
    if (*it != other)
      return "field '" + it.key() + "' is " + it->dump() + " in the baseline, " + other.dump() + " in the report";
  }
  return "";
}

std::string traffic_change(const CheckSide& baseline, const CheckSide& now) {
  if (baseline.traffic.is_null() || now.traffic.is_null()) return "";
  std::string out = "the trace differs from the baseline's (";
  bool first = true;
  for (auto it = baseline.traffic.begin(); it != baseline.traffic.end(); ++it) {
    const nlohmann::ordered_json other = now.traffic.contains(it.key()) ? now.traffic[it.key()] : nullptr;
    if (*it == other) continue;
    out += (first ? "" : ", ") + it.key() + " " + it->dump() + " -> " + other.dump();
    first = false;
  }
  return first ? "" : out + ")";
}

CheckSide load_check_side(const json& doc, const std::string& file, bool allow_baseline) {
  CheckSide s;
  s.file = file;
  if (!doc.is_object()) throw InputError(file + ": not a JSON object (expected a prefixsim report)");
  auto sit = doc.find("schema");
  if (sit == doc.end() || !sit->is_string()) throw InputError(file + ": field 'schema' is missing or not a string");
  s.schema = sit->get<std::string>();
  const bool is_report = s.schema == kReportSchema, is_baseline = s.schema == kBaselineSchema;
  if (!is_report && !(allow_baseline && is_baseline))
    throw InputError(file + ": field 'schema' is '" + s.schema + "', expected '" + kReportSchema + "'" +
                     (allow_baseline ? std::string(" or '") + kBaselineSchema + "'" : std::string()));
  if (is_report) {
    for (const CheckMetricDef& m : check_metrics()) s.values[m.name] = lookup(doc, m, file);
    if (doc.contains("mode") && doc["mode"].is_string())
      s.mode = doc["mode"].get<std::string>();
    else
      s.mode = s.values["ttft_p99"] ? "engine" : "cache";
    check_values(s, file, "");
    setup_of_report(doc, s);
    return s;
  }
  s.mode = doc.contains("mode") && doc["mode"].is_string() ? doc["mode"].get<std::string>() : "engine";
  auto mit = doc.find("metrics");
  if (mit == doc.end() || !mit->is_object()) throw InputError(file + ": field 'metrics' is missing or not an object");
  for (auto it = mit->begin(); it != mit->end(); ++it) {
    const CheckMetricDef* m = find_metric(it.key());
    if (!m) throw InputError(file + ": field 'metrics." + it.key() + "': unknown metric (known: " + known_metrics() + ")");
    if (it->is_null() && m->timed)
      s.values[it.key()] = std::nullopt;
    else if (it->is_number())
      s.values[it.key()] = it->get<double>();
    else
      throw InputError(file + ": field 'metrics." + it.key() + "' is not a number");
  }
  if (doc.contains("tolerances")) {
    const json& t = doc["tolerances"];
    if (!t.is_object()) throw InputError(file + ": field 'tolerances' is not an object");
    std::string spec;
    for (auto it = t.begin(); it != t.end(); ++it) {
      if (!it->is_string() && !it->is_number())
        throw InputError(file + ": field 'tolerances." + it.key() + "' must be a number or a string like \"5%\"");
      spec += it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump()) + ",";
    }
    s.tolerances = parse_tolerances(spec, file + ": field 'tolerances'");
  }
  check_values(s, file, "metrics");
  for (const char* section : {"scenario", "trace"}) {
    if (!doc.contains(section)) continue;
    if (!doc[section].is_object()) throw InputError(file + ": field '" + section + "' is not an object");
    (std::string(section) == "scenario" ? s.setup : s.traffic) = nlohmann::ordered_json::parse(doc[section].dump());
  }
  return s;
}

CheckSide load_check_file(const std::string& path, bool allow_baseline) {
  const std::string text = read_whole_file(path, "report");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    long line = 1;
    for (size_t i = 0; i < e.byte && i < text.size(); ++i) line += text[i] == '\n';
    throw InputError(path, line, std::string("not valid JSON: ") + e.what());
  } catch (const json::exception& e) {  // e.g. out_of_range: a number like 1e999
    throw InputError(path, 1, std::string("not valid JSON: ") + e.what());
  }
  return load_check_side(doc, path, allow_baseline);
}

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::Improved: return "improved";
    case Verdict::Unchanged: return "unchanged";
    case Verdict::WithinTolerance: return "worse, within tolerance";
    case Verdict::Regressed: return "REGRESSION";
    case Verdict::Skipped: return "skipped";
  }
  return "?";
}

CheckResult run_check(const CheckSide& baseline, const CheckSide& now, const std::map<std::string, Tolerance>& cli) {
  CheckResult r;
  for (const CheckMetricDef& m : check_metrics()) {
    CheckRow row;
    row.metric = &m;
    row.tolerance = m.default_tolerance;
    if (auto it = baseline.tolerances.find(m.name); it != baseline.tolerances.end()) row.tolerance = it->second;
    if (auto it = cli.find(m.name); it != cli.end()) row.tolerance = it->second;
    auto b = baseline.values.find(m.name);
    auto n = now.values.find(m.name);
    if (b != baseline.values.end()) row.baseline = b->second;
    if (n != now.values.end()) row.now = n->second;
    if (b == baseline.values.end()) {
      row.note = "not in the baseline";
    } else if (!row.baseline) {
      row.note = "baseline is a " + baseline.mode + "-mode report: no simulated time";
    } else if (!row.now) {
      row.note = "report is a " + now.mode + "-mode report: no simulated time";
    }
    if (!row.note.empty()) {
      row.verdict = Verdict::Skipped;
      ++r.skipped;
      r.rows.push_back(row);
      continue;
    }
    const double base = *row.baseline, cur = *row.now;
    const double worse = m.higher_is_better ? base - cur : cur - base;
    const double allowed = row.tolerance.relative ? row.tolerance.value / 100.0 * std::fabs(base) : row.tolerance.value;
    // A hair of slack so that a value exactly at the tolerance (after decimal
    // round trips through JSON) is not called a regression.
    const double slack = 1e-12 * std::max(1.0, std::fabs(base));
    if (worse > allowed + slack) {
      row.verdict = Verdict::Regressed;
      row.note = "worse by more than the tolerance " + row.tolerance.text();
      ++r.regressions;
    } else if (worse > 0) {
      row.verdict = Verdict::WithinTolerance;
    } else if (worse < 0) {
      row.verdict = Verdict::Improved;
    } else {
      row.verdict = Verdict::Unchanged;
    }
    r.rows.push_back(row);
  }
  return r;
}

std::string render_check_table(const CheckResult& r, const CheckSide& baseline, const CheckSide& now) {
  std::vector<std::vector<std::string>> cells = {{"metric", "baseline -> now", "delta", "tolerance", "verdict"}};
  for (const CheckRow& row : r.rows) {
    const CheckMetricDef& m = *row.metric;
    std::string values = (row.baseline ? format_value(m, *row.baseline) : "n/a") + " -> " +
                         (row.now ? format_value(m, *row.now) : "n/a");
    std::string delta = row.baseline && row.now ? format_delta(m, *row.baseline, *row.now) : "";
    std::string verdict = verdict_text(row.verdict);
    if (row.verdict == Verdict::Skipped) verdict += " (" + row.note + ")";
    cells.push_back({m.name, values, delta,
                     row.tolerance.text() + (m.higher_is_better ? ", lower is worse" : ", higher is worse"), verdict});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells)
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::string out = "check " + now.file + " against " + baseline.file + "\n";
  for (size_t k = 0; k < cells.size(); ++k) {
    for (size_t i = 0; i < cells[k].size(); ++i) {
      out += cells[k][i];
      if (i + 1 < cells[k].size()) out += std::string(width[i] - cells[k][i].size() + 3, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
    if (k == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 3;
      out += std::string(total - 3, '-') + '\n';
    }
  }
  const size_t checked = r.rows.size() - static_cast<size_t>(r.skipped);
  out += std::to_string(checked) + " metrics checked, " + std::to_string(r.regressions) + " regressed, " +
         std::to_string(r.skipped) + " skipped";
  if (baseline.mode == "cache" || now.mode == "cache")
    out += "; a cache-mode report has no latency, throughput or preemptions, so only what both sides have was checked";
  out += r.regressions ? "\nresult: REGRESSION\n" : "\nresult: ok\n";
  return out;
}

std::string render_junit(const CheckResult& r, const CheckSide& baseline, const CheckSide& now) {
  const size_t n = r.rows.size();
  std::string counts = "tests=\"" + std::to_string(n) + "\" failures=\"" + std::to_string(r.regressions) +
                       "\" errors=\"0\" skipped=\"" + std::to_string(r.skipped) + "\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"prefixsim check\" " + counts +
                    ">\n  <testsuite name=\"prefixsim check\" " + counts + ">\n";
  out += "    <properties>\n      <property name=\"report\" value=\"" + xml_escape(now.file) +
         "\"/>\n      <property name=\"baseline\" value=\"" + xml_escape(baseline.file) + "\"/>\n    </properties>\n";
  for (const CheckRow& row : r.rows) {
    const CheckMetricDef& m = *row.metric;
    out += "    <testcase classname=\"prefixsim.check\" name=\"" + xml_escape(m.name) + "\" time=\"0\">";
    std::string detail = std::string(m.field) + ": baseline " + (row.baseline ? format_value(m, *row.baseline) : "n/a") +
                         ", now " + (row.now ? format_value(m, *row.now) : "n/a");
    if (row.baseline && row.now) detail += ", delta " + format_delta(m, *row.baseline, *row.now);
    detail += ", tolerance " + row.tolerance.text();
    if (row.verdict == Verdict::Regressed)
      out += "\n      <failure type=\"regression\" message=\"" + xml_escape(std::string(m.name) + " regressed: " + row.note) +
             "\">" + xml_escape(detail) + "</failure>\n    ";
    else if (row.verdict == Verdict::Skipped)
      out += "\n      <skipped message=\"" + xml_escape(row.note) + "\"/>\n    ";
    else
      out += "\n      <system-out>" + xml_escape(detail + " (" + verdict_text(row.verdict) + ")") + "</system-out>\n    ";
    out += "</testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string render_baseline(const CheckSide& now, const std::map<std::string, Tolerance>& tolerances) {
  nlohmann::ordered_json b;
  b["schema"] = kBaselineSchema;
  b["tool"] = {{"name", "prefixsim"}, {"version", PREFIXSIM_VERSION}};
  b["source"] = now.file;
  b["mode"] = now.mode;
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const CheckMetricDef& m : check_metrics()) {
    auto it = now.values.find(m.name);
    if (it == now.values.end()) continue;
    metrics[m.name] = it->second ? nlohmann::ordered_json(*it->second) : nlohmann::ordered_json(nullptr);
  }
  b["metrics"] = metrics;
  b["scenario"] = now.setup;
  b["trace"] = now.traffic;
  if (!tolerances.empty()) {
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    for (const CheckMetricDef& m : check_metrics())
      if (auto it = tolerances.find(m.name); it != tolerances.end()) t[m.name] = it->second.text();
    b["tolerances"] = t;
  }
  return b.dump(2) + "\n";
}

}  // namespace prefixsim
