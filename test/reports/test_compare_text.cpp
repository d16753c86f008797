// compare's text forms (reports/compare_text.h) from a report built by hand:
// the csv's columns, offloading sizes as given in every table, the json's
// optional keys.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>

#include "reports/compare_text.h"

using namespace prefixsim;

namespace {

// Engine mode, one policy at one size on fleets of 2 behind one router,
// under four offloading sizes; each row's TTFT and imbalance printed with
// their own precision before the next row's offloading size.
CompareReport engine_fleet_report() {
  CompareReport r;
  r.mode = "engine";
  r.trace_path = "t.jsonl", r.trace_format = "mooncake";
  r.requests = 10, r.prompt_tokens = 1000, r.output_tokens = 50, r.block_size = 16;
  r.model = "llama-3.1-8b", r.gpu = "h100-sxm-80gb", r.tp = 1;
  r.specs = {"lru"}, r.policy_names = {"lru"};
  r.routers = {"round-robin"}, r.replicas = {2}, r.fleets = true;
  r.offloading_gib = {0, 2.5, 16, INFINITY}, r.offloading = true, r.tiered = true;
  r.sizes = {{101, 1600, 131072, "--kv-blocks"}};
  r.belady_hit_rate = {NAN};
  for (size_t o = 0; o < 4; ++o) {
    CompareRow row;
    row.offload = o;
    row.requests = 10, row.prompt_tokens = 1000, row.hit_tokens = 250, row.tier_hit_tokens = 100 * o;
    row.hit_rate = 0.25, row.block_hit_rate = 0.5;
    row.ttft_p50_ms = 12.3456, row.ttft_p99_ms = 45.678, row.imbalance = 1.23456;
    r.rows.push_back(row);
  }
  return r;
}

}  // namespace

TEST_CASE("compare.md writes each offloading size as given, whatever the columns before it", "[reports][compare]") {
  const std::string md = render_compare_md(engine_fleet_report());
  INFO(md);
  CHECK(md.find("| lru | round-robin | 2 | 1.23 | 2.5 | 35.00 | 25.00 | 50.00 | 0 | 0 | 12.3 | 45.7 |") != std::string::npos);
  CHECK(md.find("| lru | round-robin | 2 | 1.23 | 16 | 45.00 |") != std::string::npos);
  CHECK(md.find("| lru | round-robin | 2 | 1.23 | inf | 55.00 |") != std::string::npos);
  CHECK(md.find("| lru · round-robin x 2 · CPU 2.5 GiB | 35.00 |") != std::string::npos);
  CHECK(md.find("| lru · round-robin x 2 · CPU 16 GiB | 45.00 |") != std::string::npos);
  CHECK(md.find("e+") == std::string::npos);
  CompareReport lone = engine_fleet_report();  // no fleet: the TTFT columns come right before
  lone.fleets = false;
  const std::string lone_md = render_compare_md(lone);
  INFO(lone_md);
  CHECK(lone_md.find("| lru | 16 | 45.00 | 25.00 |") != std::string::npos);
  CHECK(lone_md.find("e+") == std::string::npos);
}

TEST_CASE("compare.csv has a line per run with the fleet and tier columns", "[reports][compare]") {
  const std::string csv = render_compare_csv(engine_fleet_report());
  const std::string header =
      "policy,spec,kv_blocks,capacity_tokens,hit_rate,block_hit_rate,hit_tokens,prompt_tokens,evictions,"
      "refused_requests,gap_to_belady,ttft_p50_ms,ttft_p99_ms,router,replicas,imbalance,kv_offloading_size_gib,"
      "hit_rate_with_tiers\n";
  REQUIRE(csv.rfind(header, 0) == 0);
  CHECK(csv.substr(header.size(), csv.find('\n', header.size()) + 1 - header.size()) ==
        "lru,\"lru\",101,1600,0.25,0.5,250,1000,0,0,,12.3456,45.678,\"round-robin\",2,1.23456,0,0.25\n");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);
}

TEST_CASE("compare.json keeps fleet, offloading and belady keys to the runs that have them", "[reports][compare]") {
  CompareReport r = engine_fleet_report();
  nlohmann::ordered_json j = compare_to_json(r);
  CHECK(j["kv_offloading_sizes_gib"] == nlohmann::ordered_json::array({0, 2.5, 16, "inf"}));
  CHECK(j["results"][3]["kv_offloading_size_gib"] == "inf");
  CHECK(j["results"][0]["imbalance"] == 1.23456);
  CHECK_FALSE(j["results"][0].contains("gap_to_belady"));
  CHECK_FALSE(j.contains("notes"));
  r.mode = "cache", r.fleets = false, r.offloading = false, r.tiered = false;
  r.belady_hit_rate = {0.5};
  j = compare_to_json(r);
  CHECK_FALSE(j.contains("routers"));
  CHECK_FALSE(j.contains("kv_offloading_sizes_gib"));
  CHECK_FALSE(j["results"][0].contains("ttft_p50_ms"));
  CHECK_FALSE(j["results"][0].contains("router"));
  CHECK(j["results"][0]["gap_to_belady"] == 0.25);
}
