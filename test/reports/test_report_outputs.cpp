// The report model and its text writers: percentiles, the bounded-memory
// accumulator, report.json's contract and determinism, series.csv and
// metrics.prom.
#include <catch2/catch.hpp>
#include <set>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "reports/backend_shadow.h"
#include "reports/outputs.h"
#include "test/reports/sample_report.h"
#include "test/support.h"

using namespace prefixsim;

TEST_CASE("summarize uses nearest-rank percentiles that are observed values", "[reports][latency]") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, unsorted on purpose
  const LatencySummary s = summarize(v);
  CHECK(s.count == 100);
  CHECK(s.mean == 50.5);
  CHECK(s.p50 == 50);
  CHECK(s.p90 == 90);
  CHECK(s.p95 == 95);
  CHECK(s.p99 == 99);
  CHECK(s.max == 100);
  std::vector<double> three = {3, 1, 2};
  const LatencySummary t = summarize(three);
  CHECK(t.p50 == 2);  // ceil(0.5 * 3) = 2nd smallest
  CHECK(t.p99 == 3);
  std::vector<double> none;
  CHECK(std::isnan(summarize(none).p50));
}

TEST_CASE("latency accumulator folds past its limit and stays within 0.3 percent", "[reports][latency]") {
  LatencyAccumulator exact(vllm_ttft_buckets()), folded(vllm_ttft_buckets(), 1000);
  std::vector<double> all;
  for (int i = 0; i < 20000; ++i) {
    const double v = 0.001 * (1 + (i * 7919) % 5000) * (1 + (i % 3));  // 1 ms .. 15 s, scrambled
    exact.add(v);
    folded.add(v);
    all.push_back(v * 1000);
  }
  CHECK(exact.exact());
  CHECK_FALSE(folded.exact());
  const LatencySummary want = summarize(all), e = exact.summary_ms(), f = folded.summary_ms();
  CHECK(e.p99 == want.p99);
  CHECK(e.p50 == want.p50);
  CHECK(f.max == want.max);
  CHECK(f.mean == Approx(want.mean).epsilon(1e-12));
  for (auto [got, ref] : {std::pair{f.p50, want.p50}, {f.p90, want.p90}, {f.p99, want.p99}})
    CHECK(std::fabs(got - ref) / ref < 0.003);
  CHECK(exact.prom_histogram().count == 20000);
  CHECK(folded.prom_histogram().counts == exact.prom_histogram().counts);
  const auto cdf = exact.cdf_ms(50);
  REQUIRE(cdf.size() <= 50);
  CHECK(cdf.front().value == *std::min_element(all.begin(), all.end()));
  CHECK(cdf.back().fraction == 1.0);
  for (size_t i = 1; i < cdf.size(); ++i) {
    CHECK(cdf[i].value > cdf[i - 1].value);
    CHECK(cdf[i].fraction > cdf[i - 1].fraction);
  }
}

TEST_CASE("report.json is byte-identical for identical run reports", "[reports][json][determinism]") {
  const std::string a = render_report_json(test::sample_run_report()), b = render_report_json(test::sample_run_report());
  CHECK(a == b);
  RunReport changed = test::sample_run_report();
  changed.prefix_cache.hit_rate = 0.61;
  CHECK(render_report_json(changed) != a);
}

