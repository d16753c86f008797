// report.html (one run) and compare.html (policies x capacities): single
// self-contained pages. Chart.js is inlined from the copy embedded at build
// time; the data sits in a <script type="application/json"> element; nothing
// is fetched, so the page opens offline and from a CI artifact.
//
// Every page carries a small self-check: it records in
// <div id="render-status"> how many charts exist, how many canvases have
// non-blank pixels, and every window error or console.error. The browser
// test reads it back; a reader never sees it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>

#include "reports/html_page.h"
#include "reports/outputs.h"

namespace prefixsim {

std::string_view chartjs_source();  // generated: reports/embed_text.py

namespace {

using json = nlohmann::json;

// JSON inside <script>: "</" would close the element; "<\/" is the same JSON.
std::string script_json(const json& j) {
  const std::string s = j.dump();
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string num(const char* f, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string pct(double v) { return std::isfinite(v) ? num("%.2f %%", v * 100) : "n/a"; }
json nullable(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

constexpr const char* kStyle = R"(<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;color:#1d2433;background:#fff}
h1{font-size:24px;margin-bottom:4px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #dde3ec;padding-bottom:4px}
.sub{color:#5b6678;margin-top:0} .cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{border:1px solid #dde3ec;border-radius:8px;padding:10px 16px;min-width:150px}
.card .v{font-size:22px;font-weight:600} .card .k{color:#5b6678;font-size:13px}
table{border-collapse:collapse;margin:8px 0;font-size:14px} td,th{border:1px solid #dde3ec;padding:4px 10px;text-align:right}
th{background:#f3f6fa} td:first-child,th:first-child{text-align:left} .best{font-weight:700;color:#0b6e4f}
.chart{position:relative;height:340px;margin:8px 0 20px} .note{color:#5b6678;font-style:italic}
pre{background:#f6f8fa;border:1px solid #dde3ec;border-radius:6px;padding:12px;overflow:auto;font-size:12px}
table.settings td,table.settings th{text-align:left;vertical-align:top} table.settings td:last-child{max-width:900px;overflow-wrap:anywhere}
table.settings pre{margin:4px 0;max-height:320px}
</style>
)";

// Installed before Chart.js so that nothing which goes wrong is missed.
constexpr const char* kErrorCapture = R"(<script>
window.__prefixsimErrors = [];
window.addEventListener('error', function (e) { window.__prefixsimErrors.push('error: ' + e.message); });
window.addEventListener('unhandledrejection', function (e) { window.__prefixsimErrors.push('rejection: ' + e.reason); });
(function () {
  var orig = console.error;
  console.error = function () {
    window.__prefixsimErrors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return orig.apply(console, arguments);
  };
})();
</script>
)";

// Runs after the charts were created (animation is off, so they draw at once).
constexpr const char* kSelfCheck = R"(<script>
function prefixsimSelfCheck(charts) {
  var drawn = 0, points = 0;
  charts.forEach(function (c) {
    var cv = c.canvas, px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data, ink = false;
    for (var i = 3; i < px.length; i += 4) if (px[i] !== 0) { ink = true; break; }
    if (ink) drawn++;
    c.data.datasets.forEach(function (d) { points += d.data.length; });
  });
  var el = document.getElementById('render-status');
  el.setAttribute('data-charts', String(charts.length));
  el.setAttribute('data-canvases', String(document.querySelectorAll('canvas').length));
  el.setAttribute('data-drawn', String(drawn));
  el.setAttribute('data-points', String(points));
  el.setAttribute('data-errors', String(window.__prefixsimErrors.length));
  el.textContent = window.__prefixsimErrors.join('\n');
  el.setAttribute('data-done', 'yes');
}
</script>
)";

void card(std::string& out, const std::string& value, const std::string& key) {
  out += "<div class=\"card\"><div class=\"v\">" + html_escape(value) + "</div><div class=\"k\">" + html_escape(key) +
         "</div></div>\n";
}

void latency_tr(std::string& out, const char* name, const LatencySummary& s) {
  out += "<tr><td>";
  out += name;
  out += "</td>";
  for (double v : {s.mean, s.p50, s.p90, s.p95, s.p99, s.max}) out += "<td>" + num("%.2f", v) + "</td>";
  out += "</tr>\n";
}

// The series for the charts, merged into at most max_rows groups of
// consecutive intervals: tokens summed (the group's hit rate), gauges averaged.
json chart_series(const RunReport& r, size_t max_rows = 1500) {
  const size_t n = r.series.size();
  const size_t k = n > max_rows ? (n + max_rows - 1) / max_rows : 1;
  json start = json::array(), hit = json::array(), kv = json::array(), waiting = json::array(),
       running = json::array(), tier_hit = json::array();
  const bool tiers = !r.tiers.empty();
  const size_t fleet = n ? r.series.front().replicas.size() : 0;
  std::vector<json> replica_kv(fleet, json::array());
  for (size_t i = 0; i < n; i += k) {
    const size_t end = std::min(n, i + k);
    uint64_t q = 0, h = 0, th = 0;
    double kvs = 0, w = 0, ru = 0;
    for (size_t j = i; j < end; ++j) {
      q += r.series[j].queried_tokens;
      h += r.series[j].hit_tokens;
      th += r.series[j].tier_hit_tokens;
      kvs += r.series[j].kv_usage;
      w += static_cast<double>(r.series[j].waiting);
      ru += static_cast<double>(r.series[j].running);
    }
    const double m = static_cast<double>(end - i);
    start.push_back(r.series[i].start);
    hit.push_back(q ? json(100.0 * static_cast<double>(h) / static_cast<double>(q)) : json(nullptr));
    if (tiers) tier_hit.push_back(q ? json(100.0 * static_cast<double>(h + th) / static_cast<double>(q)) : json(nullptr));
    kv.push_back(100.0 * kvs / m);
    waiting.push_back(w / m);
    running.push_back(ru / m);
    for (size_t f = 0; f < fleet; ++f) {
      double u = 0;
      for (size_t j = i; j < end; ++j) u += r.series[j].replicas[f].kv_usage;
      replica_kv[f].push_back(100.0 * u / m);
    }
  }
  json out{{"start", start}, {"hit_rate_pct", hit}, {"kv_usage_pct", kv}, {"waiting", waiting}, {"running", running}};
  if (fleet) out["replica_kv_pct"] = replica_kv;
  if (tiers) out["hit_with_tiers_pct"] = tier_hit;
  return out;
}

constexpr const char* kRunCharts = R"JS(
var xTitle = D.axis === 'request' ? 'request (arrival order)' : 'simulated time (s)';
function xy(xs, ys) { return xs.map(function (x, i) { return {x: x, y: ys[i]}; }); }
function lineChart(id, datasets, yTitle, yOpts, xOpts) {
  var el = document.getElementById(id);
  if (!el) return;
  charts.push(new Chart(el, {
    type: 'line',
    data: {datasets: datasets},
    options: {
      parsing: false, spanGaps: true,
      elements: {point: {radius: 0}, line: {borderWidth: 2}},
      interaction: {mode: 'nearest', axis: 'x', intersect: false},
      scales: {x: Object.assign({type: 'linear', title: {display: true, text: xTitle}}, xOpts || {}),
               y: Object.assign({title: {display: true, text: yTitle}}, yOpts || {})}
    }
  }));
}
var S = D.series;
// KV usage on its own axis (right): a pool that never fills reads as a
// line, not as the floor of the hit rate's 0-100 % axis.
lineChart('chart-hit-kv', [
  {label: 'prefix-cache hit rate (%, left)', data: xy(S.start, S.hit_rate_pct), borderColor: COLORS[0],
   backgroundColor: COLORS[0], yAxisID: 'y'},
  {label: 'KV cache usage (%, right)', data: xy(S.start, S.kv_usage_pct), borderColor: COLORS[1],
   backgroundColor: COLORS[1], yAxisID: 'y2'}
], 'hit rate (%)', {min: 0, max: 100});
var hk = charts.length ? charts[charts.length - 1] : null;
if (hk && hk.canvas.id === 'chart-hit-kv') {
  hk.options.scales.y2 = {position: 'right', min: 0, suggestedMax: 1, grid: {drawOnChartArea: false},
                          title: {display: true, text: 'KV cache usage (%)'}};
  hk.update();
}
if (D.ttft_cdf.length) {
  var cdf = D.ttft_cdf.map(function (p) { return {x: p[0], y: 100 * p[1]}; });
  var marks = ['p50', 'p90', 'p95', 'p99'].map(function (k) {
    return {x: D.ttft_pct[k], y: Number(k.slice(1)), label: k};
  }).filter(function (p) { return p.x !== null; });
  var logX = cdf.length > 1 && cdf[0].x > 0 && cdf[cdf.length - 1].x / cdf[0].x > 50;
  xTitle = 'TTFT (ms)';
  lineChart('chart-ttft-cdf', [
    {label: 'TTFT CDF (% of requests)', data: cdf, borderColor: COLORS[2], backgroundColor: COLORS[2], stepped: true},
    {label: 'percentiles', data: marks, type: 'scatter', showLine: false, pointRadius: 6,
     borderColor: COLORS[3], backgroundColor: COLORS[3]}
  ], '% of requests with TTFT <= x', {min: 0, max: 100}, logX ? {type: 'logarithmic'} : {});
  xTitle = D.axis === 'request' ? 'request (arrival order)' : 'simulated time (s)';
  lineChart('chart-queue', [
    {label: 'waiting (queue length)', data: xy(S.start, S.waiting), borderColor: COLORS[4], backgroundColor: COLORS[4]},
    {label: 'running', data: xy(S.start, S.running), borderColor: COLORS[5], backgroundColor: COLORS[5]}
  ], 'requests', {min: 0});
}
)JS";

// A fleet's charts, added to kRunCharts only for a fleet (a one-replica
// page stays byte-identical to the page before fleets).
constexpr const char* kFleetCharts = R"JS(
if (D.replicas && D.replicas.length) {
  var names = D.replicas.map(function (x, i) { return 'replica ' + i; });
  charts.push(new Chart(document.getElementById('chart-replicas'), {
    type: 'bar',
    data: {labels: names, datasets: [
      {label: 'requests', data: D.replicas.map(function (x) { return x.requests; }), backgroundColor: COLORS[0], yAxisID: 'y'},
      {label: 'hit rate (%)', data: D.replicas.map(function (x) { return x.hit_rate_pct; }), backgroundColor: COLORS[1], yAxisID: 'y1'}
    ]},
    options: {scales: {y: {position: 'left', min: 0, title: {display: true, text: 'requests'}},
                       y1: {position: 'right', min: 0, max: 100, grid: {drawOnChartArea: false},
                            title: {display: true, text: 'hit rate (%)'}}}}
  }));
  heatMap('chart-replica-kv', S.start, S.replica_kv_pct, names);
}
// KV usage per replica as a heat map: a row per replica, a column per
// interval of the series, darker = fuller, scaled to the fleet's highest
// usage (the legend says which): legible at 64 replicas, where 64
// overlapping lines are not. Pushed onto `charts` so the self-check sees it.
function heatMap(id, xs, rows, names) {
  var cv = document.getElementById(id);
  if (!cv) return;
  var n = rows.length, m = xs.length, rowH = Math.max(4, Math.min(22, Math.floor(440 / Math.max(n, 1))));
  var left = 86, right = 110, top = 6, axis = 40, W = Math.max(400, cv.parentElement.clientWidth || 1000);
  cv.width = W;
  cv.height = top + n * rowH + axis;
  cv.style.width = W + 'px';
  cv.style.height = cv.height + 'px';
  var ctx = cv.getContext('2d'), max = 0, cells = [];
  rows.forEach(function (r) { r.forEach(function (v) { if (v > max) max = v; }); });
  if (!(max > 0)) max = 1;
  var shade = function (t) { return 'rgba(31,119,180,' + (0.06 + 0.94 * t).toFixed(3) + ')'; };
  var w = (W - left - right) / Math.max(m, 1);
  for (var f = 0; f < n; ++f)
    for (var i = 0; i < m; ++i) {
      var v = rows[f][i] || 0;
      ctx.fillStyle = shade(v / max);
      ctx.fillRect(left + i * w, top + f * rowH, Math.ceil(w), rowH > 6 ? rowH - 1 : rowH);
      cells.push(v);
    }
  ctx.fillStyle = '#333';
  ctx.font = '11px sans-serif';
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  var every = Math.max(1, Math.ceil(12 / rowH));
  for (var g = 0; g < n; g += every) ctx.fillText(names[g], left - 6, top + g * rowH + rowH / 2);
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (var k = 0; k <= 5 && m > 0; ++k) {
    var j = Math.round(k * (m - 1) / 5);
    ctx.fillText(String(Math.round(xs[j])), left + (j + 0.5) * w, top + n * rowH + 4);
  }
  ctx.fillText('simulated time (s)', left + (W - left - right) / 2, top + n * rowH + 22);
  // The scale: 0 at the bottom, the highest usage at the top.
  var lx = W - right + 24, lh = Math.min(n * rowH, 160);
  for (var y = 0; y < lh; ++y) {
    ctx.fillStyle = shade(1 - y / lh);
    ctx.fillRect(lx, top + y, 14, 1);
  }
  ctx.fillStyle = '#333';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(max.toFixed(max < 10 ? 2 : 0) + ' %', lx + 18, top + 4);
  ctx.fillText('0 %', lx + 18, top + lh - 4);
  charts.push({canvas: cv, data: {datasets: [{data: cells}]}});
}
)JS";

// KV tiers' chart, added only when the run has tiers: the hit rate split
// into the GPU's and what the tiers added, over time.
constexpr const char* kTierCharts = R"JS(
if (S.hit_with_tiers_pct) {
  lineChart('chart-tiers', [
    {label: 'GPU prefix cache (%)', data: xy(S.start, S.hit_rate_pct), borderColor: COLORS[0],
     backgroundColor: COLORS[0], fill: 'origin'},
    {label: 'GPU + KV tiers below it (%)', data: xy(S.start, S.hit_with_tiers_pct), borderColor: COLORS[2],
     backgroundColor: COLORS[2], fill: '-1'}
  ], 'hit rate (%)', {min: 0, max: 100});
}
)JS";

// The real backend's modeled-against-measured steps (--shadow), added only
// when the run has them: a point per step, the diagonal where the model is
// exact; log axes when the steps span more than 50x.
constexpr const char* kShadowCharts = R"JS(
if (D.shadow && D.shadow.points.length) {
  var pts = D.shadow.points.map(function (p) { return {x: p[0], y: p[1]}; });
  var lo = Infinity, hi = 0;
  pts.forEach(function (p) { lo = Math.min(lo, p.x, p.y); hi = Math.max(hi, p.x, p.y); });
  var log = lo > 0 && hi / lo > 50, axis = log ? {type: 'logarithmic'} : {type: 'linear', min: 0};
  charts.push(new Chart(document.getElementById('chart-shadow'), {
    type: 'scatter',
    data: {datasets: [
      {label: 'steps (' + D.shadow.points.length + ' of ' + D.shadow.steps + ')', data: pts, pointRadius: 2,
       borderColor: COLORS[0], backgroundColor: COLORS[0]},
      {label: 'modeled = measured', type: 'line', data: [{x: log ? lo : 0, y: log ? lo : 0}, {x: hi, y: hi}],
       pointRadius: 0, borderColor: COLORS[1], backgroundColor: COLORS[1], borderDash: [6, 4]}
    ]},
    options: {parsing: false,
              scales: {x: Object.assign({title: {display: true, text: 'measured step time (ms)'}}, axis),
                       y: Object.assign({title: {display: true, text: 'modeled step time (ms)'}}, axis)}}
  }));
}
)JS";

// A curve per policy against capacity; past the palette's 20 colours the
// curves are dashed, so no two of up to 40 look the same.
constexpr const char* kCompareCharts = R"JS(
function drawCurves(id, curves, yLabel, yMax) {
  var policies = Object.keys(curves);
  var caps = [];
  policies.forEach(function (p) { curves[p].forEach(function (pt) { caps.push(pt.x); }); });
  var logX = caps.length > 1 && Math.min.apply(null, caps) > 0 && Math.max.apply(null, caps) / Math.min.apply(null, caps) > 20;
  charts.push(new Chart(document.getElementById(id), {
    type: 'line',
    data: {datasets: policies.map(function (p, i) {
      return {label: p, data: curves[p], borderColor: COLORS[i % COLORS.length],
              backgroundColor: COLORS[i % COLORS.length], borderDash: i < COLORS.length ? [] : [6, 3],
              pointRadius: 3, borderWidth: 2};
    })},
    options: {parsing: false,
      scales: {x: {type: logX ? 'logarithmic' : 'linear', title: {display: true, text: 'KV cache capacity (tokens)'}},
               y: {min: 0, max: yMax, title: {display: true, text: yLabel}}}}
  }));
}
drawCurves('chart-compare', D.curves, 'prefix-cache hit rate (%)', 100);
if (D.ttft_curves) drawCurves('chart-ttft', D.ttft_curves, 'TTFT p99 (ms)', undefined);
)JS";

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string page_head(const std::string& title) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>";
  out += html_escape(title);
  out += "</title>\n";
  out += kStyle;
  out += kErrorCapture;
  out += "<script>\n";
  out += chartjs_source();
  out += "\n</script>\n";
  out += kSelfCheck;
  out += "</head>\n<body>\n";
  return out;
}

std::string page_tail(const json& data, const std::string& draw_js) {
  std::string out = "<div id=\"render-status\" hidden></div>\n<script type=\"application/json\" id=\"report-data\">";
  out += script_json(data);
  out += "</script>\n<script>\n(function () {\n"
         "var D = JSON.parse(document.getElementById('report-data').textContent);\n"
         "Chart.defaults.animation = false;\n"
         "Chart.defaults.maintainAspectRatio = false;\n"
         // 20 distinct colours (compare draws a curve per policy: 12 and more).
         "var COLORS = ['#2f6fde', '#e0672b', '#1b9e77', '#a347ba', '#d4a017', '#c2185b', '#5d6d7e', '#00897b',\n"
         "  '#e377c2', '#8c564b', '#17becf', '#bcbd22', '#ff9896', '#98df8a', '#aec7e8', '#ffbb78', '#c5b0d5',\n"
         "  '#393b79', '#637939', '#843c39'];\n"
         "var charts = [];\n"
         // Registered first, so that the check runs even when drawing fails.
         "window.addEventListener('load', function () { setTimeout(function () { prefixsimSelfCheck(charts); }, 100); });\n"
         "try {\n";
  out += draw_js;
  out += "} catch (e) { window.__prefixsimErrors.push('drawing failed: ' + e); }\n"
         "})();\n</script>\n</body>\n</html>\n";
  return out;
}

namespace {
// The setup a planner reads first: model on GPU at TP, the fleet and its
// router, the policy, the KV tiers (from the resolved scenario).
std::string setup_line(const RunReport& r) {
  const json& s = r.scenario;
  const auto text = [&](const char* k) { return s.contains(k) && s[k].is_string() ? s[k].get<std::string>() : ""; };
  std::string line = html_escape(text("model")) + " on ";
  if (!r.groups.empty()) {  // a mixed fleet: each group's GPU and TP
    for (size_t k = 0; k < r.groups.size(); ++k)
      line += (k ? " + " : "") + std::to_string(r.groups[k].instances) + " x " + html_escape(r.groups[k].gpu) +
              " TP " + std::to_string(r.groups[k].tp);
  } else {
    line += html_escape(text("gpu"));
    if (s.contains("tp") && s["tp"].is_number()) line += ", TP " + s["tp"].dump();
  }
  if (!r.replicas.empty())
    line += " &middot; " + std::to_string(r.replicas.size()) + " replicas behind " + html_escape(text("router"));
  const std::string policy = text("policy_resolved").empty() ? text("policy") : text("policy_resolved");
  if (!policy.empty()) line += " &middot; policy " + html_escape(policy);
  if (!r.tiers.empty()) {
    line += " &middot; tiers";
    for (const TierReport& t : r.tiers) line += " " + html_escape(t.name);
  }
  return line;
}

// A structured setting: short ones inline, long ones (the cost model, the
// GPU's and model's specs) folded, their start as the summary and the whole
// of them, indented, inside.
std::string structured_setting(const json& v) {
  constexpr size_t kInline = 160;
  const std::string compact = v.dump();
  if (compact.size() <= kInline) return "<code>" + html_escape(compact) + "</code>";
  size_t cut = kInline;
  while (cut > 0 && (static_cast<unsigned char>(compact[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return "<details><summary><code>" + html_escape(compact.substr(0, cut)) + "&hellip;</code></summary><pre>" +
         html_escape(v.dump(2)) + "</pre></details>";
}

// The scenario as a table: scalars as they are, lists and objects compact.
std::string scenario_table(const json& s) {
  std::string out = "<table id=\"scenario\" class=\"settings\"><tr><th>setting</th><th>value</th></tr>\n";
  for (auto it = s.begin(); it != s.end(); ++it) {
    const json& v = it.value();
    const std::string shown = v.is_string() ? html_escape(v.get<std::string>())
                              : v.is_null() ? std::string("&mdash;")
                              : v.is_structured() ? structured_setting(v)
                                                  : html_escape(v.dump());
    out += "<tr><td>" + html_escape(it.key()) + "</td><td>" + shown + "</td></tr>\n";
  }
  return out + "</table>\n";
}
}  // namespace

namespace {
// Pools of like instances (disaggregated pools, a mixed fleet's groups),
// one row each; `groups` adds their requests and TTFT.
std::string pools_table(const std::vector<PoolReport>& pools, bool groups) {
  std::string out = std::string("<table><tr><th>") + (groups ? "group" : "pool") +
                    "</th><th>instances</th><th>GPU</th><th>TP</th><th>KV blocks each</th><th>arrived</th>"
                    "<th>finished</th><th>refused</th><th>steps</th><th>preemptions</th><th>hit rate</th><th>busy</th>"
                    "<th>KV usage mean / max</th>" +
                    (groups ? "<th>requests counted</th><th>TTFT p50 / p99</th>" : "") + "</tr>\n";
  for (const PoolReport& p : pools) {
    out += "<tr><td>" + html_escape(p.name) + "</td><td>" + std::to_string(p.instances) + "</td><td>" +
           html_escape(p.gpu) + "</td><td>" + std::to_string(p.tp) + "</td><td>" + std::to_string(p.num_blocks) +
           "</td><td>" + std::to_string(p.arrived) + "</td><td>" + std::to_string(p.finished) + "</td><td>" +
           std::to_string(p.refused) + "</td><td>" + std::to_string(p.steps) + "</td><td>" +
           std::to_string(p.preemptions) + "</td><td>" + pct(p.hit_rate) + "</td><td>" + pct(p.busy_share) +
           "</td><td>" + pct(p.kv_usage_mean) + " / " + pct(p.kv_usage_max) + "</td>";
    if (groups)
      out += "<td>" + std::to_string(p.requests) + "</td><td>" + num("%.1f ms", p.ttft_ms.p50) + " / " +
             num("%.1f ms", p.ttft_ms.p99) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

// A mixed fleet (report.json's fleet.groups).
std::string groups_section(const std::vector<PoolReport>& groups) {
  return "<h2>Replica groups</h2>\n<p class=\"sub\">A mixed fleet behind one router: each group's replicas on "
         "their own GPU and TP. Hit rate and TTFT are over each group's counted requests; they add up to the "
         "fleet's.</p>\n" +
         pools_table(groups, true);
}

// Disaggregated serving (report.json's disagg): the pools, the client's
// TTFT in parts, and the links (the busiest first; report.json has all).
std::string disagg_section(const DisaggReport& d) {
  std::string out = "<h2>Disaggregated prefill and decode (" + html_escape(d.design) + ")</h2>\n<p class=\"sub\">" +
                    std::to_string(d.split) + " requests split, " + std::to_string(d.local) + " prefilled locally, " +
                    std::to_string(d.prefill_only) + " prefill only &middot; " + std::to_string(d.transfers) +
                    " transfers, " + num("%.2f GB", static_cast<double>(d.transfer_bytes) / 1e9) + ", mean " +
                    num("%.2f ms", d.transfer_ms_mean) + " (" + num("%.2f ms", d.line_ms_mean) +
                    " alone on idle links) &middot; " + std::to_string(d.blocked) + " decode legs waited (mean " +
                    num("%.2f ms", d.blocked_ms_mean) + ")</p>\n";
  out += pools_table(d.pools, false);
  out += "<table><tr><th>TTFT of a split request (ms)</th><th>mean</th><th>p50</th><th>p90</th><th>p95</th>"
         "<th>p99</th><th>max</th></tr>\n";
  latency_tr(out, "queue (prefill pool)", d.queue_ms);
  latency_tr(out, "prefill", d.prefill_ms);
  latency_tr(out, "transfer (hand-off to KV read)", d.transfer_ms);
  latency_tr(out, "first decode step", d.first_decode_ms);
  std::vector<const DisaggLinkReport*> links;
  for (const DisaggLinkReport& l : d.links) links.push_back(&l);
  std::stable_sort(links.begin(), links.end(),
                   [](const DisaggLinkReport* a, const DisaggLinkReport* b) { return a->bytes > b->bytes; });
  constexpr size_t kShown = 16;
  out += "</table>\n<table><tr><th>link (" + num("%.0f GB/s", d.link_gbps_per_gpu) + " per GPU" +
         (d.fabric_gbps > 0 ? ", fabric " + num("%.0f GB/s", d.fabric_gbps) : std::string()) + ", +" +
         num("%.0f us", d.latency_us) + ")</th><th>transfers</th><th>GB</th><th>busy</th><th>most at once</th></tr>\n";
  for (size_t i = 0; i < links.size() && i < kShown; ++i)
    out += "<tr><td>" + html_escape(links[i]->name) + "</td><td>" + std::to_string(links[i]->transfers) + "</td><td>" +
           num("%.2f", static_cast<double>(links[i]->bytes) / 1e9) + "</td><td>" + pct(links[i]->busy_share) +
           "</td><td>" + std::to_string(links[i]->max_concurrent) + "</td></tr>\n";
  out += "</table>\n";
  if (links.size() > kShown)
    out += "<p class=\"note\">The " + std::to_string(kShown) + " busiest of " + std::to_string(links.size()) +
           " links; report.json's disagg.links has every one.</p>\n";
  return out;
}
}  // namespace

namespace {
// The real backend mode (replay --backend): what ran, the caching check and,
// with --shadow, the cost model against the measured steps (a chart and the
// worst steps; report.json has the same figures).
std::string backend_section(const BackendReport& b, json& data) {
  std::string out = "<h2>Real backend</h2>\n<p class=\"sub\">Every step's batch ran on a random-weight " +
                    html_escape(b.shape) + " (" + std::to_string(b.layers) + " layers, hidden " +
                    std::to_string(b.hidden) + ") on the " + html_escape(b.kind) + ": " + std::to_string(b.steps) +
                    " steps, " + std::to_string(b.tokens) + " tokens; the clock came from the " +
                    (b.measured_time ? "measured forward" : "cost model") + ".</p>\n";
  if (b.check) {
    const BackendReport::Check& c = *b.check;
    out += "<table><tr><th>caching check</th><th>requests recomputed</th><th>hidden states compared</th>"
           "<th>max relative error</th><th>tolerance</th></tr>\n<tr><td>" +
           (c.failure.empty() ? std::string("passed") : "<b>FAILED</b>: " + html_escape(c.failure)) + "</td><td>" +
           std::to_string(c.requests) + "</td><td>" + std::to_string(c.rows) + "</td><td>" +
           num("%.3g", c.max_rel_error) + "</td><td>" + num("%.3g", c.tolerance) + "</td></tr>\n</table>\n";
  }
  if (b.tiers)
    out += "<p class=\"sub\">KV tiers mirrored: " + std::to_string(b.tiers->stores) + " blocks stored, " +
           std::to_string(b.tiers->loads) + " loaded back into GPU blocks, " + std::to_string(b.tiers->missing) +
           " loaded without KV.</p>\n";
  if (!b.shadow) return out;
  const BackendReport::Shadow& sh = *b.shadow;
  out += "<h2>Cost model against the measured steps</h2>\n<p class=\"sub\">Each step priced by the cost model "
         "beside the time the " + html_escape(b.kind) + " took; error = (modeled - measured) / measured.</p>\n"
         "<table><tr><th>steps timed</th><th>MAPE</th><th>bias</th><th>|error| p50 / p90</th>"
         "<th>summed modeled / measured</th><th>TTFT p50, measured clock / cost model</th>"
         "<th>TTFT p99, measured clock / cost model</th></tr>\n<tr><td>" +
         std::to_string(sh.steps) + "</td><td>" + num("%.1f %%", sh.mape) + "</td><td>" + num("%+.1f %%", sh.bias) +
         "</td><td>" + num("%.1f %%", sh.p50_abs_error) + " / " + num("%.1f %%", sh.p90_abs_error) + "</td><td>" +
         num("%.1f ms", sh.modeled_ms) + " / " + num("%.1f ms", sh.measured_ms) + "</td><td>" +
         num("%.1f ms", sh.ttft_measured_p50) + " / " + num("%.1f ms", sh.ttft_modeled_p50) + "</td><td>" +
         num("%.1f ms", sh.ttft_measured_p99) + " / " + num("%.1f ms", sh.ttft_modeled_p99) +
         "</td></tr>\n</table>\n<div class=\"chart\"><canvas id=\"chart-shadow\"></canvas></div>\n";
  if (!sh.worst.empty()) {
    out += "<table><tr><th>worst steps: replica</th><th>step</th><th>sequences</th><th>new tokens</th>"
           "<th>context tokens</th><th>modeled</th><th>measured</th><th>error</th></tr>\n";
    for (const BackendStepReport& w : sh.worst)
      out += "<tr><td>" + std::to_string(w.replica) + "</td><td>" + std::to_string(w.step) + "</td><td>" +
             std::to_string(w.seqs) + "</td><td>" + std::to_string(w.new_tokens) + "</td><td>" +
             std::to_string(w.context_tokens) + "</td><td>" + num("%.3f ms", w.modeled_ms) + "</td><td>" +
             num("%.3f ms", w.measured_ms) + "</td><td>" +
             num("%+.1f %%", 100 * (w.modeled_ms - w.measured_ms) / w.measured_ms) + "</td></tr>\n";
    out += "</table>\n";
  }
  json points = json::array();
  for (const BackendStepReport& p : sh.points) points.push_back(json::array({p.measured_ms, p.modeled_ms}));
  data["shadow"] = json{{"steps", sh.steps}, {"points", points}};
  return out;
}
}  // namespace

std::string render_report_html(const RunReport& r) {
  std::string out = page_head("prefixsim report");
  const std::string trace = r.trace.path.empty() ? "built-in workload" : r.trace.path;
  out += "<h1>prefixsim report: " + setup_line(r) + "</h1>\n<p class=\"sub\">" + html_escape(trace) + " (" +
         html_escape(r.trace.format) + ") &middot; " + std::to_string(r.trace.requests) + " requests &middot; mode " +
         html_escape(r.mode) + " &middot; " + html_escape(r.tool_name + " " + r.tool_version) +
         "</p>\n<div class=\"cards\">\n";
  card(out, pct(r.prefix_cache.hit_rate), "prefix-cache hit rate (tokens)");
  card(out, pct(r.prefix_cache.block_hit_rate), "block hit rate");
  card(out, pct(r.prefix_cache.ideal_hit_rate), "ideal hit rate (infinite cache)");
  // The pool in the units a planner sizes it in: bytes and tokens, blocks beside.
  const std::string blocks = std::to_string(r.kv_cache.num_blocks) + " blocks of " +
                             std::to_string(r.kv_cache.block_size) + " tokens" +
                             (r.groups.empty() ? "" : "; a replica of the first group");
  if (r.kv_cache.bytes_per_block > 0)
    card(out,
         num("%.1f GiB", static_cast<double>(r.kv_cache.num_blocks) * static_cast<double>(r.kv_cache.bytes_per_block) /
                             (1024.0 * 1024.0 * 1024.0)),
         "KV cache: " + std::to_string(r.kv_cache.capacity_tokens) + " tokens (" + blocks + ")");
  else
    card(out, std::to_string(r.kv_cache.capacity_tokens) + " tokens", "KV cache (" + blocks + ")");
  if (r.timed) {
    card(out, num("%.1f ms", r.timed->latency_ms.ttft.p50), "TTFT p50");
    card(out, num("%.1f ms", r.timed->latency_ms.ttft.p99), "TTFT p99");
    card(out, num("%.1f", r.timed->throughput.output_tokens_per_s), "output tokens/s");
    card(out, std::to_string(r.timed->engine.preemptions), "preemptions");
  }
  out += "</div>\n<h2>Hit rate and KV usage over time</h2>\n<div class=\"chart\"><canvas id=\"chart-hit-kv\"></canvas></div>\n";
  json data{{"axis", r.series_axis}, {"series", chart_series(r)}, {"ttft_cdf", json::array()}};
  if (r.timed) {
    const TimedResults& t = *r.timed;
    out += "<h2>Time to first token</h2>\n<div class=\"chart\"><canvas id=\"chart-ttft-cdf\"></canvas></div>\n";
    out += "<table><tr><th>latency (ms)</th><th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr>\n";
    latency_tr(out, "TTFT", t.latency_ms.ttft);
    latency_tr(out, "queue", t.latency_ms.queue);
    if (t.latency_ms.has_load) {
      latency_tr(out, "load from tiers", t.latency_ms.load);
      latency_tr(out, "prefill", t.latency_ms.prefill);
    }
    latency_tr(out, "end to end", t.latency_ms.e2e);
    latency_tr(out, "TPOT", t.latency_ms.tpot);
    out += "</table>\n<h2>Queue length over time</h2>\n<div class=\"chart\"><canvas id=\"chart-queue\"></canvas></div>\n";
    json cdf = json::array();
    for (const CdfPoint& c : t.ttft_cdf_ms) cdf.push_back(json::array({c.value, c.fraction}));
    data["ttft_cdf"] = cdf;
    const LatencySummary& s = t.latency_ms.ttft;
    data["ttft_pct"] = json{{"p50", nullable(s.p50)}, {"p90", nullable(s.p90)}, {"p95", nullable(s.p95)},
                            {"p99", nullable(s.p99)}};
    if (!r.replicas.empty()) {
      out += "<h2>Replicas (" + std::to_string(r.replicas.size()) + ", router " +
             html_escape(r.scenario.value("router", std::string("?"))) + ")</h2>\n<p class=\"sub\">load imbalance "
             "(max / mean): requests " + num("%.2f", r.imbalance.requests) + ", prompt tokens " +
             num("%.2f", r.imbalance.prompt_tokens) + "</p>\n<div class=\"chart\"><canvas id=\"chart-replicas\">"
             "</canvas></div>\n<h2>KV usage per replica over time</h2>\n<div style=\"margin:8px 0 20px\"><canvas "
             "id=\"chart-replica-kv\"></canvas></div>\n";
      json reps = json::array();
      for (const ReplicaReport& x : r.replicas)
        reps.push_back(json{{"requests", x.requests}, {"hit_rate_pct", nullable(100.0 * x.hit_rate)}});
      data["replicas"] = reps;
    }
  } else {
    out += "<p class=\"note\">Cache mode: requests were replayed one at a time without simulated time, "
           "so there is no latency, queue or throughput to show; the x axis counts requests.</p>\n";
  }
  if (r.disagg) out += disagg_section(*r.disagg);
  if (!r.groups.empty()) out += groups_section(r.groups);
  if (r.backend) out += backend_section(*r.backend, data);
  if (!r.tiers.empty()) {
    out += "<h2>Hit rate by tier over time</h2>\n<p class=\"sub\">GPU + tiers: " +
           num("%.2f", 100.0 * r.prefix_cache.hit_rate_with_tiers) + " % (GPU alone " +
           num("%.2f", 100.0 * r.prefix_cache.hit_rate) + " %)</p>\n<div class=\"chart\"><canvas id=\"chart-tiers\">"
           "</canvas></div>\n<table><tr><th>tier</th><th>instances</th><th>store</th><th>policy</th><th>capacity "
           "(blocks each)</th><th>hit tokens</th><th>stored</th><th>evicted</th><th>GB read</th><th>GB written</th></tr>\n";
    for (const TierReport& t : r.tiers)
      out += "<tr><td>" + html_escape(t.name) + (t.shared ? " (shared)" : "") + "</td><td>" +
             std::to_string(t.instances) + "</td><td>" + t.store + "</td><td>" + html_escape(t.policy) + "</td><td>" +
             (t.capacity_blocks < 0 ? std::string("unbounded") : std::to_string(t.capacity_blocks)) + "</td><td>" +
             std::to_string(t.hit_tokens) + "</td><td>" + std::to_string(t.stored_blocks) + "</td><td>" +
             std::to_string(t.evicted_blocks) + "</td><td>" + num("%.1f", static_cast<double>(t.bytes_read) / 1e9) +
             "</td><td>" + num("%.1f", static_cast<double>(t.bytes_written) / 1e9) + "</td></tr>\n";
    out += "</table>\n";
  }
  out += "<h2>Prefix cache</h2>\n<table>\n";
  const PrefixCacheReport& p = r.prefix_cache;
  const PrefixCacheLookups& l = p.lookups;
  auto tr = [&](const std::string& k, const std::string& v) {
    out += "<tr><td>" + html_escape(k) + "</td><td>" + html_escape(v) + "</td></tr>\n";
  };
  tr("hit tokens / queried tokens (at admission)", std::to_string(p.hit_tokens) + " / " + std::to_string(p.queried_tokens));
  tr("evictions", std::to_string(p.evictions));
  tr("lookups, vLLM-counted: requests / queries / hits",
     std::to_string(l.requests) + " / " + std::to_string(l.queries) + " / " + std::to_string(l.hits));
  tr("lookups after preemption: requests / queries / hits", std::to_string(l.preempted_requests) + " / " +
                                                                std::to_string(l.preempted_queries) + " / " +
                                                                std::to_string(l.preempted_hits));
  tr("KV capacity (tokens)", std::to_string(r.kv_cache.capacity_tokens));
  out += "</table>\n<h2>Scenario (resolved configuration; report.json has it whole)</h2>\n" +
         scenario_table(r.scenario);
  std::string charts = kRunCharts;
  if (!r.replicas.empty()) charts += kFleetCharts;
  if (!r.tiers.empty()) charts += kTierCharts;
  if (r.backend && r.backend->shadow) charts += kShadowCharts;
  out += page_tail(data, charts);
  return out;
}

namespace {
// compare.json's hot prefixes (the same as compare.md's first table): how
// far apart each recurring prefix's uses are, to hold against capacities.
std::string hot_prefix_table(const json& compare_json) {
  if (!compare_json.contains("hot_prefixes") || compare_json["hot_prefixes"].empty()) return {};
  std::string out =
      "<h2>Hot prefixes: reuse distance</h2>\n<p class=\"sub\">the distinct blocks touched between two uses of a "
      "prefix, its own included (median over its reuses): a pool of at least that many usable blocks keeps it by "
      "recency alone; beyond, only a ghost list or frequency can (compare.md holds each policy against them)</p>\n"
      "<table><tr><th>#</th><th>prefix (last block)</th><th>tokens</th><th>reuses</th><th>median reuse distance "
      "(blocks)</th></tr>\n";
  size_t n = 0;
  for (const json& h : compare_json["hot_prefixes"]) {
    const std::string hash = h.value("hash", std::string());
    out += "<tr><td>" + std::to_string(++n) + "</td><td><code>" + html_escape(hash.substr(0, 12)) + "</code></td><td>" +
           h["tokens"].dump() + "</td><td>" + h["reuses"].dump() + "</td><td>" +
           h["median_reuse_distance_blocks"].dump() + "</td></tr>\n";
  }
  return out + "</table>\n";
}
}  // namespace

std::string render_compare_html(const nlohmann::json& compare_json) {
  std::string out = page_head("prefixsim compare");
  out += "<h1>prefixsim compare</h1>\n<p class=\"sub\">prefix-cache hit rate of every policy at every KV capacity</p>\n";
  out += "<h2>Hit rate vs capacity</h2>\n<div class=\"chart\"><canvas id=\"chart-compare\"></canvas></div>\n";
  // policy -> kv_blocks -> result, in sorted order for a deterministic page.
  std::map<std::string, std::map<uint64_t, const json*>> table;
  std::set<uint64_t> blocks;
  const json results = compare_json.contains("results") ? compare_json["results"] : json::array();
  for (const json& row : results) {
    // The spec, not the policy's name: tinylfu and tinylfu:window=0.01 are
    // two curves, as compare.md has them.
    std::string policy = row.value("spec", row.value("policy", std::string("?")));
    if (row.contains("router"))  // a fleet: one curve per policy, router and size
      policy += " · " + row.value("router", std::string("?")) + " x " + std::to_string(row.value("replicas", 1));
    if (row.contains("kv_offloading_size_gib")) {  // one curve per CPU tier size too ("inf" or GiB)
      const json& gib = row["kv_offloading_size_gib"];
      policy += " · CPU " + (gib.is_string() ? gib.get<std::string>() : gib.dump()) + " GiB";
    }
    const uint64_t b = row.value("kv_blocks", uint64_t{0});
    table[policy][b] = &row;
    blocks.insert(b);
  }
  // A figure of every row as curves: policy -> [{x: capacity, y}].
  const auto curves_of = [&](const char* key, double scale) {
    json curves = json::object();
    for (const auto& [policy, by_blocks] : table) {
      json pts = json::array();
      for (const auto& [b, row] : by_blocks) {
        const json& v = (*row).contains(key) ? (*row)[key] : json(nullptr);
        pts.push_back(json{{"x", row->value("capacity_tokens", b)},
                           {"y", v.is_number() ? json(scale * v.get<double>()) : json(nullptr)}});
      }
      curves[policy] = pts;
    }
    return curves;
  };
  const json curves = curves_of("hit_rate", 100.0);
  const bool engine = std::any_of(results.begin(), results.end(),
                                  [](const json& r) { return r.contains("ttft_p99_ms") && r["ttft_p99_ms"].is_number(); });
  if (engine)
    out += "<h2>TTFT p99 vs capacity</h2>\n<p class=\"sub\">engine mode: the 99th percentile of time to first token, "
           "ms</p>\n<div class=\"chart\"><canvas id=\"chart-ttft\"></canvas></div>\n";
  out += "<h2>Policy x capacity: hit rate</h2>\n<table>\n<tr><th>policy \\ KV blocks</th>";
  for (uint64_t b : blocks) out += "<th>" + std::to_string(b) + "</th>";
  out += "</tr>\n";
  std::map<uint64_t, double> best;
  for (const auto& [policy, by_blocks] : table)
    for (const auto& [b, row] : by_blocks)
      if ((*row).contains("hit_rate") && (*row)["hit_rate"].is_number())
        best[b] = std::max(best.count(b) ? best[b] : -1.0, (*row)["hit_rate"].get<double>());
  for (const auto& [policy, by_blocks] : table) {
    out += "<tr><td>" + html_escape(policy) + "</td>";
    for (uint64_t b : blocks) {
      auto it = by_blocks.find(b);
      if (it == by_blocks.end() || !(*it->second).contains("hit_rate") || !(*it->second)["hit_rate"].is_number()) {
        out += "<td>n/a</td>";
        continue;
      }
      const json& row = *it->second;
      const double hr = row["hit_rate"].get<double>();
      out += hr == best[b] ? "<td class=\"best\">" : "<td>";
      out += pct(hr);
      if (row.contains("evictions") && row["evictions"].is_number())
        out += "<br><small>" + std::to_string(row["evictions"].get<uint64_t>()) + " evictions</small>";
      out += "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n<p class=\"note\">Bold: the best policy at that capacity.</p>\n";
  out += hot_prefix_table(compare_json);
  if (compare_json.contains("scenario"))
    out += "<h2>Scenario (resolved configuration)</h2>\n<pre id=\"scenario\">" +
           html_escape(compare_json["scenario"].dump(2)) + "</pre>\n";
  json data{{"curves", curves}};
  if (engine) data["ttft_curves"] = curves_of("ttft_p99_ms", 1.0);
  out += page_tail(data, kCompareCharts);
  return out;
}

}  // namespace prefixsim
