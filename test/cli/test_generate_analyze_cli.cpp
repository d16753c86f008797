// `prefixsim generate` and `prefixsim analyze` end to end: determinism,
// outputs written atomically, bad input -> exit 2 with nothing written.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim;
namespace fs = std::filesystem;

TEST_CASE("generate writes byte-identical traces for the same seed", "[cli][generate]") {
  const std::string dir = test::temp_dir("gen");
  const auto a = test::run_cli({"generate", "multi-turn", "--requests", "80", "--seed", "5", "-o", dir + "/a.jsonl"});
  const auto b = test::run_cli({"generate", "multi-turn", "--requests", "80", "--seed", "5", "-o", dir + "/b.jsonl"});
  const auto c = test::run_cli({"generate", "multi-turn", "--requests", "80", "--seed", "6", "-o", dir + "/c.jsonl"});
  REQUIRE(a.rc == 0);
  REQUIRE(b.rc == 0);
  REQUIRE(c.rc == 0);
  const std::string ta = test::read_file(dir + "/a.jsonl");
  CHECK(std::count(ta.begin(), ta.end(), '\n') == 80);
  CHECK(ta == test::read_file(dir + "/b.jsonl"));
  CHECK(ta != test::read_file(dir + "/c.jsonl"));
  // Standard output gives the same bytes.
  const auto s = test::run_cli({"generate", "multi-turn", "--requests", "80", "--seed", "5", "-o", "-"});
  CHECK(s.out == ta);
}

TEST_CASE("generate rejects an unknown preset with exit 2 and writes nothing", "[cli][generate]") {
  const std::string dir = test::temp_dir("gen-bad");
  const auto r = test::run_cli({"generate", "chatbott", "-o", dir + "/x.jsonl"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown workload 'chatbott'"));
  CHECK(fs::is_empty(dir));
  const auto list = test::run_cli({"generate", "--list"});
  CHECK(list.rc == 0);
  CHECK_THAT(list.out, Catch::Contains("batch-summarization"));
}

TEST_CASE("analyze of a generated trace writes analysis.json, analysis.md and a Graphviz file", "[cli][analyze]") {
  const std::string dir = test::temp_dir("analyze");
  REQUIRE(test::run_cli({"generate", "chatbot", "--requests", "300", "-o", dir + "/t.jsonl"}).rc == 0);
  const auto r = test::run_cli({"analyze", dir + "/t.jsonl", "--out", dir + "/out", "--graphviz", dir + "/hot.dot",
                                "--top", "3"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(test::read_file(dir + "/out/analysis.json"));
  CHECK(j["requests"] == 300);
  CHECK(j["block_size"] == 16);
  CHECK(j["unique_blocks"].get<int64_t>() > 300);
  // 512 shared tokens = 32 blocks, hit by the 299 requests after the first.
  REQUIRE(j["hottest_prefixes"].size() >= 1);
  CHECK(j["hottest_prefixes"][0]["tokens"] == 512);
  CHECK(j["hottest_prefixes"][0]["reuse"] == 299);
  CHECK(j["ideal_hit_rate"].get<double>() > 0.9);
  CHECK(j["ideal_block_hit_rate"].get<double>() > 0.0);
  CHECK(j["lru_check"]["hit_rate"].get<double>() > 0.9);
  CHECK(j["kv_budget"].size() == 4);
  CHECK_THAT(test::read_file(dir + "/out/analysis.md"), Catch::Contains("Hottest prefixes"));
  CHECK_THAT(test::read_file(dir + "/hot.dot"), Catch::StartsWith("digraph"));
}

TEST_CASE("analyze of a missing trace exits 2 and writes nothing", "[cli][analyze]") {
  const std::string dir = test::temp_dir("analyze-bad");
  const auto r = test::run_cli({"analyze", dir + "/missing.jsonl", "--out", dir + "/out"});
  CHECK(r.rc == 2);
  CHECK(!fs::exists(dir + "/out/analysis.json"));
  const auto b = test::run_cli({"analyze", dir + "/missing.jsonl", "--block-size", "0"});
  CHECK(b.rc == 2);
}