TEST_CASE("report.json carries every contract key path of DESIGN.md", "[reports][json]") {
  const auto j = nlohmann::json::parse(render_report_json(test::sample_run_report()));
  CHECK(j["schema"] == "prefixsim.report/1");
  for (const char* p :
       {"/tool/name", "/tool/version", "/scenario/model", "/trace/path", "/trace/format", "/trace/requests",
        "/trace/prompt_tokens", "/trace/output_tokens", "/kv_cache/block_size", "/kv_cache/num_blocks",
        "/kv_cache/bytes_per_block", "/kv_cache/capacity_tokens", "/prefix_cache/queried_tokens",
        "/prefix_cache/hit_tokens", "/prefix_cache/hit_rate", "/prefix_cache/block_hit_rate",
        "/prefix_cache/ideal_hit_rate", "/prefix_cache/evictions", "/prefix_cache/lookups/queries",
        "/prefix_cache/lookups/preempted_hits", "/latency_ms/ttft/p99", "/latency_ms/queue/mean", "/latency_ms/e2e/max",
        "/latency_ms/tpot/p50", "/throughput/requests_per_s", "/throughput/prompt_tokens_per_s",
        "/throughput/output_tokens_per_s", "/engine/steps", "/engine/preemptions", "/engine/kv_usage/mean",
        "/engine/kv_usage/max"}) {
    INFO(p);
    CHECK(j.contains(nlohmann::json::json_pointer(p)));
  }
  CHECK(j["prefix_cache"]["hit_rate"] == 0.6);
  CHECK(j["latency_ms"]["ttft"]["p50"] == 97.65625);  // nearest rank: the 25th of k/256 s
  CHECK(j["prefix_cache"]["lookups"]["hit_rate"] == Approx(30800.0 / 53248.0));
}

TEST_CASE("a cache-mode report.json has null latency, throughput and engine sections", "[reports][json]") {
  const auto j = nlohmann::json::parse(render_report_json(test::sample_run_report(false)));
  CHECK(j["mode"] == "cache");
  CHECK(j["latency_ms"].is_null());
  CHECK(j["throughput"].is_null());
  CHECK(j["engine"].is_null());
  CHECK(j["prefix_cache"]["hit_rate"] == 0.6);
  RunReport r = test::sample_run_report(false);
  r.prefix_cache.ideal_hit_rate = kNotAvailable;
  CHECK(nlohmann::json::parse(render_report_json(r))["prefix_cache"]["ideal_hit_rate"].is_null());
}

TEST_CASE("series.csv has one row per interval and leaves an unknown hit rate empty", "[reports][csv]") {
  const std::string csv = render_series_csv(test::sample_run_report());
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  CHECK(header.rfind("t_s,hit_rate,queried_tokens,hit_tokens,kv_usage,waiting,running,", 0) == 0);
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  REQUIRE(rows.size() == 20);
  CHECK(rows[0] == "0.0,0.25,2560,640,0.2,20,5,0,2,5120.0,640.0");
  CHECK(rows[3].rfind("1.5,,0,0,", 0) == 0);
  CHECK(render_series_csv(test::sample_run_report(false)).rfind("request,", 0) == 0);
}

TEST_CASE("metrics.prom exposes vLLM's names with cumulative histogram buckets, _sum and _count",
          "[reports][prom]") {
  const std::string prom = render_metrics_prom(test::sample_run_report());
  auto has = [&](const std::string& s) { return prom.find(s) != std::string::npos; };
  const std::string L = "{model_name=\"llama-3.1-8b\",engine=\"0\"";
  CHECK(has("# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total" + L + "} 53248.0\n"));
  CHECK(has("# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total" + L + "} 30800.0\n"));
  CHECK(has("# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total" + L + "} 3.0\n"));
  // vLLM's gauges are the state at the end (the last interval: usage 0.2 +
  // 0.03 x 19, 8 running, 1 waiting); the run's averages have names of their own.
  CHECK(has("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc" + L + "} 0.77\n"));
  CHECK(has("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running" + L + "} 8.0\n"));
  CHECK(has("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting" + L + "} 1.0\n"));
  CHECK(has("# TYPE prefixsim:kv_cache_usage_perc_avg gauge\nprefixsim:kv_cache_usage_perc_avg" + L + "} 0.42\n"));
  CHECK(has("# TYPE prefixsim:num_requests_waiting_avg gauge\nprefixsim:num_requests_waiting_avg" + L + "} 10.5\n"));
  CHECK(has("# TYPE vllm:time_to_first_token_seconds histogram\n"));
  // TTFTs are k/256 s for k = 1..50: cumulative counts at vLLM's bounds.
  const std::string B = "vllm:time_to_first_token_seconds_bucket" + L;
  CHECK(has(B + ",le=\"0.001\"} 0.0\n"));
  CHECK(has(B + ",le=\"0.005\"} 1.0\n"));
  CHECK(has(B + ",le=\"0.01\"} 2.0\n"));
  CHECK(has(B + ",le=\"0.1\"} 25.0\n"));
  CHECK(has(B + ",le=\"0.25\"} 50.0\n"));
  CHECK(has(B + ",le=\"2560.0\"} 50.0\n"));
  CHECK(has(B + ",le=\"+Inf\"} 50.0\n"));
  CHECK(has("vllm:time_to_first_token_seconds_count" + L + "} 50.0\n"));
  CHECK(has("vllm:time_to_first_token_seconds_sum" + L + "} 4.98046875\n"));  // 1275 / 256
  CHECK(has("# TYPE vllm:e2e_request_latency_seconds histogram\n"));
  CHECK(has("# TYPE vllm:request_queue_time_seconds histogram\n"));
  // Buckets never decrease.
  std::istringstream in(prom);
  std::string line;
  double prev = -1;
  while (std::getline(in, line)) {
    if (line.rfind("vllm:time_to_first_token_seconds_bucket", 0) != 0) continue;
    const double v = std::stod(line.substr(line.rfind(' ') + 1));
    CHECK(v >= prev);
    prev = v;
  }
  const std::string cache = render_metrics_prom(test::sample_run_report(false));
  CHECK(cache.find("vllm:prefix_cache_queries_total") != std::string::npos);
  CHECK(cache.find("time_to_first_token") == std::string::npos);
}

