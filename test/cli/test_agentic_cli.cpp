// Dynamic agentic Mooncake traces through the binary: replay, compare and
// analyze accept the fixture, detected by content, with the hand-computed
// ideal hit rate; the engine (and a fleet) run it by its dependencies.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test/support.h"

namespace test_agentic_cli {

using namespace prefixsim::test;
using nlohmann::json;

json json_of(const std::string& path) { return json::parse(read_file(path)); }

// test/data/traces/agentic_mooncake_small.jsonl (hand computation in
// test/traces/test_agentic_mooncake.cpp): ideal 3072/6144 = 0.5, reached by
// the engine and by cache mode with a pool that evicts nothing. The engine
// honours the dependencies: the five requests, recorded over 400 ms, are
// done within about 160 ms of simulated time on the default model and GPU.
TEST_CASE("replay, compare and analyze read an agentic Mooncake trace; the engine runs it by its dependencies",
          "[cli][agentic]") {
  const std::string trace = data_path("traces/agentic_mooncake_small.jsonl");
  const std::string dir = temp_dir("agentic-cli");
  auto r = run_cli({"replay", trace, "--kv-blocks", "2000", "--out", dir + "/engine", "--quiet"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/engine/report.json");
  CHECK(rep["trace"]["format"] == "agentic-mooncake");
  CHECK(rep["trace"]["requests"] == 5);
  CHECK(rep["prefix_cache"]["hit_tokens"] == 3072);
  CHECK(rep["prefix_cache"]["ideal_hit_rate"].get<double>() == Approx(0.5).epsilon(1e-12));
  // r3 is recorded at 400 ms; by its dependencies it arrives after r2 and c1 finish.
  CHECK(rep["throughput"]["duration_s"].get<double>() < 0.3);

  r = run_cli({"replay", trace, "--mode", "cache", "--kv-blocks", "2000", "--out", dir + "/cache", "--quiet"});
  REQUIRE(r.rc == 0);
  CHECK(json_of(dir + "/cache/report.json")["prefix_cache"]["hit_tokens"] == 3072);

  for (const char* mode : {"cache", "engine"}) {
    r = run_cli({"compare", trace, "--policies", "lru", "--kv-blocks", "2000", "--mode", mode, "--out",
                 dir + "/compare-" + mode, "--quiet"});
    REQUIRE(r.rc == 0);
    CHECK(json_of(dir + "/compare-" + mode + "/compare.json")["results"][0]["hit_tokens"] == 3072);
  }

  r = run_cli({"analyze", trace, "--out", dir + "/analyze"});
  REQUIRE(r.rc == 0);
  CHECK(json_of(dir + "/analyze/analysis.json")["ideal_hit_tokens"] == 3072);
}

// A fleet honours the dependencies across replicas: a request waits for
// predecessors that ran on another replica. kv-aware sends every turn of
// the fixture's prefix family to the replica that caches it, so the hits
// stay the single server's.
TEST_CASE("a fleet runs an agentic trace by its dependencies across replicas", "[cli][agentic][fleet]") {
  const std::string trace = data_path("traces/agentic_mooncake_small.jsonl");
  const std::string dir = temp_dir("agentic-fleet");
  for (const char* router : {"kv-aware", "round-robin"}) {
    INFO(router);
    const std::string out = dir + "/" + router;
    auto r = run_cli({"replay", trace, "--kv-blocks", "2000", "--replicas", "2", "--router", router, "--out", out,
                      "--quiet"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const json rep = json_of(out + "/report.json");
    CHECK(rep["trace"]["requests"] == 5);
    CHECK(rep["run"]["refused_requests"] == 0);
    CHECK(rep["throughput"]["duration_s"].get<double>() < 0.3);
    if (std::string(router) == "kv-aware") CHECK(rep["prefix_cache"]["hit_tokens"] == 3072);
    // round-robin splits the family: fewer hits than one server's.
    if (std::string(router) == "round-robin") CHECK(rep["prefix_cache"]["hit_tokens"].get<int>() < 3072);
  }
}

}  // namespace test_agentic_cli
