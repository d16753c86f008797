// sweep.html and plan.html: line charts of one figure against one setting,
// a line per value of another, drawn by one generic piece of JS from charts
// built here (so the page's numbers are the JSON's, in its order).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "reports/html_page.h"
#include "reports/outputs.h"
#include "reports/plan_text.h"

namespace prefixsim {
namespace {

using json = nlohmann::json;

// D.charts: [{title, x_label, y_label, labels (categorical x) or null,
// series: [{label, data}]}]; data are {x, y} points (numeric x) or y values
// aligned with labels.
constexpr const char* kLineCharts = R"JS(
D.charts.forEach(function (c, n) {
  var cat = Array.isArray(c.labels);
  charts.push(new Chart(document.getElementById('chart-' + n), {
    type: 'line',
    data: {labels: cat ? c.labels : undefined, datasets: c.series.map(function (s, i) {
      return {label: s.label, data: s.data, borderColor: COLORS[i % COLORS.length],
              backgroundColor: COLORS[i % COLORS.length], pointRadius: 3, borderWidth: 2, spanGaps: true};
    })},
    options: {parsing: cat ? undefined : false,
      scales: {x: {type: cat ? 'category' : 'linear', title: {display: true, text: c.x_label}},
               y: {title: {display: true, text: c.y_label}}}}
  }));
});
)JS";

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

json y_of(const json& row, const std::string& metric) {
  if (!row.contains(metric) || !row[metric].is_number()) return nullptr;
  const double v = row[metric].get<double>();
  return metric == "hit_rate" || metric == "block_hit_rate" ? json(100.0 * v) : json(v);
}

std::string y_label(const std::string& metric) {
  return metric == "hit_rate" || metric == "block_hit_rate" ? metric + " (%)" : metric;
}

// One chart over rows (each with "params"): `metric` against `x`, a line
// per value of `lines` ("" = one line), rows whose `fixed` params differ
// from `fixed_at` left out.
json line_chart(const json& rows, const std::string& metric, const std::string& x, const std::string& lines,
                const std::vector<std::string>& fixed, const json& fixed_at, std::string title) {
  bool numeric = true;
  std::vector<json> kept;
  for (const json& r : rows) {
    bool same = true;
    for (const std::string& k : fixed) same = same && r["params"][k] == fixed_at[k];
    if (!same) continue;
    kept.push_back(r);
    numeric = numeric && r["params"][x].is_number();
  }
  std::vector<std::string> labels, order;
  std::map<std::string, json> series;
  for (const json& r : kept) {
    const std::string xl = text_of(r["params"][x]);
    if (std::find(labels.begin(), labels.end(), xl) == labels.end()) labels.push_back(xl);
    const std::string line = lines.empty() ? metric : lines + "=" + text_of(r["params"][lines]);
    if (!series.count(line)) order.push_back(line), series[line] = json::array();
  }
  for (const json& r : kept) {
    const std::string line = lines.empty() ? metric : lines + "=" + text_of(r["params"][lines]);
    if (numeric) {
      series[line].push_back({{"x", r["params"][x]}, {"y", y_of(r, metric)}});
    } else {
      json& d = series[line];
      while (d.size() < labels.size()) d.push_back(nullptr);
      const size_t at = static_cast<size_t>(std::find(labels.begin(), labels.end(), text_of(r["params"][x])) - labels.begin());
      d[at] = y_of(r, metric);
    }
  }
  json c{{"title", std::move(title)}, {"x_label", x}, {"y_label", y_label(metric)},
         {"labels", numeric ? json(nullptr) : json(labels)}, {"series", json::array()}};
  for (const std::string& l : order) c["series"].push_back({{"label", l}, {"data", series[l]}});
  return c;
}

std::string cell(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_number_float()) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
    return buf;
  }
  return html_escape(text_of(v));
}

}  // namespace

