// The scenario core under replay and compare (sim/scenario/scenario_fleet.h): one
// option table for flags, YAML and the report's echo; compare's engine pairs
// equal replay with the same flags; the load flags and the saturation line;
// cache mode's series.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test/support.h"

namespace test_scenario_core_cli {

using namespace prefixsim::test;
using nlohmann::json;

json json_of(const std::string& path) { return json::parse(read_file(path)); }

// Ten requests one second apart, each a new 20-token prompt after a shared 8.
std::string ten_at_one_per_second(const std::string& dir) {
  std::string t;
  for (int i = 0; i < 10; ++i) {
    t += R"({"id":"r)" + std::to_string(i) + R"(","t":)" + std::to_string(i) + R"(.0,"tokens":[1,2,3,4,5,6,7,8)";
    for (int k = 0; k < 12; ++k) t += "," + std::to_string(100 + 20 * i + k);
    t += R"(],"output_len":4})" "\n";
  }
  return write_text_file(dir, "ten.jsonl", t);
}

TEST_CASE("compare --mode engine gives, pair for pair, what replay gives with the same flags", "[cli][scenario]") {
  const std::string dir = temp_dir("core-pairs");
  const std::string trace = dir + "/mt.jsonl";
  REQUIRE(run_cli({"generate", "multi-turn", "--requests", "300", "--seed", "5", "-o", trace}).rc == 0);
  // Settings compare ignored before it shared replay's core: TP, the
  // scheduler's limits, chunked prefill, the memory fraction.
  const std::vector<std::string> flags = {"--tp", "2", "--max-num-seqs", "12", "--max-num-batched-tokens", "1024",
                                          "--no-chunked-prefill", "--gpu-mem-util", "0.5", "--block-size", "32"};
  std::vector<std::string> cmp = {"compare", trace, "--mode", "engine", "--policies", "lru,s3fifo", "--kv-tokens",
                                  "40000,120000", "--threads", "2", "--quiet", "--out", dir + "/cmp"};
  cmp.insert(cmp.end(), flags.begin(), flags.end());
  auto c = run_cli(cmp);
  INFO(c.err);
  REQUIRE(c.rc == 0);
  const json results = json_of(dir + "/cmp/compare.json")["results"];
  REQUIRE(results.size() == 4);
  for (const json& pair : results) {
    const std::string policy = pair["policy"];
    const std::string tokens = std::to_string(pair["capacity_tokens"].get<int64_t>());
    std::vector<std::string> rep = {"replay", trace, "--policy", policy, "--kv-tokens", tokens, "--quiet", "--out",
                                    dir + "/r-" + policy + "-" + tokens};
    rep.insert(rep.end(), flags.begin(), flags.end());
    auto r = run_cli(rep);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const json report = json_of(dir + "/r-" + policy + "-" + tokens + "/report.json");
    INFO(policy << " at " << tokens << " tokens");
    CHECK(report["scenario"]["tp"] == 2);
    CHECK(report["kv_cache"]["num_blocks"] == pair["kv_blocks"]);
    CHECK(report["prefix_cache"]["hit_rate"] == pair["hit_rate"]);
    CHECK(report["prefix_cache"]["evictions"] == pair["evictions"]);
    CHECK(report["latency_ms"]["ttft"]["p50"] == pair["ttft_p50_ms"]);
    CHECK(report["latency_ms"]["ttft"]["p99"] == pair["ttft_p99_ms"]);
  }
  // And the flags matter: TP 1 gives other latencies.
  auto tp1 = run_cli({"compare", trace, "--mode", "engine", "--policies", "lru", "--kv-tokens", "40000", "--quiet",
                      "--out", dir + "/tp1", "--block-size", "32"});
  REQUIRE(tp1.rc == 0);
  CHECK(json_of(dir + "/tp1/compare.json")["results"][0]["ttft_p50_ms"] != results[0]["ttft_p50_ms"]);
}

TEST_CASE("every scenario key in a YAML file gives the report the same scenario as the same flags",
          "[cli][scenario]") {
  const std::string dir = temp_dir("core-table");
  const std::string trace = ten_at_one_per_second(dir);
  const std::string yaml = write_text_file(dir, "s.yaml",
                                 "trace: " + trace +
                                     "\nrequests: 8\ntime_scale: 2\nseed: 3\nformat: native\ntrace_block_size: 0\n"
                                     "conversation_rate: 2\nsort: true\nmode: engine\npolicy: lfu\nblock_size: 8\n"
                                     "model: qwen2.5-7b\ngpu: a100-80gb\ngpu_mem_util: 0.8\ntp: 2\n"
                                     "kv_tokens: 4096\nkv_cache_dtype: fp8\nscheduler:\n  max_num_seqs: 4\n"
                                     "  max_num_batched_tokens: 512\n  enable_chunked_prefill: false\n"
                                     "  long_prefill_token_threshold: 64\nseries_interval_s: 0.5\n");
  auto y = run_cli({"replay", "--config", yaml, "--quiet", "--out", dir + "/y"});
  INFO(y.err);
  REQUIRE(y.rc == 0);
  auto f = run_cli({"replay", trace, "--requests", "8", "--time-scale", "2", "--seed", "3", "--format", "native",
                    "--trace-block-size", "0", "--conversation-rate", "2", "--sort", "--mode", "engine", "--policy",
                    "lfu", "--block-size", "8", "--model", "qwen2.5-7b", "--gpu", "a100-80gb", "--gpu-mem-util",
                    "0.8", "--tp", "2", "--kv-tokens", "4096", "--kv-cache-dtype", "fp8", "--max-num-seqs", "4",
                    "--max-num-batched-tokens", "512", "--no-chunked-prefill", "--long-prefill-token-threshold", "64",
                    "--series-interval", "0.5", "--quiet", "--out", dir + "/f"});
  INFO(f.err);
  REQUIRE(f.rc == 0);
  const json a = json_of(dir + "/y/report.json"), b = json_of(dir + "/f/report.json");
  CHECK(a["scenario"] == b["scenario"]);
  CHECK(a["scenario"]["time_scale"] == 2.0);
  CHECK(a["scenario"]["scheduler"]["enable_chunked_prefill"] == false);
  CHECK(a["scenario"]["kv_cache_dtype"] == "fp8");
  CHECK(read_file(dir + "/y/report.json") == read_file(dir + "/f/report.json"));
  // Results are not configuration: they have their own section.
  CHECK(!a["scenario"].contains("event_fingerprint"));
  CHECK(!a["scenario"].contains("refused_requests"));
  CHECK(a["run"]["event_fingerprint"].is_number());
  CHECK(a["run"]["refused_requests"] == 0);
}

TEST_CASE("--time-scale multiplies a trace's gaps and --rate rescales it to the asked mean rate",
          "[cli][scenario][load]") {
  const std::string dir = temp_dir("core-load");
  const std::string trace = ten_at_one_per_second(dir);
  auto as_is = run_cli({"replay", trace, "--quiet", "--out", dir + "/a"});
  auto slow = run_cli({"replay", trace, "--time-scale", "3", "--quiet", "--out", dir + "/s"});
  auto fast = run_cli({"replay", trace, "--rate", "4", "--quiet", "--out", dir + "/f"});
  INFO(as_is.err << slow.err << fast.err);
  REQUIRE((as_is.rc == 0 && slow.rc == 0 && fast.rc == 0));
  const json a = json_of(dir + "/a/report.json")["load"];
  const json s = json_of(dir + "/s/report.json")["load"];
  const json f = json_of(dir + "/f/report.json")["load"];
  CHECK(a["arrival_span_s"].get<double>() == Approx(9.0));
  CHECK(a["offered_requests_per_s"].get<double>() == Approx(1.0));
  CHECK(s["arrival_span_s"].get<double>() == Approx(27.0));
  CHECK(s["time_scale"] == 3.0);
  CHECK(f["offered_requests_per_s"].get<double>() == Approx(4.0));
  CHECK(f["time_scale"].get<double>() == Approx(0.25));
  // The first N requests are measured, not the whole file.
  auto part = run_cli({"replay", trace, "--requests", "5", "--rate", "2", "--quiet", "--out", dir + "/p"});
  REQUIRE(part.rc == 0);
  CHECK(json_of(dir + "/p/report.json")["load"]["time_scale"].get<double>() == Approx(0.5));
}

TEST_CASE("an overloaded replay says it is saturated and about how many replicas it needs; a light one does not",
          "[cli][scenario][load]") {
  const std::string dir = temp_dir("core-saturation");
  auto heavy = run_cli({"replay", "--workload", "rag", "--requests", "300", "--rate", "500", "--out", dir + "/h"});
  INFO(heavy.err);
  REQUIRE(heavy.rc == 0);
  const json h = json_of(dir + "/h/report.json")["load"];
  CHECK(h["saturated"] == true);
  CHECK(h["drain_ratio"].get<double>() >= 1.25);
  CHECK(h["replicas_needed"].get<int64_t>() >= 2);
  CHECK(heavy.out.find("saturated: arrivals exceed service by") != std::string::npos);
  CHECK(read_file(dir + "/h/summary.md").find("replicas would be needed") != std::string::npos);
  auto light = run_cli({"replay", "--workload", "rag", "--requests", "300", "--rate", "0.2", "--out", dir + "/l"});
  REQUIRE(light.rc == 0);
  CHECK(json_of(dir + "/l/report.json")["load"]["saturated"] == false);
  CHECK(light.out.find("saturated") == std::string::npos);
  // Cache mode has no time: no load section.
  auto cache = run_cli({"replay", "--requests", "50", "--mode", "cache", "--quiet", "--out", dir + "/c"});
  REQUIRE(cache.rc == 0);
  CHECK(json_of(dir + "/c/report.json")["load"].is_null());
}

TEST_CASE("cache mode fills series.csv per span of requests, summing to the report's totals", "[cli][scenario]") {
  const std::string dir = temp_dir("core-cache-series");
  auto r = run_cli({"replay", "--workload", "multi-turn", "--requests", "1000", "--mode", "cache", "--kv-tokens",
                    "200000", "--quiet", "--out", dir + "/o"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/o/report.json");
  std::istringstream csv(read_file(dir + "/o/series.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line.rfind("request,hit_rate,queried_tokens,hit_tokens,", 0) == 0);
  uint64_t rows = 0, queried = 0, hits = 0, finished = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    REQUIRE(cells.size() >= 9);
    CHECK(std::stod(cells[0]) == 100.0 * static_cast<double>(rows));  // 100 requests a row
    queried += std::stoull(cells[2]);
    hits += std::stoull(cells[3]);
    finished += std::stoull(cells[8]);
    ++rows;
  }
  CHECK(rows == 10);
  CHECK(queried == rep["prefix_cache"]["queried_tokens"].get<uint64_t>());
  CHECK(hits == rep["prefix_cache"]["hit_tokens"].get<uint64_t>());
  CHECK(finished == 1000);
}

// Three requests, block size 4 (test_replay_cli's tiny trace):
//   r1 t=0 [1..8]        hits 0 of 8
//   r2 t=1 [1..10]       hits 8 of 10 (r1's two blocks)
//   r3 t=2 [1..4, 7x4]   hits 4 of 8
// Cold: 12/26. Warmed by r1: 12/18. Warmed by r1 and r2 (first 1.5 s): 4/8.
TEST_CASE("--warmup replays the first requests to warm the cache and leaves them out of every figure",
          "[cli][scenario][warmup]") {
  const std::string dir = temp_dir("core-warmup");
  const std::string trace = write_text_file(dir, "tiny.jsonl",
      R"({"id":"r1","t":0.0,"tokens":[1,2,3,4,5,6,7,8],"output_len":1})" "\n"
      R"({"id":"r2","t":1.0,"tokens":[1,2,3,4,5,6,7,8,9,10],"output_len":1})" "\n"
      R"({"id":"r3","t":2.0,"tokens":[1,2,3,4,7,7,7,7],"output_len":1})" "\n");
  struct Case {
    std::vector<std::string> flags;
    double hit_rate;
    uint64_t queried, counted_requests;
    json warm;  // run.warmup_requests
  };
  const std::vector<Case> cases = {
      {{}, 12.0 / 26, 26, 3, nullptr},
      {{"--warmup", "1"}, 12.0 / 18, 18, 2, 1},
      {{"--warmup-seconds", "1.5"}, 4.0 / 8, 8, 1, 2},
  };
  for (const char* mode : {"cache", "engine"}) {
    for (const Case& c : cases) {
      std::vector<std::string> args = {"replay", trace, "--block-size", "4", "--kv-blocks", "64", "--mode", mode,
                                       "--quiet", "--out", dir + "/o"};
      args.insert(args.end(), c.flags.begin(), c.flags.end());
      auto r = run_cli(args);
      INFO(mode << (c.flags.empty() ? "" : " " + c.flags[0]) << ": " << r.err);
      REQUIRE(r.rc == 0);
      const json rep = json_of(dir + "/o/report.json");
      CHECK(rep["prefix_cache"]["hit_rate"].get<double>() == Approx(c.hit_rate));
      CHECK(rep["prefix_cache"]["ideal_hit_rate"].get<double>() == Approx(c.hit_rate));  // the pool never evicts
      CHECK(rep["prefix_cache"]["queried_tokens"] == c.queried);
      CHECK(rep["trace"]["requests"] == c.counted_requests);
      CHECK(rep["run"]["warmup_requests"] == c.warm);
      if (std::string(mode) == "engine") {
        CHECK(rep["latency_ms"]["ttft"]["count"] == c.counted_requests);
        // vLLM's lookup counters leave the warm-up out too: no lookup is
        // refused or repeated here, so they agree with hit_rate exactly.
        const json& l = rep["prefix_cache"]["lookups"];
        CHECK(l["requests"] == c.counted_requests);
        CHECK(l["queries"] == c.queried);
        CHECK(l["hit_rate"].get<double>() == Approx(c.hit_rate));
        const std::string prom = read_file(dir + "/o/metrics.prom");
        const size_t at = prom.find("\nvllm:prefix_cache_queries_total{");
        REQUIRE(at != std::string::npos);
        const size_t value = prom.find("} ", at) + 2;
        CHECK(std::stod(prom.substr(value, prom.find('\n', value) - value)) == static_cast<double>(c.queried));
      }
      if (!c.warm.is_null())
        CHECK(read_file(dir + "/o/summary.md").find("warmed the cache and are left out") != std::string::npos);
    }
  }
  auto both = run_cli({"replay", trace, "--warmup", "1", "--warmup-seconds", "1", "--out", dir + "/b"});
  CHECK(both.rc == 2);
  CHECK(both.err.find("--warmup: give --warmup or --warmup-seconds, not both") != std::string::npos);
}

}  // namespace test_scenario_core_cli
