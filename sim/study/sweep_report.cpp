#include "sim/study/sweep_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "prefixsim_config.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"

namespace prefixsim {
namespace {

using ojson = nlohmann::ordered_json;

bool all_numeric(const std::vector<GridPoint>& points, const std::string& key) {
  for (const GridPoint& p : points)
    if (!p.params[key].is_number()) return false;
  return true;
}

// The charts the grid asks for, or: hit rate (and TTFT p99 in engine mode)
// against the first numeric axis, a line per value of the next axis.
ojson charts_of(const Grid& g, const std::vector<GridPoint>& points) {
  ojson out = ojson::array();
  for (const GridChart& c : g.charts) out.push_back({{"metric", c.metric}, {"x", c.x}, {"lines", c.lines}});
  if (!out.empty() || g.axis_keys.empty()) return out;
  std::string x = g.axis_keys[0];
  for (const std::string& k : g.axis_keys)
    if (all_numeric(points, k)) {
      x = k;
      break;
    }
  std::string lines;
  for (const std::string& k : g.axis_keys)
    if (k != x) {
      lines = k;
      break;
    }
  bool engine = false;
  for (const GridPoint& p : points) engine = engine || p.scenario.mode == "engine";
  out.push_back({{"metric", "hit_rate"}, {"x", x}, {"lines", lines}});
  if (engine) out.push_back({{"metric", "ttft_p99_ms"}, {"x", x}, {"lines", lines}});
  return out;
}

std::string csv_field(const ojson& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();
  const std::string s = v.get<std::string>();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string md_value(const ojson& v, const char* fmt, double scale = 1) {
  if (!v.is_number()) return v.is_null() ? "-" : v.is_string() ? v.get<std::string>() : v.dump();
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v.get<double>() * scale);
  return buf;
}

}  // namespace

ojson sweep_json(const Grid& g, const std::vector<GridPoint>& points, const std::vector<std::string>& rows) {
  ojson j;
  j["schema"] = "prefixsim.sweep/1";
  j["tool"] = {{"name", "prefixsim"}, {"version", PREFIXSIM_VERSION}};
  j["base"] = g.base_json;
  j["axes"] = g.axis_keys;
  j["columns"] = sweep_metric_names();
  j["charts"] = charts_of(g, points);
  j["points_total"] = points.size();
  size_t done = 0;
  ojson results = ojson::array();
  for (const std::string& row : rows)
    if (!row.empty()) {
      results.push_back(ojson::parse(row));
      ++done;
    }
  j["points_done"] = done;
  j["results"] = std::move(results);
  return j;
}

std::string sweep_csv(const ojson& sweep) {
  std::string out;
  std::vector<std::string> cols;
  for (const auto& k : sweep["axes"]) cols.push_back(k.get<std::string>());
  const size_t params = cols.size();
  for (const auto& k : sweep["columns"]) cols.push_back(k.get<std::string>());
  for (size_t c = 0; c < cols.size(); ++c) out += (c ? "," : "") + cols[c];
  out += "\n";
  for (const ojson& row : sweep["results"]) {
    for (size_t c = 0; c < cols.size(); ++c) {
      const ojson& v = c < params ? row["params"][cols[c]] : row[cols[c]];
      out += (c ? "," : "") + csv_field(v);
    }
    out += "\n";
  }
  return out;
}

std::string sweep_md(const ojson& sweep) {
  std::string out = "# prefixsim sweep\n\n";
  out += std::to_string(sweep["points_done"].get<size_t>()) + " of " +
         std::to_string(sweep["points_total"].get<size_t>()) + " points";
  out += sweep["axes"].empty() ? " (no axes: the base scenario alone)" : ", axes: ";
  for (size_t i = 0; i < sweep["axes"].size(); ++i)
    out += (i ? ", " : "") + std::string("`") + sweep["axes"][i].get<std::string>() + "`";
  out += ". Base scenario: `" + sweep["base"].dump() + "`.\n\n";
  struct Col { const char* key; const char* head; const char* fmt; double scale; };
  const Col cols[] = {{"hit_rate", "hit rate %", "%.2f", 100},   {"block_hit_rate", "block hit %", "%.2f", 100},
                      {"ttft_p50_ms", "TTFT p50 ms", "%.1f", 1}, {"ttft_p99_ms", "TTFT p99 ms", "%.1f", 1},
                      {"e2e_p99_ms", "e2e p99 ms", "%.1f", 1},   {"num_blocks", "KV blocks", "%.0f", 1},
                      {"evictions", "evictions", "%.0f", 1},     {"refused_requests", "refused", "%.0f", 1},
                      {"imbalance", "imbalance", "%.2f", 1}};
  out += "|";
  for (const auto& k : sweep["axes"]) out += " " + k.get<std::string>() + " |";
  for (const Col& c : cols) out += std::string(" ") + c.head + " |";
  out += "\n|";
  for (size_t i = 0; i < sweep["axes"].size(); ++i) out += " --- |";
  for (size_t i = 0; i < std::size(cols); ++i) out += " ---: |";
  out += "\n";
  for (const ojson& row : sweep["results"]) {
    out += "|";
    for (const auto& k : sweep["axes"]) out += " " + md_value(row["params"][k.get<std::string>()], "%g") + " |";
    for (const Col& c : cols) out += " " + md_value(row[c.key], c.fmt, c.scale) + " |";
    out += "\n";
  }
  return out;
}

std::vector<std::string> resumable_rows(const std::string& path, const Grid& g, const std::vector<GridPoint>& points) {
  std::vector<std::string> rows(points.size());
  ojson old;
  try {
    old = ojson::parse(read_whole_file(path, "--resume", true));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": --resume: not a sweep.json (" + e.what() + ")");
  }
  if (!old.is_object() || old.value("schema", "") != "prefixsim.sweep/1" || !old["results"].is_array())
    throw InputError(path + ": --resume: not a prefixsim.sweep/1 file");
  // Compared as plain JSON: key order is the writer's, not the meaning.
  if (nlohmann::json(old["base"]) != nlohmann::json(g.base_json))
    throw InputError(path + ": --resume: made from another base scenario than " + g.path +
                     " (its points would not be comparable); remove it or write to another --out");
  if (old["columns"] != ojson(sweep_metric_names()))
    throw InputError(path + ": --resume: written by another version of sweep (other columns); run it afresh");
  // Every kept row is checked as strictly as a fresh one is made: a point
  // of this grid, once, with every column a number or null and nothing
  // else. A sweep is only ever extended; rows are never dropped or trusted.
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < points.size(); ++i) index[nlohmann::json(points[i].params).dump()] = i;
  std::vector<size_t> from_row(points.size(), 0);
  const std::vector<std::string>& columns = sweep_metric_names();
  for (size_t k = 0; k < old["results"].size(); ++k) {
    const ojson& row = old["results"][k];
    const std::string at = path + ": --resume: results[" + std::to_string(k) + "]";
    if (!row.is_object() || !row.contains("params") || !row["params"].is_object())
      throw InputError(at + ": not a sweep row (an object with params)");
    auto it = index.find(nlohmann::json(row["params"]).dump());
    if (it == index.end())
      throw InputError(at + ": params " + row["params"].dump() + " are not a point of " + g.path +
                       " (resume only extends a sweep; write to another --out to drop points)");
    if (from_row[it->second])
      throw InputError(at + ": repeats the params of results[" + std::to_string(from_row[it->second] - 1) + "]");
    from_row[it->second] = k + 1;
    for (auto f = row.begin(); f != row.end(); ++f)
      if (f.key() != "params" && std::find(columns.begin(), columns.end(), f.key()) == columns.end())
        throw InputError(at + ": unknown field '" + f.key() + "'");
    for (const std::string& c : columns) {
      if (!row.contains(c)) throw InputError(at + ": no " + c);
      if (!row[c].is_number() && !row[c].is_null())
        throw InputError(at + "." + c + ": expected a number or null, got " + row[c].dump());
    }
    ojson kept = row;
    kept["params"] = points[it->second].params;  // in the grid's key order
    rows[it->second] = kept.dump();
  }
  return rows;
}

}  // namespace prefixsim
