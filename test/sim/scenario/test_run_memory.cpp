// The whole-run memory check (sim/scenario/run_memory.h): every replica's
// pool and every tier instance counted, and a run past the limit refused
// with the sum, the figure and the flags to lower.
#include <catch2/catch.hpp>
#include <string>

#include "sim/base/error.h"
#include "sim/scenario/run_memory.h"
#include "sim/scenario/scenario_fleet.h"

using namespace prefixsim;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

RunBlocks blocks_of(const Scenario& s) {
  const ResolvedScenario r = resolve_scenario(s);
  return run_blocks(s, size_kv_pool(kv_sizing_input(s, r)), scenario_tiers(s, *r.model));
}

std::string refusal(const RunBlocks& b, const std::string& replicas_flag, double limit) {
  try {
    check_run_fits_memory(b, replicas_flag, limit);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a run's blocks are every replica's pool and every tier instance", "[run_memory]") {
  Scenario s;
  s.replicas = 3;
  s.kv_blocks = 1000;
  s.kv_offloading_size = 4;  // llama-3.1-8b: 2 MiB a block, so 2048 blocks
  s.kv_tiers = "disk:size=8,read=5;pool:size=2,read=10,shared;far:size=inf,read=1";
  const RunBlocks b = blocks_of(s);
  REQUIRE(b.parts.size() == 4);  // the unbounded tier holds only what the trace brings
  CHECK(b.parts[0].instances == 3);
  CHECK(b.parts[0].blocks == 1000);
  CHECK(b.parts[0].flag == "--kv-blocks");
  CHECK(b.parts[1].blocks == 2048);
  CHECK(b.parts[1].flag == "--kv-offloading-size");
  CHECK(b.parts[2].instances == 3);
  CHECK(b.parts[2].blocks == 4096);
  CHECK(b.parts[3].instances == 1);  // shared: one for the fleet
  CHECK(b.parts[3].blocks == 1024);
  CHECK(b.parts[3].flag == "--kv-tier pool");
  CHECK(b.total() == 3 * 1000 + 3 * 2048 + 3 * 4096 + 1024);
}

TEST_CASE("a fleet whose pools together pass the limit is refused with the figure", "[run_memory]") {
  Scenario s;
  s.replicas = 3;
  s.kv_blocks = 100000000;  // one pool of these passes a 10 GiB limit (4.1 GiB); three do not
  const RunBlocks b = blocks_of(s);
  CHECK(refusal(b, "--replicas", 20 * kGiB).empty());
  const std::string e = refusal(b, "--replicas", 10 * kGiB);
  CHECK(e.rfind("--replicas: the run's KV pools and tiers hold 300000000 blocks (3 replicas: 3 x 100000000 in the "
                "GPU pool (--kv-blocks)), which need at least 12.3 GiB", 0) == 0);
  CHECK(e.find("lower --replicas or --kv-blocks") != std::string::npos);
  // One replica: the largest part's flag leads.
  s.replicas = 1;
  s.kv_blocks = 1000;
  s.kv_offloading_size = 1e6;
  const std::string one = refusal(blocks_of(s), "--replicas", 10 * kGiB);
  CHECK(one.rfind("--kv-offloading-size: ", 0) == 0);
  CHECK(one.find("lower --kv-blocks or --kv-offloading-size") != std::string::npos);
  CHECK(refusal(blocks_of(s), "--replicas", 0).empty());  // an unknown limit checks nothing
}