std::string render_sweep_html(const json& sweep) {
  std::string out = page_head("prefixsim sweep");
  const json rows = sweep.value("results", json::array());
  std::vector<std::string> axes;
  for (const json& a : sweep.value("axes", json::array())) axes.push_back(a.get<std::string>());
  out += "<h1>prefixsim sweep</h1>\n<p class=\"sub\">" + std::to_string(sweep.value("points_done", 0)) + " of " +
         std::to_string(sweep.value("points_total", 0)) + " points</p>\n";
  json charts = json::array();
  for (const json& c : sweep.value("charts", json::array())) {
    if (rows.empty()) break;
    const std::string metric = c["metric"], x = c["x"], lines = c.value("lines", "");
    std::vector<std::string> fixed;
    std::string note;
    for (const std::string& a : axes)
      if (a != x && a != lines) {
        fixed.push_back(a);
        note += (note.empty() ? " (" : ", ") + a + "=" + text_of(rows[0]["params"][a]);
      }
    if (!note.empty()) note += ")";
    charts.push_back(line_chart(rows, metric, x, lines, fixed, rows[0]["params"], metric + " against " + x + note));
  }
  out += "<h2>Charts</h2>\n";
  for (size_t i = 0; i < charts.size(); ++i)
    out += "<p>" + html_escape(charts[i]["title"].get<std::string>()) +
           "</p>\n<div class=\"chart\"><canvas id=\"chart-" + std::to_string(i) + "\"></canvas></div>\n";
  out += "<h2>Points</h2>\n<table>\n<tr>";
  for (const std::string& a : axes) out += "<th>" + html_escape(a) + "</th>";
  std::vector<std::string> cols;
  for (const json& c : sweep.value("columns", json::array())) cols.push_back(c.get<std::string>());
  for (const std::string& c : cols) out += "<th>" + html_escape(c) + "</th>";
  out += "</tr>\n";
  for (const json& r : rows) {
    out += "<tr>";
    for (const std::string& a : axes) out += "<td>" + cell(r["params"][a]) + "</td>";
    for (const std::string& c : cols) out += "<td>" + cell(r.value(c, json(nullptr))) + "</td>";
    out += "</tr>\n";
  }
  out += "</table>\n<h2>Base scenario</h2>\n<pre>" + html_escape(sweep.value("base", json::object()).dump(2)) +
         "</pre>\n";
  out += page_tail(json{{"charts", charts}}, kLineCharts);
  return out;
}

std::string render_plan_html(const json& plan) {
  std::string out = page_head("prefixsim plan");
  out += "<h1>prefixsim plan</h1>\n<p class=\"sub\">" + html_escape(plan.value("summary", std::string())) + "</p>\n";
  // The runs as rows with params {replicas, fleet}: one line per TP and offload.
  json rows = json::array();
  for (const json& r : plan.value("runs", json::array())) {
    json row = r;
    row["params"] = {{"replicas", r["replicas"]}, {"fleet", r.value("fleet", std::string())}};
    rows.push_back(std::move(row));
  }
  json charts = json::array();
  for (const json& s : plan.value("slo", json::array()))
    charts.push_back(line_chart(rows, s["metric"], "replicas", "fleet", {}, json::object(),
                                s["metric"].get<std::string>() + " against replicas (SLO " + s["text"].get<std::string>() + ")"));
  out += "<h2>Runs behind the answer</h2>\n";
  for (size_t i = 0; i < charts.size(); ++i)
    out += "<p>" + html_escape(charts[i]["title"].get<std::string>()) +
           "</p>\n<div class=\"chart\"><canvas id=\"chart-" + std::to_string(i) + "\"></canvas></div>\n";
  out += "<table>\n<tr><th>fleet</th><th>replicas</th><th>router</th><th>meets</th><th>TTFT p99 ms</th><th>hit rate</th>"
         "<th>cost</th></tr>\n";
  for (const json& r : plan.value("runs", json::array()))
    out += "<tr><td>" + cell(r.value("fleet", json(nullptr))) + "</td><td>" +
           (r.contains("prefill_replicas") || r.contains("groups") ? html_escape(plan_size_text(r)) : cell(r["replicas"])) + "</td><td>" +
           cell(r.value("router", json(nullptr))) + "</td><td>" + (r.value("meets", false) ? "yes" : "no") +
           "</td><td>" + cell(r.value("ttft_p99_ms", json(nullptr))) + "</td><td>" +
           cell(r.value("hit_rate", json(nullptr))) + "</td><td>" + cell(r.value("cost", json(nullptr))) + "</td></tr>\n";
  out += "</table>\n<h2>plan.json</h2>\n<pre>" + html_escape(plan.value("answer", json(nullptr)).dump(2)) + "</pre>\n";
  out += page_tail(json{{"charts", charts}}, kLineCharts);
  return out;
}

}  // namespace prefixsim
