// `replay --replicas N --router R` from the command line: the fleet's
// report sections agree with its totals, one replica is today's report byte
// for byte, and fleet misuse is exit 2 with the flag named.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace {
json json_of(const std::string& path) { return json::parse(read_file(path)); }
const std::vector<std::string> kWorkload = {"--workload", "multi-turn", "--requests", "300", "--kv-blocks", "3000"};
std::vector<std::string> args(std::vector<std::string> head, const std::vector<std::string>& tail = kWorkload) {
  head.insert(head.end(), tail.begin(), tail.end());
  head.push_back("--quiet");
  return head;
}
}  // namespace

TEST_CASE("replay of a fleet reports each replica, and they add up to the fleet", "[cli][fleet]") {
  const std::string dir = temp_dir("fleet-cli");
  auto r = run_cli(args({"replay", "--replicas", "3", "--router", "kv-aware", "--out", dir}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/report.json");
  CHECK(rep["scenario"]["replicas"] == 3);
  CHECK(rep["scenario"]["router"] == "kv-aware");
  REQUIRE(rep["replicas"].size() == 3);
  CHECK(rep["fleet"]["replicas"] == 3);
  uint64_t requests = 0, prompt = 0, hits = 0, evictions = 0;
  for (const json& x : rep["replicas"]) {
    requests += x["requests"].get<uint64_t>();
    prompt += x["prompt_tokens"].get<uint64_t>();
    hits += x["hit_tokens"].get<uint64_t>();
    evictions += x["evictions"].get<uint64_t>();
    CHECK(x["requests"].get<uint64_t>() > 0);
  }
  CHECK(requests == rep["trace"]["requests"].get<uint64_t>());
  CHECK(prompt == rep["prefix_cache"]["queried_tokens"].get<uint64_t>());
  CHECK(hits == rep["prefix_cache"]["hit_tokens"].get<uint64_t>());
  CHECK(evictions == rep["prefix_cache"]["evictions"].get<uint64_t>());
  const double imb = rep["fleet"]["imbalance"]["requests"].get<double>();
  CHECK(imb >= 1.0);
  CHECK(imb <= 3.0);
  // series.csv: per-replica columns; metrics.prom: one series per replica.
  const std::string csv = read_file(dir + "/series.csv");
  CHECK(csv.find(",r0_hit_rate,r0_kv_usage,r0_waiting,r0_running,r1_hit_rate") != std::string::npos);
  const std::string prom = read_file(dir + "/metrics.prom");
  for (const char* rep_label : {"replica=\"0\"", "replica=\"1\"", "replica=\"2\""})
    CHECK(prom.find(std::string("vllm:prefix_cache_hits_total{model_name=\"llama-3.1-8b\",engine=\"0\",") +
                    rep_label) != std::string::npos);
  CHECK(read_file(dir + "/summary.md").find("## Replicas") != std::string::npos);
  CHECK(read_file(dir + "/report.html").find("chart-replica-kv") != std::string::npos);
}

TEST_CASE("replay with one replica writes today's report whatever the router", "[cli][fleet]") {
  const std::string dir = temp_dir("fleet-one");
  REQUIRE(run_cli(args({"replay", "--out", dir + "/plain"})).rc == 0);
  REQUIRE(run_cli(args({"replay", "--replicas", "1", "--router", "prefix", "--out", dir + "/one"})).rc == 0);
  for (const char* f : {"report.json", "series.csv", "summary.md", "metrics.prom", "report.html"}) {
    INFO(f);
    CHECK(read_file(dir + "/plain/" + f) == read_file(dir + "/one/" + f));
  }
}

TEST_CASE("a router whose KV events lag believes what the replicas no longer hold; lag 0 is today's run",
          "[cli][fleet]") {
  const std::string dir = temp_dir("fleet-lag");
  auto replay = [&](const std::string& out, std::vector<std::string> more) {
    std::vector<std::string> a = {"replay", "--replicas", "3", "--router", "kv-aware", "--out", dir + "/" + out};
    a.insert(a.end(), more.begin(), more.end());
    // A small pool churns: blocks are evicted while the router still counts them.
    return run_cli(args(a, {"--workload", "multi-turn", "--requests", "300", "--kv-blocks", "300"}));
  };
  REQUIRE(replay("plain", {}).rc == 0);
  REQUIRE(replay("zero", {"--router-kv-lag-ms", "0"}).rc == 0);
  for (const char* f : {"report.json", "series.csv", "summary.md", "metrics.prom"}) {
    INFO(f);
    CHECK(read_file(dir + "/plain/" + f) == read_file(dir + "/zero/" + f));
  }
  CHECK_FALSE(json_of(dir + "/plain/report.json")["fleet"].contains("router_view"));
  auto r = replay("late", {"--router-kv-lag-ms", "2000"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/late/report.json");
  CHECK(rep["scenario"]["router_kv_lag_ms"] == 2000);
  const json v = rep["fleet"]["router_view"];
  CHECK(v["kv_lag_ms"] == 2000);
  CHECK(v["decisions"] == 300);
  CHECK(v["mispredicted"].get<int>() > 0);
  CHECK(v["predicted_blocks"] != v["actual_blocks"]);
  CHECK(v["oracle_blocks"].get<int64_t>() >= v["actual_blocks"].get<int64_t>());
  // The stale view changes where requests go, so the hits differ from the lag-0 run's.
  CHECK(rep["prefix_cache"]["hit_tokens"] != json_of(dir + "/plain/report.json")["prefix_cache"]["hit_tokens"]);
  // A router that reads no cache has no view to lag.
  std::vector<std::string> rr = {"replay", "--replicas", "3", "--router", "round-robin", "--router-kv-lag-ms", "2000",
                                 "--out", dir + "/rr"};
  REQUIRE(run_cli(args(rr)).rc == 0);
  CHECK_FALSE(json_of(dir + "/rr/report.json")["fleet"].contains("router_view"));
}

TEST_CASE("a router reading load sampled every period sees less than is there; period 0 is today's run",
          "[cli][fleet]") {
  const std::string dir = temp_dir("fleet-scrape");
  auto replay = [&](const std::string& out, std::vector<std::string> more) {
    std::vector<std::string> a = {"replay", "--replicas", "4", "--router", "llm-d:kv-util=2,queue=2", "--out",
                                  dir + "/" + out};
    a.insert(a.end(), more.begin(), more.end());
    // 80 sessions/s: a 1 s sample serves ~80 decisions, enough for the herd
    // to show whatever the step prices (at 40/s it was within noise).
    return run_cli(args(a, {"--workload", "multi-turn", "--requests", "200", "--rate", "80"}));
  };
  REQUIRE(replay("plain", {}).rc == 0);
  REQUIRE(replay("zero", {"--router-scrape-ms", "0"}).rc == 0);
  for (const char* f : {"report.json", "series.csv", "summary.md", "metrics.prom"}) {
    INFO(f);
    CHECK(read_file(dir + "/plain/" + f) == read_file(dir + "/zero/" + f));
  }
  CHECK_FALSE(json_of(dir + "/plain/report.json")["fleet"].contains("router_view"));
  const auto r = replay("slow", {"--router-scrape-ms", "1000"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/slow/report.json");
  CHECK(rep["scenario"]["router_scrape_ms"] == 1000);
  const json v = rep["fleet"]["router_view"];
  CHECK(v["scrape_ms"] == 1000);
  CHECK_FALSE(v.contains("kv_lag_ms"));
  CHECK(v["decisions"] == 200);
  CHECK(v["stale_load_decisions"].get<int>() > 0);
  // Requests routed since the last sample are missing from it.
  CHECK(v["believed_load"].get<int64_t>() < v["actual_load"].get<int64_t>());
  // A stale queue spreads requests worse: the busiest replica takes more.
  CHECK(rep["fleet"]["imbalance"]["requests"].get<double>() >
        json_of(dir + "/plain/report.json")["fleet"]["imbalance"]["requests"].get<double>());
  // Dynamo's router counts its own dispatches: a scrape period changes nothing for it.
  std::vector<std::string> own = {"replay", "--replicas", "4", "--router", "kv-aware", "--workload", "multi-turn",
                                  "--requests", "200", "--rate", "40", "--quiet"};
  auto own_at = [&](const std::string& out, const std::string& ms) {
    std::vector<std::string> a = own;
    a.insert(a.end(), {"--router-scrape-ms", ms, "--out", dir + "/" + out});
    return run_cli(a);
  };
  REQUIRE(own_at("own0", "0").rc == 0);
  REQUIRE(own_at("own1000", "1000").rc == 0);
  CHECK_FALSE(json_of(dir + "/own1000/report.json")["fleet"].contains("router_view"));
  CHECK(json_of(dir + "/own0/report.json")["latency_ms"] == json_of(dir + "/own1000/report.json")["latency_ms"]);
}

TEST_CASE("admission at the router refuses past the queue, reports it, and latencies cover those served",
          "[cli][fleet][admission]") {
  const std::string off = temp_dir("adm-off"), on = temp_dir("adm-on");
  // 300 multi-turn requests at 1000/s on 2 replicas: far past what they serve.
  const std::vector<std::string> load = {"--workload", "multi-turn", "--requests", "300", "--rate", "1000",
                                         "--kv-blocks", "3000", "--replicas", "2", "--router", "kv-aware"};
  auto r0 = run_cli(args({"replay", "--out", off}, load));
  REQUIRE(r0.rc == 0);
  auto r1 = run_cli(args({"replay", "--out", on, "--admission", "saturation:waiting=2,queue=4"}, load));
  INFO(r1.err);
  REQUIRE(r1.rc == 0);
  const json a = json_of(off + "/report.json"), b = json_of(on + "/report.json");
  CHECK_FALSE(a.contains("admission"));
  REQUIRE(b.contains("admission"));
  const json& adm = b["admission"];
  CHECK(adm["spec"] == "saturation:waiting=2,kv=0.8,queue=4");
  CHECK(adm["offered_requests"] == 300);
  const uint64_t refused = adm["refused_saturated"].get<uint64_t>() + adm["refused_queue_full"].get<uint64_t>();
  CHECK(refused > 0);
  CHECK(adm["held_requests"].get<uint64_t>() > 0);
  CHECK(adm["max_queue"].get<uint64_t>() <= 4);
  CHECK(b["trace"]["requests"].get<uint64_t>() + refused == 300);
  CHECK(adm["refusal_rate"].get<double>() == Approx(static_cast<double>(refused) / 300));
  // Shedding is what keeps the served requests' TTFT down.
  CHECK(b["latency_ms"]["ttft"]["p99"].get<double>() < a["latency_ms"]["ttft"]["p99"].get<double>());
  CHECK(read_file(on + "/summary.md").find("requests refused") != std::string::npos);
}

TEST_CASE("fleet misuse is exit 2 naming the flag", "[cli][fleet]") {
  const std::string dir = temp_dir("fleet-bad");
  struct Case {
    std::vector<std::string> flags;
    const char* says;
  } cases[] = {
      {{"--replicas", "2", "--router", "nearest"}, "--router: unknown router 'nearest'"},
      {{"--replicas", "0"}, "--replicas: must be in [1, 4096]"},
      {{"--replicas", "2", "--mode", "cache"}, "--replicas: a fleet runs in engine mode"},
      {{"--replicas", "2", "--router", "prefix:cache_threshold=3"}, "--router prefix: cache_threshold must be in"},
      {{"--replicas", "2", "--router", "llm-d:picker=best"}, "--router llm-d: picker must be max-score"},
      {{"--replicas", "2", "--router-kv-lag-ms", "-1"}, "--router-kv-lag-ms: must be in [0, 3600000] ms"},
      {{"--replicas", "2", "--router-scrape-ms", "-5"}, "--router-scrape-ms: must be in [0, 3600000] ms"},
      {{"--replicas", "2", "--router-scrape-ms", "nan"}, "--router-scrape-ms"},
      {{"--replicas", "2", "--steps-out", dir + "/steps.csv"}, "--steps-out: writes one replica's batches"},
      {{"--replicas", "2", "--admission", "shed"}, "--admission: unknown 'shed'"},
      {{"--replicas", "2", "--admission", "saturation:kv=1.5"}, "--admission saturation: kv"},
      {{"--admission", "saturation", "--mode", "cache"}, "--admission: engine mode only"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> a = {"replay", "--out", dir + "/out"};
    a.insert(a.end(), c.flags.begin(), c.flags.end());
    const CliResult r = run_cli(args(a));
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

TEST_CASE("compare runs every router and fleet size on one trace, the same with 1 or 2 threads", "[cli][fleet]") {
  const std::string dir = temp_dir("fleet-compare");
  const std::string trace = dir + "/multi.jsonl";
  REQUIRE(run_cli({"generate", "multi-turn", "--requests", "300", "--seed", "3", "-o", trace}).rc == 0);
  auto cmp = [&](const std::string& out, const std::string& threads) {
    return run_cli({"compare", trace, "--mode", "engine", "--policies", "lru", "--kv-blocks", "3000", "--routers",
                    "round-robin,prefix:cache_threshold=0.5,kv-aware,llm-d,llm-d:precise-prefix=3,kv-util=2,queue=2",
                    "--replicas", "1,3", "--threads", threads,
                    "--out", dir + "/" + out, "--quiet"});
  };
  auto r = cmp("t1", "1");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  REQUIRE(cmp("t2", "2").rc == 0);
  for (const char* f : {"/compare.json", "/compare.csv", "/compare.md"})
    CHECK(read_file(dir + "/t1" + f) == read_file(dir + "/t2" + f));
  const json c = json_of(dir + "/t1/compare.json");
  REQUIRE(c["results"].size() == 10);
  // Every pair equals `replay` with the same router and fleet size.
  for (const json& row : c["results"]) {
    const std::string router = row["router"];
    const std::string n = std::to_string(row["replicas"].get<int>());
    INFO(router << " x " << n);
    const std::string out = dir + "/replay-" + std::to_string(row["replicas"].get<int>()) + "-" +
                            std::to_string(std::hash<std::string>{}(router));
    REQUIRE(run_cli({"replay", trace, "--kv-blocks", "3000", "--replicas", n, "--router", router, "--out", out,
                     "--quiet"}).rc == 0);
    const json rep = json_of(out + "/report.json");
    CHECK(row["hit_tokens"] == rep["prefix_cache"]["hit_tokens"]);
    CHECK(row["ttft_p99_ms"].get<double>() == Approx(rep["latency_ms"]["ttft"]["p99"].get<double>()).epsilon(1e-9));
    if (n == "1") CHECK(row["imbalance"].is_null());
    else CHECK(row["imbalance"].get<double>() == Approx(rep["fleet"]["imbalance"]["requests"].get<double>()));
  }
  CHECK(run_cli({"compare", trace, "--policies", "lru", "--kv-blocks", "300", "--routers", "prefix", "--out",
                 dir + "/bad", "--quiet"}).rc == 2);  // cache mode has no fleets
}