TEST_CASE("write_run_outputs writes all five files and leaves no temporary behind", "[reports][files]") {
  const std::string dir = test::temp_dir("run-outputs") + "/nested/out";
  write_run_outputs(dir, test::sample_run_report());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"metrics.prom", "report.html", "report.json", "series.csv", "summary.md"});
  CHECK(test::read_file(dir + "/report.json") == render_report_json(test::sample_run_report()));
  const std::string md = test::read_file(dir + "/summary.md");
  CHECK(md.find("| hit rate (tokens, at admission) | 60.00 % |") != std::string::npos);
  CHECK(md.find("| TTFT |") != std::string::npos);
}

TEST_CASE("report.html is self-contained and keeps user data from closing its script", "[reports][html]") {
  const std::string html = render_report_html(test::sample_run_report());
  CHECK(html.find("Chart.js v3") != std::string::npos);   // inlined, not linked
  CHECK(html.find("src=\"http") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("a </script> in user data") == std::string::npos);  // escaped in <pre> and in JSON
  CHECK(html.find("a &lt;/script&gt; in user data") != std::string::npos);
  CHECK(html == render_report_html(test::sample_run_report()));
  nlohmann::json cmp = {{"results",
                         {{{"policy", "lru"}, {"kv_blocks", 100}, {"capacity_tokens", 1600}, {"hit_rate", 0.3},
                           {"block_hit_rate", 0.31}, {"evictions", 50}},
                          {{"policy", "lfu"}, {"kv_blocks", 100}, {"capacity_tokens", 1600}, {"hit_rate", 0.35},
                           {"block_hit_rate", 0.36}, {"evictions", 40}}}}};
  const std::string c = render_compare_html(cmp);
  CHECK(c.find("<td class=\"best\">35.00 %") != std::string::npos);
  CHECK(c.find("<td>30.00 %") != std::string::npos);
  CHECK(c.find("<canvas id=\"chart-ttft\">") == std::string::npos);  // cache mode: no latency
}

