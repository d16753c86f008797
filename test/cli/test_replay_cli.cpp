// `prefixsim replay` end to end through the binary: the default run, cache
// mode against hand-computed hits, determinism, scenario precedence, slices.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace {

// Three requests, block size 4, a pool big enough never to evict:
//   r1 [1..8]        lookup sees at most floor(7/4)=1 block: nothing cached yet -> 0
//   r2 [1..8, 9, 10] at most floor(9/4)=2 blocks: r1's two prompt blocks    -> 8
//   r3 [1..4, 7x4]   at most 1 block: [1..4]                                  -> 4
// hit rate = 12 / (8 + 10 + 8) = 12/26.
const char* kTinyTrace =
    R"({"id":"r1","t":0.0,"tokens":[1,2,3,4,5,6,7,8],"output_len":1})"
    "\n"
    R"({"id":"r2","t":1.0,"tokens":[1,2,3,4,5,6,7,8,9,10],"output_len":1})"
    "\n"
    R"({"id":"r3","t":2.0,"tokens":[1,2,3,4,7,7,7,7],"output_len":1})"
    "\n";


json report_of(const std::string& out) { return json::parse(read_file(out + "/report.json")); }

}  // namespace

TEST_CASE("replay with no trace runs the built-in workload and writes all five outputs", "[cli][replay]") {
  const std::string out = temp_dir("replay-default") + "/out";
  auto r = run_cli({"replay", "--requests", "300", "--out", out});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  for (const char* f : {"report.json", "series.csv", "summary.md", "metrics.prom", "report.html"})
    CHECK(std::filesystem::exists(out + "/" + f));
  const json rep = report_of(out);
  CHECK(rep["schema"] == "prefixsim.report/1");
  CHECK(rep["trace"]["requests"] == 300);
  CHECK(rep["trace"]["format"] == "workload:chatbot");
  CHECK(rep["kv_cache"]["block_size"] == 16);
  CHECK(rep["kv_cache"]["num_blocks"].get<int64_t>() > 1000);
  // The chatbot preset shares a 512-token system prompt: high hit rate.
  CHECK(rep["prefix_cache"]["hit_rate"].get<double>() > 0.85);
  CHECK(rep["prefix_cache"]["hit_rate"].get<double>() <= rep["prefix_cache"]["ideal_hit_rate"].get<double>() + 1e-9);
  for (const char* k : {"mean", "p50", "p90", "p95", "p99", "max"}) CHECK(rep["latency_ms"]["ttft"][k].is_number());
  CHECK(rep["engine"]["steps"].get<int64_t>() > 0);
  CHECK(rep["throughput"]["requests_per_s"].get<double>() > 0);
  CHECK(read_file(out + "/metrics.prom").find("vllm:time_to_first_token_seconds_bucket") != std::string::npos);
}

