// `replay --replica-groups` from the command line: a mixed fleet's groups
// add up to the fleet, a fleet of one group is the uniform fleet event for
// event, the run repeats byte for byte, and bad groups are exit 2 naming
// the flag.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace mixed_fleet_cli {
json report_of(const std::string& dir) { return json::parse(read_file(dir + "/report.json")); }
std::vector<std::string> replay(std::vector<std::string> head, const std::string& dir) {
  for (const char* a : {"--workload", "multi-turn", "--requests", "300", "--rate", "20", "--quiet", "--out"})
    head.push_back(a);
  head.push_back(dir);
  head.insert(head.begin(), "replay");
  return head;
}
const char* kGroups = "h100-sxm-80gb:x=2;h100-sxm-80gb:tp=2:x=1";
}  // namespace mixed_fleet_cli

TEST_CASE("a mixed fleet reports each group, and the groups add up to the fleet", "[cli][fleet][mixed]") {
  using namespace mixed_fleet_cli;
  const std::string dir = temp_dir("mixed-fleet");
  const auto r = run_cli(replay({"--replica-groups", kGroups, "--router", "least-loaded"}, dir));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = report_of(dir);
  CHECK(rep["scenario"]["replica_groups"] == kGroups);
  REQUIRE(rep["replicas"].size() == 3);
  const json& groups = rep["fleet"]["groups"];
  REQUIRE(groups.size() == 2);
  CHECK((groups[0]["gpu"] == "h100-sxm-80gb" && groups[0]["tp"] == 1 && groups[0]["instances"] == 2));
  CHECK((groups[1]["tp"] == 2 && groups[1]["instances"] == 1));
  // Each group's pool is its own server's: TP 2 holds more than twice the
  // blocks of TP 1 (the weights take half the memory of each GPU).
  CHECK(groups[1]["num_blocks"].get<int64_t>() > 2 * groups[0]["num_blocks"].get<int64_t>());
  CHECK(rep["replicas"][2]["requests"] == groups[1]["requests"]);
  uint64_t requests = 0, prompt = 0, hits = 0, finished = 0;
  for (const json& g : groups) {
    requests += g["requests"].get<uint64_t>();
    prompt += g["prompt_tokens"].get<uint64_t>();
    hits += g["hit_tokens"].get<uint64_t>();
    finished += g["finished"].get<uint64_t>();
    CHECK(g["requests"].get<uint64_t>() > 0);
    CHECK(g["ttft_ms"]["count"] == g["requests"]);
  }
  CHECK(requests == rep["trace"]["requests"].get<uint64_t>());
  CHECK(finished == requests);  // no warm-up: every finished request is counted
  CHECK(prompt == rep["prefix_cache"]["queried_tokens"].get<uint64_t>());
  CHECK(hits == rep["prefix_cache"]["hit_tokens"].get<uint64_t>());
  CHECK(read_file(dir + "/summary.md").find("group 1 x h100-sxm-80gb TP 2") != std::string::npos);
  const std::string html = read_file(dir + "/report.html");
  CHECK(html.find("Replica groups") != std::string::npos);
  CHECK(html.find("2 x h100-sxm-80gb TP 1 + 1 x h100-sxm-80gb TP 2") != std::string::npos);
  // The same run again: the same bytes.
  REQUIRE(run_cli(replay({"--replica-groups", kGroups, "--router", "least-loaded"}, dir + "-again")).rc == 0);
  CHECK(read_file(dir + "-again/report.json") == read_file(dir + "/report.json"));
}

TEST_CASE("a mixed fleet of one group runs as the uniform fleet, event for event", "[cli][fleet][mixed]") {
  using namespace mixed_fleet_cli;
  const std::string dir = temp_dir("mixed-one-group");
  for (const char* router : {"kv-aware", "least-loaded", "prefix", "llm-d"}) {
    INFO(router);
    REQUIRE(run_cli(replay({"--replicas", "3", "--router", router}, dir + "/uniform")).rc == 0);
    REQUIRE(run_cli(replay({"--replica-groups", "h100-sxm-80gb:x=3", "--router", router}, dir + "/groups")).rc == 0);
    json a = report_of(dir + "/uniform"), b = report_of(dir + "/groups");
    CHECK(a["run"]["event_fingerprint"] == b["run"]["event_fingerprint"]);
    CHECK(a["replicas"] == b["replicas"]);
    CHECK(a["latency_ms"] == b["latency_ms"]);
    CHECK(a["prefix_cache"] == b["prefix_cache"]);
    CHECK(b["fleet"]["groups"].size() == 1);
  }
}

TEST_CASE("bad replica groups are exit 2 naming the flag, before any output", "[cli][fleet][mixed]") {
  using namespace mixed_fleet_cli;
  const std::string dir = temp_dir("mixed-bad");
  const std::vector<std::vector<std::string>> bad = {
      {"--replica-groups", "h100-sxm-80gb:x=0"},
      {"--replica-groups", "h100-sxm-80gb:z=1"},
      {"--replica-groups", "no-such-gpu:x=2"},
      {"--replica-groups", "h100-sxm-80gb:x=2", "--replicas", "2"},
      {"--replica-groups", "h100-sxm-80gb:x=2", "--mode", "cache"},
      {"--replica-groups", "h100-sxm-80gb:x=2", "--backend", "cpu"},
  };
  for (const auto& flags : bad) {
    const auto r = run_cli(replay(flags, dir));
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK((r.err.find("--replica-groups") != std::string::npos || r.err.find("--replicas") != std::string::npos ||
           r.err.find("no-such-gpu") != std::string::npos));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/report.json"));
}
