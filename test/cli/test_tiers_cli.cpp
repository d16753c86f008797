// KV tiers from the command line: --kv-offloading-size and --kv-tier in
// replay (cache and engine mode, a fleet with a shared store), their report
// sections, compare's --kv-offloading-size axis agreeing with replay, and bad
// tier specs refused with exit 2 naming the flag.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace {
json json_of(const std::string& path) { return json::parse(read_file(path)); }
// multi-turn conversations through a pool too small to keep them: the tiers
// have something to give back.
const std::vector<std::string> kWorkload = {"--workload", "multi-turn", "--requests", "400", "--kv-blocks", "400"};
std::vector<std::string> args(std::vector<std::string> head) {
  head.insert(head.end(), kWorkload.begin(), kWorkload.end());
  head.push_back("--quiet");
  return head;
}
}  // namespace

TEST_CASE("cache mode: an unbounded CPU tier brings the hit rate to the ideal one; bounded ones add less",
          "[cli][tiers]") {
  const std::string dir = temp_dir("tiers-cache");
  REQUIRE(run_cli(args({"replay", "--mode", "cache", "--out", dir + "/none"})).rc == 0);
  auto r = run_cli(args({"replay", "--mode", "cache", "--kv-offloading-size", "inf", "--out", dir + "/inf"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json none = json_of(dir + "/none/report.json"), inf = json_of(dir + "/inf/report.json");
  CHECK(!none.contains("tiers"));
  CHECK(!none["prefix_cache"].contains("hit_rate_with_tiers"));
  const json& pc = inf["prefix_cache"];
  CHECK(pc["hit_rate"] == none["prefix_cache"]["hit_rate"]);  // the GPU's own is unchanged
  CHECK(pc["hit_rate_with_tiers"].get<double>() == Approx(pc["ideal_hit_rate"].get<double>()).epsilon(1e-12));
  CHECK(pc["hit_rate_with_tiers"].get<double>() > pc["hit_rate"].get<double>());
  REQUIRE(inf["tiers"].size() == 1);
  const json& t = inf["tiers"][0];
  CHECK(t["name"] == "cpu");
  CHECK(t["capacity_blocks"].is_null());
  CHECK(t["hit_tokens"] == pc["tier_hit_tokens"]);
  CHECK(t["bytes_read"].get<uint64_t>() ==
        t["hit_tokens"].get<uint64_t>() / 16 * inf["kv_cache"]["bytes_per_block"].get<uint64_t>());
  CHECK(inf["scenario"]["kv_offloading_size"] == "inf");
  // A bounded write-back tier lies between the GPU alone and the ideal.
  REQUIRE(run_cli(args({"replay", "--mode", "cache", "--kv-tier", "cpu:size=2,read=50,store=evict", "--out",
                        dir + "/evict"}))
              .rc == 0);
  const double evict = json_of(dir + "/evict/report.json")["prefix_cache"]["hit_rate_with_tiers"].get<double>();
  CHECK(evict > none["prefix_cache"]["hit_rate"].get<double>());
  CHECK(evict < pc["hit_rate_with_tiers"].get<double>());
  CHECK(read_file(dir + "/inf/summary.md").find("## KV tiers below the GPU") != std::string::npos);
  CHECK(read_file(dir + "/inf/metrics.prom").find("vllm:external_prefix_cache_hits_total") != std::string::npos);
  CHECK(read_file(dir + "/inf/series.csv").find(",tier_hit_rate,tier_hit_tokens") != std::string::npos);
  CHECK(read_file(dir + "/inf/report.html").find("chart-tiers") != std::string::npos);
}

TEST_CASE("engine mode: loads show in TTFT as queue + load + prefill, and a shared store serves the fleet",
          "[cli][tiers]") {
  const std::string dir = temp_dir("tiers-engine");
  auto r = run_cli(args({"replay", "--replicas", "4", "--kv-tier",
                         "store:size=50,read=10,write=10,latency=20,shared", "--out", dir}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/report.json");
  REQUIRE(rep["tiers"].size() == 1);
  CHECK(rep["tiers"][0]["shared"] == true);
  CHECK(rep["tiers"][0]["instances"] == 1);
  CHECK(rep["tiers"][0]["hit_tokens"].get<uint64_t>() > 0);
  const json& lat = rep["latency_ms"];
  REQUIRE(lat.contains("load"));
  CHECK(lat["load"]["mean"].get<double>() > 0);
  // Means add up: TTFT = queue + load + prefill for every request.
  CHECK(lat["ttft"]["mean"].get<double>() ==
        Approx(lat["queue"]["mean"].get<double>() + lat["load"]["mean"].get<double>() +
               lat["prefill"]["mean"].get<double>())
            .epsilon(1e-9));
  const json& tl = rep["prefix_cache"]["tier_lookups"];
  CHECK(tl["hits"].get<uint64_t>() >= rep["prefix_cache"]["tier_hit_tokens"].get<uint64_t>());
  CHECK(read_file(dir + "/metrics.prom").find("prefixsim:kv_tier_hit_tokens_total{model_name=\"llama-3.1-8b\","
                                              "engine=\"0\",tier=\"store\"}") != std::string::npos);
}

TEST_CASE("engine mode: loads from a CPU tier into a small pool never strand the queue (vllm#45388, #57841)",
          "[cli][tiers]") {
  // Multi-turn at 100 and 150 blocks: requests parked with KV loaded hold
  // blocks; a preempted request that cannot fit used to be put ahead of them,
  // and no later step scheduled anything (exit 3, "made no progress").
  for (const char* blocks : {"100", "150"}) {
    INFO(blocks);
    const std::string dir = temp_dir(std::string("tiers-strand-") + blocks);
    const auto r = run_cli({"replay", "--workload", "multi-turn", "--requests", "60", "--kv-blocks", blocks, "--kv-tier",
                            "cpu:size=0.5,read=50", "--out", dir, "--quiet"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const json rep = json_of(dir + "/report.json");
    CHECK(rep["prefix_cache"]["tier_hit_tokens"].get<uint64_t>() > 0);
    CHECK(rep["trace"]["requests"] == 60);  // every request that fits the pool finished
    CHECK(rep["latency_ms"]["ttft"]["count"].get<uint64_t>() + rep["run"]["refused_requests"].get<uint64_t>() == 60);
  }
}

TEST_CASE("compare --kv-offloading-size: each size equals replay with that size", "[cli][tiers]") {
  const std::string dir = temp_dir("tiers-compare");
  REQUIRE(run_cli({"generate", "multi-turn", "--requests", "400", "-o", dir + "/t.jsonl"}).rc == 0);
  auto c = run_cli({"compare", dir + "/t.jsonl", "--policies", "lru", "--kv-blocks", "400", "--kv-offloading-size",
                    "0,2,inf", "--out", dir + "/cmp", "--quiet"});
  INFO(c.err);
  REQUIRE(c.rc == 0);
  const json cmp = json_of(dir + "/cmp/compare.json");
  REQUIRE(cmp["results"].size() == 3);
  const char* const gibs[] = {"0", "2", "inf"};
  for (size_t i = 0; i < 3; ++i) {
    const json& row = cmp["results"][i];
    const std::string out = dir + "/r" + std::to_string(i);
    std::vector<std::string> a = {"replay", dir + "/t.jsonl", "--mode", "cache", "--kv-blocks", "400",
                                  "--kv-offloading-size", gibs[i], "--out", out, "--quiet"};
    REQUIRE(run_cli(a).rc == 0);
    const json rep = json_of(out + "/report.json");
    CHECK(rep["prefix_cache"]["hit_tokens"] == row["hit_tokens"]);
    CHECK(rep["prefix_cache"].value("tier_hit_tokens", int64_t{0}) == row["tier_hit_tokens"].get<int64_t>());
  }
  CHECK(cmp["results"][2]["tier_hit_tokens"].get<int64_t>() > cmp["results"][1]["tier_hit_tokens"].get<int64_t>());
}

TEST_CASE("bad tier specs are exit 2 naming the flag and write nothing", "[cli][tiers]") {
  const std::string dir = temp_dir("tiers-bad");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--kv-offloading-size", "-3"}, "--kv-offloading-size"},
      {{"--kv-tier", "ssd:read=5"}, "--kv-tier ssd: size=GiB is required"},
      {{"--kv-tier", "ssd:size=10"}, "--kv-tier ssd: read"},
      {{"--kv-tier", "ssd:size=10,read=5,store=later"}, "store must be compute or evict"},
      {{"--kv-tier", "ssd:size=10,read=5,colour=red"}, "unknown parameter 'colour'"},
      {{"--kv-tier", "ssd:size=10,read=5,policy=belady"}, "needs the trace's future"},
      {{"--kv-tier", "ssd:size=10,read=5,policy=nosuch"}, "nosuch"},
      {{"--kv-tier", "ssd:size=10,read=5;"}, "empty tier spec"},
      {{"--kv-tier", ";ssd:size=10,read=5"}, "empty tier spec"},
      {{"--kv-offloading-size", "4", "--kv-tier", "cpu:size=10,read=5"}, "two tiers are named 'cpu'"},
      {{"--kv-tier", "ssd:size=0.000001,read=5"}, "holds no block"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> a = {"replay", "--mode", "cache", "--workload", "chatbot", "--requests", "10", "--out",
                                  dir};
    a.insert(a.end(), flags.begin(), flags.end());
    const CliResult r = run_cli(a);
    INFO(flags.back() << ": " << r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(dir + "/report.json"));
  }
}
