#include "reports/validate_report.h"

#include <cmath>
#include <cstdio>

#include "reports/html_page.h"

namespace prefixsim {
namespace {

using nlohmann::ordered_json;

std::string pct(const ordered_json& v, bool sign) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f %%" : "%.1f %%", 100.0 * v.get<double>());
  return buf;
}

std::string num(const ordered_json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
  return buf;
}

const char* const kMeans[] = {"ttft_mean", "e2e_mean", "tpot_mean"};

std::string summary_table_md(const ordered_json& s) {
  std::string out = "| metric | runs | median abs error | worst abs error | median signed error |\n"
                    "| --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [name, m] : s["metrics"].items())
    out += "| " + name + " | " + m["runs"].dump() + " | " + pct(m["median_abs_error"], false) + " | " +
           pct(m["max_abs_error"], false) + " | " + pct(m["median_error"], true) + " |\n";
  return out;
}

std::string runs_table_md(const ordered_json& runs) {
  std::string out =
      "| run | model | GPU | TP x replicas | measured at | TTFT mean ms (error) | E2E mean ms (error) | "
      "TPOT mean ms (error) | note |\n| --- | --- | --- | --- | --- | ---: | ---: | ---: | --- |\n";
  for (const ordered_json& r : runs) {
    out += "| " + r["id"].get<std::string>() + " | " + r["model"].get<std::string>() + " | " +
           r["gpu"].get<std::string>() + " | " + r["tp"].dump() + " x " + r["replicas"].dump() + " | " +
           r["latency_measured_at"].get<std::string>();
    for (const char* m : kMeans) {
      if (!r["metrics"].contains(m)) {
        out += " | -";
        continue;
      }
      const ordered_json& x = r["metrics"][m];
      out += " | " + num(x["measured"]) + " -> " + num(x["predicted"]) + " (" + pct(x["error"], true) + ")";
    }
    out += " | " + (r["saturated"].get<bool>() ? "saturated: " + r["saturation"].get<std::string>() : std::string()) +
           " |\n";
  }
  return out;
}

ordered_json split_runs(const ordered_json& runs, bool saturated) {
  ordered_json out = ordered_json::array();
  for (const ordered_json& r : runs)
    if (r["saturated"].get<bool>() == saturated) out.push_back(r);
  return out;
}

}  // namespace

std::string render_validate_md(const ordered_json& doc, const std::string& title) {
  std::string out = "# " + title + "\n\n";
  const ordered_json& s = doc["summary"];
  out += std::to_string(s["completed_runs"].get<int64_t>()) + " completed runs, " +
         std::to_string(s["saturated_runs"].get<int64_t>()) +
         " saturated (reported apart). Errors are (predicted - measured) / measured.\n\n";
  out += summary_table_md(s) + "\n## Runs, worst first\n\n" + runs_table_md(split_runs(doc["runs"], false));
  const ordered_json sat = split_runs(doc["runs"], true);
  if (!sat.empty()) out += "\n## Saturated runs (not in the summary)\n\n" + runs_table_md(sat);
  out += "\n## Cost model\n\n```json\n" + doc["cost_model"].dump(2) + "\n```\n";
  return out;
}

