// replay, compare and analyze on a WEKA / SemiAnalysis JSONL of
// kv-cache-tester conversations (test/data/traces/weka_small.jsonl).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace {
json json_of(const std::string& path) { return json::parse(read_file(path)); }
}  // namespace

// test/data/traces/weka_small.jsonl (hand computation in
// test/traces/test_weka_reader.cpp): ideal 624/1216; LRU reaches it with a
// pool of 1000 blocks (nothing evicted).
TEST_CASE("replay, compare and analyze read a WEKA JSONL of conversations: ideal 624/1216", "[cli][weka]") {
  const std::string trace = data_path("traces/weka_small.jsonl");
  const std::string dir = temp_dir("weka-cli");
  auto r = run_cli({"replay", trace, "--mode", "cache", "--kv-blocks", "1000", "--out", dir + "/replay", "--quiet"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/replay/report.json");
  CHECK(rep["trace"]["format"] == "kvcache-tester");
  CHECK(rep["trace"]["requests"] == 6);
  CHECK(rep["prefix_cache"]["hit_tokens"] == 624);
  CHECK(rep["prefix_cache"]["queried_tokens"] == 1216);
  CHECK(rep["prefix_cache"]["ideal_hit_rate"].get<double>() == Approx(624.0 / 1216.0).epsilon(1e-12));

  r = run_cli({"replay", trace, "--kv-blocks", "1000", "--out", dir + "/engine", "--quiet"});
  REQUIRE(r.rc == 0);
  CHECK(json_of(dir + "/engine/report.json")["prefix_cache"]["hit_tokens"] == 624);

  r = run_cli({"compare", trace, "--policies", "lru", "--kv-blocks", "20,1000", "--out", dir + "/compare", "--quiet"});
  REQUIRE(r.rc == 0);
  const json cmp = json_of(dir + "/compare/compare.json");
  CHECK(cmp["results"][0]["hit_tokens"].get<int64_t>() < 624);  // 19 usable blocks evict
  CHECK(cmp["results"][1]["hit_tokens"] == 624);

  r = run_cli({"analyze", trace, "--out", dir + "/analyze"});
  REQUIRE(r.rc == 0);
  CHECK(json_of(dir + "/analyze/analysis.json")["ideal_hit_tokens"] == 624);
}