TEST_CASE("compare.html tells 12 policies apart, draws engine mode's TTFT and lists the hot prefixes",
          "[reports][html][compare]") {
  nlohmann::json rows = nlohmann::json::array();
  for (int p = 0; p < 12; ++p)
    for (int b : {100, 200})
      rows.push_back({{"policy", "p" + std::to_string(p)}, {"kv_blocks", b}, {"capacity_tokens", 16 * b},
                      {"hit_rate", 0.01 * (p + b / 100)}, {"ttft_p99_ms", 100.0 + p}});
  const nlohmann::json cmp{{"results", rows},
                           {"hot_prefixes",
                            {{{"hash", "0123456789abcdef"}, {"blocks", 4}, {"tokens", 64}, {"reuses", 9},
                              {"median_reuse_distance_blocks", 150}}}}};
  const std::string c = render_compare_html(cmp);
  // The palette: at least 12 distinct colours, so no two of the 12 curves share one.
  const size_t at = c.find("var COLORS = [");
  REQUIRE(at != std::string::npos);
  const std::string palette = c.substr(at, c.find("];", at) - at);
  std::set<std::string> colours;
  for (size_t q = palette.find('#'); q != std::string::npos; q = palette.find('#', q + 1))
    colours.insert(palette.substr(q, 7));
  CHECK(colours.size() >= 12);
  CHECK(c.find("<canvas id=\"chart-ttft\">") != std::string::npos);
  CHECK(c.find("\"ttft_curves\"") != std::string::npos);
  CHECK(c.find("<code>0123456789ab</code></td><td>64</td><td>9</td><td>150</td>") != std::string::npos);
}

TEST_CASE("compare.html draws two specs of one policy as two curves and rows", "[reports][html][compare]") {
  nlohmann::json rows = nlohmann::json::array();
  for (const char* spec : {"tinylfu", "tinylfu:window=0.01"})
    rows.push_back({{"policy", "tinylfu"}, {"spec", spec}, {"kv_blocks", 100}, {"capacity_tokens", 1600},
                    {"hit_rate", 0.3}});
  const std::string c = render_compare_html(nlohmann::json{{"results", rows}});
  CHECK(c.find("<tr><td>tinylfu</td>") != std::string::npos);
  CHECK(c.find("<tr><td>tinylfu:window=0.01</td>") != std::string::npos);
}

TEST_CASE("report.html opens on the setup, the pool in GiB and tokens, and the scenario as a table",
          "[reports][html]") {
  RunReport r = test::sample_run_report();
  r.scenario["tp"] = 2;
  r.kv_cache.num_blocks = 1024;
  r.kv_cache.block_size = 16;
  r.kv_cache.capacity_tokens = 16384;
  r.kv_cache.bytes_per_block = 2 * 1024 * 1024;  // 2 MiB a block: 2 GiB in all
  const std::string html = render_report_html(r);
  CHECK(html.find("<h1>prefixsim report: llama-3.1-8b on h100-sxm-80gb, TP 2 &middot; policy lru") !=
        std::string::npos);
  CHECK(html.find("<div class=\"v\">2.0 GiB</div><div class=\"k\">KV cache: 16384 tokens (1024 blocks of 16 "
                  "tokens)</div>") != std::string::npos);
  CHECK(html.find("<table id=\"scenario\" class=\"settings\">") != std::string::npos);
  CHECK(html.find("<tr><td>gpu</td><td>h100-sxm-80gb</td></tr>") != std::string::npos);
  CHECK(html.find("yAxisID: 'y2'") != std::string::npos);  // KV usage on its own axis
  // A long structured setting (the cost model) folds, its start as the summary.
  r.scenario["cost_model"] = {{"coefficients", std::string(300, 'x')}};
  const std::string folded = render_report_html(r);
  CHECK(folded.find("<tr><td>cost_model</td><td><details><summary><code>{&quot;coefficients&quot;:&quot;xxx") !=
        std::string::npos);
  CHECK(folded.find("&hellip;</code></summary><pre>{\n  &quot;coefficients&quot;") != std::string::npos);
  r.kv_cache.bytes_per_block = 0;                          // sized in tokens, no model bytes
  CHECK(render_report_html(r).find("<div class=\"v\">16384 tokens</div>") != std::string::npos);
}

