// `prefixsim replay` over the real Mooncake trace in ../shared (suite real;
// exit 77 when it is absent).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test/support.h"

namespace test_replay_cli_real {

using namespace prefixsim::test;
using nlohmann::json;

json report_of(const std::string& out) { return json::parse(read_file(out + "/report.json")); }

TEST_CASE("replay of a Mooncake slice in cache mode matches the independent LRU figure", "[cli][replay][real]") {
  auto trace = shared_path("traces/mooncake/conversation_trace.jsonl");
  if (!trace) PREFIXSIM_SKIP("../shared/traces is absent");
  const std::string dir = temp_dir("replay-mooncake");
  // 1M tokens of usable blocks at B=16: 62,500 blocks + the null block.
  auto r = run_cli({"replay", *trace, "--mode", "cache", "--kv-blocks", "62501", "--out", dir + "/o"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = report_of(dir + "/o");
  CHECK(rep["trace"]["requests"] == 12031);
  CHECK(rep["prefix_cache"]["hit_rate"].get<double>() * 100 == Approx(5.42).margin(0.3));
  CHECK(rep["prefix_cache"]["ideal_hit_rate"].get<double>() * 100 == Approx(37.36).margin(0.01));
  // A slice through the engine: the first 300 requests all finish.
  auto e = run_cli({"replay", *trace, "--requests", "300", "--out", dir + "/e"});
  INFO(e.err);
  REQUIRE(e.rc == 0);
  const json erep = report_of(dir + "/e");
  CHECK(erep["trace"]["requests"] == 300);
  CHECK(erep["latency_ms"]["ttft"]["count"] == 300);
}

}  // namespace test_replay_cli_real
