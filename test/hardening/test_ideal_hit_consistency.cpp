// One ideal hit rate: replay's IdealHitSource, analyze's prefix forest and a
// cache-mode replay on an unbounded pool must all give the same figure (they
// follow one rule, Request::kv_len: a request caches its prompt and its
// outputs but the last sampled token), and no policy at any capacity may
// beat it. Checked on every workload preset, whose multi-turn conversations
// re-send earlier answers (where the definitions once drifted apart:
// cache mode cached the last sampled token, analyze cached no outputs).
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "policies/block_future.h"
#include "policies/registry.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/ideal_hit.h"
#include "sim/engine/vector_source.h"
#include "traces/analysis.h"
#include "test/support.h"
#include "workloads/workload.h"

namespace test_ideal_hit_consistency {

using namespace prefixsim;

std::vector<Request> preset_requests(const std::string& preset, int64_t n, uint64_t seed) {
  workloads::WorkloadOverrides o;
  o.requests = n;
  o.seed = seed;
  auto src = workloads::make_workload(preset, o);
  std::vector<Request> out;
  Request r;
  while (src->next(r)) out.push_back(r);
  return out;
}

double ideal_of(const std::vector<Request>& reqs, int32_t B) {
  VectorSource src(reqs);
  IdealHitSource ideal(src, B, false);
  Request r;
  while (ideal.next(r)) {
  }
  REQUIRE(ideal.valid());
  return ideal.hit_rate();
}

TEST_CASE("replay, analyze and an unbounded cache-mode replay give one ideal hit rate on every preset",
          "[ideal][property]") {
  for (const std::string& preset : workloads::preset_names()) {
    for (int32_t B : {16, 64}) {
      INFO(preset << " block size " << B);
      const std::vector<Request> reqs = preset_requests(preset, 600, 7);
      const double ideal = ideal_of(reqs, B);

      VectorSource for_analysis(reqs);
      AnalysisOptions opts;
      opts.block_size = B;
      const TraceAnalysis a = analyze_trace(for_analysis, opts);
      CHECK(a.ideal_hit_rate == Approx(ideal).epsilon(0).margin(1e-12));

      const PreparedTrace t = prepare_trace(std::span<const Request>(reqs), B);
      const int64_t unbounded = static_cast<int64_t>(t.keys.size()) + 2;  // room for every block of the trace
      const CacheReplayResult r = run_cache_replay(t, unbounded, make_policy("lru"), false);
      CHECK(r.refused_requests == 0);
      CHECK(r.hit_rate == Approx(ideal).epsilon(0).margin(1e-12));
    }
  }
}

TEST_CASE("no policy beats the ideal hit rate at any capacity", "[ideal][property]") {
  for (const std::string& preset : {std::string("multi-turn"), std::string("rag"), std::string("code")}) {
    if (test::kSanitized && preset != "multi-turn") continue;  // see kSanitized
    const int32_t B = 16;
    const std::vector<Request> reqs = preset_requests(preset, 500, 3);
    const double ideal = ideal_of(reqs, B);
    const PreparedTrace t = prepare_trace(std::span<const Request>(reqs), B);
    PolicyContext ctx;
    ctx.block_size = B;
    ctx.future = BlockFuture::build(t.num_keys(), t.size(), [&](size_t i) { return t.lookup_keys(i); });
    for (const PolicyInfo& p : policy_registry()) {
      for (int64_t blocks : {int64_t{400}, int64_t{2000}, int64_t{8000}, static_cast<int64_t>(t.keys.size()) + 2}) {
        if (test::kSanitized && blocks == 8000) continue;  // see kSanitized
        INFO(preset << " " << p.name << " at " << blocks << " blocks");
        const CacheReplayResult r = run_cache_replay(t, blocks, make_policy(p.name, ctx), false);
        CHECK(r.hit_rate <= ideal + 1e-12);
      }
    }
  }
}

// analyze's KV budget comes from LRU stack distances; a cache-mode replay
// through vLLM's LRU at that budget must land on the target (within the
// blocks of the request in flight), and where the budget was raised to the
// largest request (a smaller pool refuses it) at or above the target.
TEST_CASE("a cache-mode replay at analyze's KV budget for a target hit rate reaches about that target",
          "[ideal][property]") {
  for (const std::string& preset : workloads::preset_names()) {
    const int32_t B = 16;
    const std::vector<Request> reqs = preset_requests(preset, 800, 11);
    VectorSource src(reqs);
    AnalysisOptions opts;
    opts.block_size = B;
    const TraceAnalysis a = analyze_trace(src, opts);
    const PreparedTrace t = prepare_trace(std::span<const Request>(reqs), B);
    for (const auto* budget : {&a.kv_budget, &a.kv_budget_of_ideal}) {
      for (const BudgetPoint& p : *budget) {
        if (!p.cache_blocks) continue;  // unreachable target
        INFO(preset << ": target " << p.target << " at " << *p.cache_blocks << " blocks");
        const CacheReplayResult r = run_cache_replay(t, *p.cache_blocks + 1, make_policy("lru"), false);  // + null block
        const double target = budget == &a.kv_budget ? p.target : p.target * a.ideal_hit_rate;
        CHECK(r.refused_requests == 0);
        if (p.raised_to_largest_request) CHECK(r.hit_rate >= target - 0.02);
        else CHECK(r.hit_rate == Approx(target).margin(0.02));
      }
    }
  }
}

}  // namespace test_ideal_hit_consistency