TEST_CASE("durations print in ms, s, min or h, whichever keeps them readable", "[reports][text]") {
  CHECK(duration_text(7.655) == "7.66 ms");
  CHECK(duration_text(9999.0) == "9999.00 ms");
  CHECK(duration_text(10'000.0) == "10.0 s");
  CHECK(duration_text(602'607.0) == "10.0 min");
  CHECK(duration_text(946'980.0) == "15.8 min");
  CHECK(duration_text(3 * 3600e3) == "3.0 h");
  CHECK(duration_text(NAN) == "n/a");
}

TEST_CASE("the saturation line appears only when the drain ratio says the server fell behind", "[reports][load]") {
  LoadReport l;
  l.requests = 1000;
  l.arrival_span_s = 100;
  l.derive(101.5);  // finished 1.5 s after the last arrival: kept up
  CHECK(!l.saturated);
  CHECK(l.saturation_line().empty());
  CHECK(l.offered_requests_per_s == Approx(9.99));
  l.derive(290);  // 2.9 x the arrivals' span
  CHECK(l.saturated);
  CHECK(l.replicas_needed == 3);
  CHECK(l.served_requests_per_s == Approx(1000 / 290.0));
  CHECK(l.saturation_line().rfind("saturated: arrivals exceed service by 2.9 x", 0) == 0);
  CHECK(l.saturation_line().find("about 3 replicas would be needed") != std::string::npos);
}

TEST_CASE("report.html shows the real backend's check and, with --shadow, the cost model against the measured "
          "steps: figures, a chart of at most 2,000 steps and the worst steps",
          "[reports][html][shadow]") {
  const RunReport r = test::sample_gpu_shadow_report();
  const std::string html = render_report_html(r);
  CHECK(html.find("<h2>Real backend</h2>") != std::string::npos);
  CHECK(html.find("random-weight llama-3.1-8b (32 layers, hidden 4096) on the gpu: 3000 steps") != std::string::npos);
  CHECK(html.find("the clock came from the measured forward") != std::string::npos);
  CHECK(html.find("<tr><td>passed</td><td>20</td><td>412</td>") != std::string::npos);
  CHECK(html.find("<h2>Cost model against the measured steps</h2>") != std::string::npos);
  CHECK(html.find("<canvas id=\"chart-shadow\">") != std::string::npos);
  const BackendReport::Shadow& sh = *r.backend->shadow;
  char mape[32];
  std::snprintf(mape, sizeof mape, "%.1f %%", sh.mape);
  CHECK(html.find("<td>" + std::to_string(sh.steps) + "</td><td>" + mape + "</td>") != std::string::npos);
  CHECK(html.find("41.5 ms / 38.0 ms") != std::string::npos);    // TTFT p50: measured clock / cost model
  CHECK(html.find("390.2 ms / 351.5 ms") != std::string::npos);  // p99
  // The worst steps, largest |error| first: -15.0 % (every 100th step from 0).
  CHECK(html.find("<th>worst steps: replica</th>") != std::string::npos);
  CHECK(html.find("<td>-15.0 %</td></tr>") != std::string::npos);
  // The chart's data: 2,000 of the 3,000 steps, as [measured, modeled].
  const std::string tag = "<script type=\"application/json\" id=\"report-data\">";
  const size_t at = html.find(tag) + tag.size();
  const nlohmann::json data = nlohmann::json::parse(html.substr(at, html.find("</script>", at) - at));
  REQUIRE(data.contains("shadow"));
  CHECK(data["shadow"]["steps"] == 3000);
  REQUIRE(data["shadow"]["points"].size() == kMaxShadowPoints);
  CHECK(data["shadow"]["points"][0][0] == 180.0);  // step 0: the first prefill
  CHECK(html == render_report_html(r));

  // Without a backend, none of it: the page is the plain run's.
  const std::string plain = render_report_html(test::sample_run_report());
  CHECK(plain.find("Real backend") == std::string::npos);
  CHECK(plain.find("chart-shadow") == std::string::npos);
  // A CPU backend without --shadow: the section and its check, no chart.
  RunReport cpu = test::sample_run_report();
  cpu.backend = r.backend;
  cpu.backend->kind = "cpu";
  cpu.backend->measured_time = false;
  cpu.backend->shadow.reset();
  const std::string c = render_report_html(cpu);
  CHECK(c.find("on the cpu: 3000 steps") != std::string::npos);
  CHECK(c.find("the clock came from the cost model") != std::string::npos);
  CHECK(c.find("chart-shadow") == std::string::npos);
  CHECK(c.find("D.shadow") == std::string::npos);
}