std::string render_validate_html(const ordered_json& doc, const std::string& title) {
  std::string out = page_head(title);
  out += "<h1>" + html_escape(title) + "</h1>\n<p class=\"sub\">" +
         std::to_string(doc["summary"]["completed_runs"].get<int64_t>()) + " completed runs, " +
         std::to_string(doc["summary"]["saturated_runs"].get<int64_t>()) +
         " saturated; each point one run and metric, predicted against measured (the diagonal is exact)</p>\n";
  ordered_json charts = ordered_json::array();
  for (const char* m : kMeans) {
    ordered_json pts = ordered_json::array();
    for (const ordered_json& r : doc["runs"])
      if (r["metrics"].contains(m) && r["metrics"][m]["predicted"].is_number())
        pts.push_back({{"x", r["metrics"][m]["measured"]}, {"y", r["metrics"][m]["predicted"]}, {"id", r["id"]},
                       {"saturated", r["saturated"]}});
    charts.push_back({{"metric", m}, {"points", pts}});
    out += "<p>" + std::string(m) + " (ms): predicted against measured</p>\n<div class=\"chart\"><canvas id=\"chart-" +
           std::to_string(charts.size() - 1) + "\"></canvas></div>\n";
  }
  out += "<h2>Summary</h2>\n<table>\n<tr><th>metric</th><th>runs</th><th>median |error|</th><th>worst |error|</th>"
         "<th>median error</th></tr>\n";
  for (const auto& [name, m] : doc["summary"]["metrics"].items())
    out += "<tr><td>" + html_escape(name) + "</td><td>" + m["runs"].dump() + "</td><td>" +
           pct(m["median_abs_error"], false) + "</td><td>" + pct(m["max_abs_error"], false) + "</td><td>" +
           pct(m["median_error"], true) + "</td></tr>\n";
  out += "</table>\n<h2>Runs, worst first</h2>\n<table>\n<tr><th>run</th><th>model</th><th>GPU</th><th>TP</th>"
         "<th>TTFT mean</th><th>E2E mean</th><th>TPOT mean</th><th>saturated</th></tr>\n";
  for (const ordered_json& r : doc["runs"]) {
    out += "<tr><td>" + html_escape(r["id"].get<std::string>()) + "</td><td>" +
           html_escape(r["model"].get<std::string>()) + "</td><td>" + html_escape(r["gpu"].get<std::string>()) +
           "</td><td>" + r["tp"].dump() + "</td>";
    for (const char* m : kMeans)
      out += "<td>" + (r["metrics"].contains(m) ? pct(r["metrics"][m]["error"], true) : std::string("-")) + "</td>";
    out += "<td>" + std::string(r["saturated"].get<bool>() ? "yes" : "") + "</td></tr>\n";
  }
  out += "</table>\n";
  static const char* kScatter = R"JS(
D.charts.forEach(function (c, n) {
  var lo = Infinity, hi = 0;
  c.points.forEach(function (p) { lo = Math.min(lo, p.x, p.y); hi = Math.max(hi, p.x, p.y); });
  charts.push(new Chart(document.getElementById('chart-' + n), {
    type: 'scatter',
    data: {datasets: [
      {label: 'completed', data: c.points.filter(function (p) { return !p.saturated; }),
       backgroundColor: COLORS[0], pointRadius: 4},
      {label: 'saturated', data: c.points.filter(function (p) { return p.saturated; }),
       backgroundColor: COLORS[1], pointRadius: 4},
      {label: 'exact', type: 'line', data: [{x: lo, y: lo}, {x: hi, y: hi}], borderColor: '#999',
       pointRadius: 0, borderWidth: 1}]},
    options: {parsing: false,
      plugins: {tooltip: {callbacks: {label: function (ctx) { var p = ctx.raw;
        return (p.id || '') + ': measured ' + p.x.toFixed(1) + ', predicted ' + p.y.toFixed(1); }}}},
      scales: {x: {type: 'logarithmic', title: {display: true, text: 'measured ms'}},
               y: {type: 'logarithmic', title: {display: true, text: 'predicted ms'}}}}
  }));
});
)JS";
  out += page_tail(nlohmann::json::parse(ordered_json{{"charts", charts}}.dump()), kScatter);
  return out;
}

std::string render_validate_terminal(const ordered_json& doc) {
  const ordered_json& s = doc["summary"];
  std::string out = std::to_string(s["completed_runs"].get<int64_t>()) + " completed runs (" +
                    std::to_string(s["saturated_runs"].get<int64_t>()) + " saturated, reported apart)\n";
  for (const char* m : kMeans)
    if (s["metrics"].contains(m))
      out += "  " + std::string(m) + ": median |error| " + pct(s["metrics"][m]["median_abs_error"], false) +
             ", worst " + pct(s["metrics"][m]["max_abs_error"], false) + ", median " +
             pct(s["metrics"][m]["median_error"], true) + "\n";
  for (const ordered_json& r : doc["runs"])
    if (!r["saturated"].get<bool>()) {
      out += "  worst run: " + r["id"].get<std::string>() + " (" + r["model"].get<std::string>() + " on " +
             r["gpu"].get<std::string>() + ", worst |error| " + pct(r["worst_abs_error"], false) + ")\n";
      break;
    }
  return out;
}

}  // namespace prefixsim