TEST_CASE("cache-mode replay of a tiny trace gives the hand-computed hit rate", "[cli][replay]") {
  const std::string dir = temp_dir("replay-cache");
  const std::string trace = write_text_file(dir, "tiny.jsonl", kTinyTrace);
  auto r = run_cli({"replay", trace, "--mode", "cache", "--block-size", "4", "--kv-blocks", "64", "--out", dir + "/o"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = report_of(dir + "/o");
  CHECK(rep["prefix_cache"]["queried_tokens"] == 26);
  CHECK(rep["prefix_cache"]["hit_tokens"] == 12);
  CHECK(rep["prefix_cache"]["hit_rate"].get<double>() == Approx(12.0 / 26.0));
  CHECK(rep["prefix_cache"]["ideal_hit_rate"].get<double>() == Approx(12.0 / 26.0));
  CHECK(rep["latency_ms"].is_null());  // no time in cache mode
}

TEST_CASE("engine-mode replay of the tiny trace hits the same blocks and finishes every request", "[cli][replay]") {
  const std::string dir = temp_dir("replay-engine");
  const std::string trace = write_text_file(dir, "tiny.jsonl", kTinyTrace);
  auto r = run_cli({"replay", trace, "--block-size", "4", "--kv-blocks", "64", "--out", dir + "/o"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = report_of(dir + "/o");
  CHECK(rep["prefix_cache"]["hit_tokens"] == 12);
  CHECK(rep["trace"]["requests"] == 3);
  CHECK(rep["latency_ms"]["ttft"]["count"] == 3);
  CHECK(rep["prefix_cache"]["evictions"] == 0);
}

TEST_CASE("with PREFIXSIM_PEAK_RSS_FILE set, a command writes its own peak RSS there (for bench)", "[cli][replay]") {
  const std::string dir = temp_dir("replay-peak-rss");
  const std::string trace = write_text_file(dir, "tiny.jsonl", kTinyTrace);
  const std::string peak = dir + "/peak";
  ::setenv("PREFIXSIM_PEAK_RSS_FILE", peak.c_str(), 1);
  auto bad = run_cli({"replay", dir + "/missing.jsonl", "--out", dir + "/o2"});
  const bool written_on_failure = std::filesystem::exists(peak);
  auto r = run_cli({"replay", trace, "--block-size", "4", "--kv-blocks", "64", "--out", dir + "/o"});
  ::unsetenv("PREFIXSIM_PEAK_RSS_FILE");
  CHECK(bad.rc == 2);
  CHECK_FALSE(written_on_failure);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  std::ifstream in(peak);
  int64_t kb = 0;
  REQUIRE(in >> kb);
  CHECK(kb > 1000);       // a process image of some MB...
  CHECK(kb < 1'000'000);  // ...but not 1 GB for a 3-request trace
  // Then the block operations (sim/kv/block_ops.h): every block a request
  // took is released by the end of the run, and each kind happened.
  uint64_t looked_up = 0, allocated = 0, cached = 0, freed = 0;
  REQUIRE(in >> looked_up >> allocated >> cached >> freed);
  CHECK(looked_up > 0);
  CHECK(cached > 0);
  CHECK(allocated > 0);
  CHECK(allocated == freed);
}

TEST_CASE("two replays with the same inputs give byte-identical reports", "[cli][replay][determinism]") {
  const std::string dir = temp_dir("replay-det");
  for (const char* mode : {"engine", "cache"}) {
    auto a = run_cli({"replay", "--workload", "multi-turn", "--requests", "400", "--mode", mode, "--out", dir + "/a"});
    auto b = run_cli({"replay", "--workload", "multi-turn", "--requests", "400", "--mode", mode, "--out", dir + "/b"});
    REQUIRE(a.rc == 0);
    REQUIRE(b.rc == 0);
    for (const char* f : {"report.json", "series.csv", "summary.md", "metrics.prom", "report.html"}) {
      INFO(mode << " " << f);
      CHECK(read_file(dir + "/a/" + f) == read_file(dir + "/b/" + f));
    }
  }
  // A different seed changes the traffic, and so the report.
  auto c = run_cli({"replay", "--workload", "multi-turn", "--requests", "400", "--seed", "7", "--out", dir + "/c"});
  REQUIRE(c.rc == 0);
  CHECK(read_file(dir + "/a/report.json") != read_file(dir + "/c/report.json"));
}

TEST_CASE("flags override the scenario file, which overrides the defaults", "[cli][replay][scenario]") {
  const std::string dir = temp_dir("replay-scn");
  const std::string scn = write_text_file(dir, "s.yaml",
                                "workload: rag\nrequests: 150\nmode: cache\nblock_size: 32\nkv_tokens: 200000\n"
                                "scheduler:\n  max_num_seqs: 64\n");
  auto r = run_cli({"replay", "--config", scn, "--block-size", "16", "--out", dir + "/o"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = report_of(dir + "/o");
  CHECK(rep["scenario"]["workload"] == "rag");
  CHECK(rep["scenario"]["mode"] == "cache");
  CHECK(rep["scenario"]["block_size"] == 16);  // the flag wins
  CHECK(rep["scenario"]["scheduler"]["max_num_seqs"] == 64);
  CHECK(rep["kv_cache"]["block_size"] == 16);
  CHECK(rep["trace"]["requests"] == 150);
  auto bad = run_cli({"replay", "--config", write_text_file(dir, "bad.yaml", "mode: cache\nbloc_size: 16\n"), "--out",
                      dir + "/bad"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("bad.yaml:2:") != std::string::npos);
  CHECK(bad.err.find("bloc_size") != std::string::npos);
  CHECK(!std::filesystem::exists(dir + "/bad"));
}
