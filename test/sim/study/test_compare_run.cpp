// compare in process (sim/study/compare_run.h): its rows are the separate
// replays of each (policy, size) pair, its documents do not depend on the
// thread count, a fleet of one is the lone engine, and every refusal comes
// before the trace is read.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "reports/compare_text.h"
#include "sim/base/error.h"
#include "sim/engine/cache_replay.h"
#include "sim/study/compare_run.h"
#include "test/support.h"
#include "traces/trace_reader.h"

using namespace prefixsim;
using prefixsim::test::temp_dir;
using prefixsim::test::write_text_file;

namespace {

// A Mooncake trace of 240 requests: four shared system prompts of 2 to 5
// hash ids (512 tokens each), every request with a tail of its own, so a
// small pool must choose which prompts to keep.
std::string write_trace(const std::string& dir) {
  std::ostringstream t;
  uint64_t x = 7;
  int next_tail = 1000;
  for (int i = 0; i < 240; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const int prompt = static_cast<int>((x >> 33) % 4);
    t << "{\"timestamp\": " << i * 200 << ", \"input_length\": " << (prompt + 3) * 512
      << ", \"output_length\": 8, \"hash_ids\": [";
    for (int h = 0; h < prompt + 2; ++h) t << prompt * 100 + h << ", ";
    t << next_tail++ << "]}\n";
  }
  return write_text_file(dir, "trace.jsonl", t.str());
}

CompareOptions cache_compare(const std::string& trace, std::vector<std::string> policies,
                             std::vector<int64_t> kv_blocks) {
  CompareOptions o;
  o.scenario.trace = trace;
  o.scenario.mode = "cache";
  o.policies = std::move(policies);
  o.kv_blocks = std::move(kv_blocks);
  return o;
}

std::string documents(const CompareReport& r) {
  return render_compare_json(r) + render_compare_csv(r) + render_compare_md(r);
}

// The InputError run_compare throws, or "" when it runs.
std::string refusal(const CompareOptions& o) {
  try {
    run_compare(o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("compare's rows are the separate cache replays of each policy at each pool size", "[compare]") {
  const std::string trace = write_trace(temp_dir("compare_run_rows"));
  const std::vector<std::string> policies = {"lru", "s3fifo:small=0.2", "lfu"};
  const std::vector<int64_t> sizes = {300, 600};
  const CompareReport rep = run_compare(cache_compare(trace, policies, sizes));
  REQUIRE(rep.rows.size() == 6);
  CHECK(rep.requests == 240);
  CHECK(rep.policy_names == std::vector<std::string>{"lru", "s3fifo", "lfu"});
  std::vector<uint64_t> evictions;
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const CompareRow& row = rep.rows[i];
    CHECK(row.size == i / 3);  // size-major
    CHECK(row.policy == i % 3);
    auto src = open_trace(trace, TraceOptions{});
    const CacheReplayResult alone = run_cache_replay(*src, 16, sizes[row.size], make_policy(policies[row.policy]));
    INFO(policies[row.policy] << " at " << sizes[row.size] << " blocks");
    CHECK(row.hit_tokens == alone.hit_tokens);
    CHECK(row.prompt_tokens == alone.prompt_tokens);
    CHECK(row.hit_rate == alone.hit_rate);
    CHECK(row.hit_blocks == alone.hit_blocks);
    CHECK(row.evictions == alone.evictions);
    CHECK(row.refused_requests == alone.refused_requests);
    evictions.push_back(row.evictions);
  }
  CHECK(evictions[0] > 0);                                  // the small pool is under pressure
  CHECK(rep.rows[0].hit_tokens != rep.rows[2].hit_tokens);  // and lru and lfu choose apart
}

TEST_CASE("compare's gap to belady is belady's hit rate at the same size minus the policy's", "[compare]") {
  const std::string trace = write_trace(temp_dir("compare_run_belady"));
  const CompareReport rep = run_compare(cache_compare(trace, {"lru", "belady"}, {300}));
  REQUIRE(rep.rows.size() == 2);
  CHECK(rep.offline_policy);
  CHECK(rep.belady_hit_rate[0] == rep.rows[1].hit_rate);
  CHECK(rep.rows[1].hit_rate > rep.rows[0].hit_rate);
  const nlohmann::ordered_json j = compare_to_json(rep);
  CHECK(j["results"][0]["gap_to_belady"] == rep.rows[1].hit_rate - rep.rows[0].hit_rate);
  CHECK(j["notes"].size() == 1);
}

TEST_CASE("compare's documents are byte-identical for 1 and 4 threads", "[compare]") {
  const std::string trace = write_trace(temp_dir("compare_run_threads"));
  CompareOptions o = cache_compare(trace, {"lru", "fifo", "arc", "s3fifo", "belady"}, {60, 100, 300});
  o.offloading_gib = {0, 0.25};
  o.threads = 1;
  const std::string one = documents(run_compare(o));
  o.threads = 4;
  CHECK(documents(run_compare(o)) == one);
}

TEST_CASE("compare in engine mode: a fleet of one replica is the lone engine, on every router", "[compare]") {
  const std::string trace = write_trace(temp_dir("compare_run_fleet"));
  CompareOptions lone = cache_compare(trace, {"lru"}, {300});
  lone.scenario.mode = "engine";
  const CompareReport alone = run_compare(lone);
  CompareOptions fleets = lone;
  fleets.routers = {"round-robin", "kv-aware:overlap_weight=2,temperature=0.5"};
  fleets.replicas = {1, 2};
  fleets.threads = 2;
  const CompareReport rep = run_compare(fleets);
  REQUIRE(rep.rows.size() == 4);
  for (const CompareRow& row : rep.rows) {
    INFO(rep.routers[row.router] << " x " << rep.replicas[row.fleet]);
    if (rep.replicas[row.fleet] != 1) continue;
    CHECK(row.hit_tokens == alone.rows[0].hit_tokens);
    CHECK(row.ttft_p50_ms == alone.rows[0].ttft_p50_ms);
    CHECK(row.ttft_p99_ms == alone.rows[0].ttft_p99_ms);
  }
  CHECK_FALSE(std::isnan(rep.rows[1].imbalance));  // round-robin x 2
  CHECK(std::isnan(alone.rows[0].imbalance));
  fleets.threads = 1;
  CHECK(documents(run_compare(fleets)) == documents(rep));
}

TEST_CASE("compare refuses bad axes before it reads the trace", "[compare]") {
  // The trace does not exist: a refusal that came after reading it would
  // name the missing file instead.
  const CompareOptions ok = cache_compare(temp_dir("compare_run_refusals") + "/missing.jsonl", {"lru"}, {100});
  CHECK(refusal(ok).find("missing.jsonl") != std::string::npos);
  CompareOptions o = ok;
  o.replicas = {2};
  CHECK(refusal(o) == "--routers/--replicas: fleets run in engine mode (add --mode engine)");
  o = ok;
  o.scenario.mode = "engine";
  o.replicas = {5000};
  CHECK(refusal(o) == "--replicas: 5000 is more than 4096");
  o.replicas = {2};
  o.routers = {"nosuch"};
  CHECK(refusal(o).find("nosuch") != std::string::npos);
  o = ok;
  o.kv_blocks = {1};
  CHECK(refusal(o).find("null block") != std::string::npos);
  o = ok;
  o.kv_tokens = {1000};
  CHECK(refusal(o) == "compare: give exactly one of --kv-blocks, --kv-tokens, --kv-gb");
  o.kv_blocks.clear();
  o.kv_tokens.clear();
  CHECK(refusal(o) == "compare: give exactly one of --kv-blocks, --kv-tokens, --kv-gb");
  o = ok;
  o.policies = {"lru", "nosuch"};
  CHECK(refusal(o).find("unknown policy 'nosuch'") != std::string::npos);
  o = ok;
  o.scenario.mode = "engine";
  o.policies = {"belady"};
  // belady in engine mode is refused once the trace opens
  CHECK(refusal(o).find("missing.jsonl") != std::string::npos);
}
