// plan in process (sim/study/plan_run.h): the answer is what the search
// library finds over the same runs, the document does not depend on the
// threads, and what cannot run is refused before any search, while a TP of
// the default list that the model cannot take is only listed.
#include <catch2/catch.hpp>
#include <string>

#include "sim/base/error.h"
#include "sim/cost/kv_sizing.h"
#include "sim/scenario/point_run.h"
#include "sim/study/plan_run.h"
#include "test/support.h"

using namespace prefixsim;
using prefixsim::test::data_path;

namespace {

PlanOptions small_plan(const std::string& slo, std::vector<int> tps) {
  PlanOptions o;
  o.base.trace = data_path("traces/mooncake_small.jsonl");
  o.base.mode = "engine";
  o.slo = parse_slo(slo);
  o.tps = std::move(tps);
  o.tps_given = true;
  o.max_replicas = 8;
  for (size_t d = 0; d < plan_dimensions().size(); ++d) {
    o.extra_values.push_back({0});
    o.extra_costs.push_back(0);
  }
  return o;
}

// The search library over the engine's runs of one shape, without the plan.
SearchResult search_alone(const PlanOptions& o, int tp) {
  Scenario s = o.base;
  s.tp = tp;
  const ResolvedScenario r = resolve_scenario(s);
  const KvSizing k = size_kv_pool(kv_sizing_input(s, r));
  std::vector<Request> requests;
  auto src = open_scenario_input(s, r);
  for (Request q; src->next(q);) requests.push_back(q);
  const PointInput input{&requests, nullptr, src->format()};
  PolicyContext ctx;
  ctx.block_size = s.block_size;
  return search_replicas(o.max_replicas, [&](int64_t n) {
    Scenario at = s;
    at.replicas = static_cast<int32_t>(n);
    const PointResult p = run_point(input, at, r, at.policy, ctx, k.num_blocks);
    if (p.error) std::rethrow_exception(p.error);
    std::map<std::string, double> f;
    const auto row = point_figures(p, at, k.num_blocks, k.capacity_tokens);
    for (auto it = row.begin(); it != row.end(); ++it)
      if (it.value().is_number()) f[it.key()] = it.value().get<double>();
    return meets_slo(o.slo, f);
  });
}

}  // namespace

TEST_CASE("plan's answer per shape is the search library's over the same runs", "[plan]") {
  // 40 ms at the p99 needs more than one replica of the small trace at TP 1.
  const PlanOptions o = small_plan("ttft_p99=40ms", {1, 2});
  const PlanResult r = run_plan(o);
  REQUIRE(r.plan["shapes"].size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const SearchResult alone = search_alone(o, o.tps[i]);
    const auto& shape = r.plan["shapes"][i];
    INFO("TP " << o.tps[i] << ": " << shape.dump());
    CHECK(shape["runs"].get<size_t>() == alone.steps.size());
    if (alone.answer == 0) CHECK_FALSE(shape.contains("replicas"));
    else CHECK(shape["replicas"].get<int64_t>() == alone.answer);
  }
  CHECK(r.met == !r.plan["answer"].is_null());
}

TEST_CASE("plan.json is the same whatever the number of threads", "[plan]") {
  PlanOptions o = small_plan("ttft_p99=40ms", {1, 2, 4});
  o.routers = {"round-robin", "least-loaded"};
  o.threads = 1;
  const std::string one = run_plan(o).plan.dump();
  o.threads = 3;
  CHECK(run_plan(o).plan.dump() == one);
}

TEST_CASE("threads with no shape left run a doubling ahead, and plan.json stays that of one thread", "[plan]") {
  // One shape, so every thread but one can only run ahead. 1 ms at the p99
  // is met by no fleet: the doubling runs 1, 2, 4, 8 and each count run
  // ahead is asked for. 40 ms is met at 2 or 4 replicas (bisection and
  // probe after), so a run ahead may be wasted: one at most. 1000 s is met
  // by one replica: the run ahead of 2 is the probe's, asked after the
  // doubling met (it must not be abandoned, or be run again if it was).
  for (const std::string slo : {"ttft_p99=1ms", "ttft_p99=40ms", "ttft_p99=1000s"}) {
    INFO(slo);
    PlanOptions o = small_plan(slo, {1});
    o.threads = 1;
    const PlanResult one = run_plan(o);
    CHECK(one.fleets_run == one.plan["runs"].size());
    o.threads = 4;
    for (int repeat = 0; repeat < 10; ++repeat) {  // whatever the timing
      const PlanResult four = run_plan(o);
      CHECK(four.plan.dump() == one.plan.dump());
      CHECK(four.fleets_run >= one.fleets_run);
      CHECK(four.fleets_run <= one.fleets_run + 1);
    }
  }
}

TEST_CASE("runs stopped at an SLO term that can no longer hold leave the plan's search, runs and answer as run in full",
          "[plan]") {
  // Every latency term plan can stop at, alone and with a hit-rate term
  // (which never stops a run), met at some count, at none, or at one.
  for (const std::string slo : {"ttft_p99=40ms", "ttft_p99=1ms", "ttft_mean=30ms", "ttft_p50=20ms,hit_rate>=0.05",
                                "queue_p99=10ms", "e2e_p99=2s", "tpot_p50=20ms", "tpot_p99=1ms,ttft_p90=1000s"}) {
    INFO(slo);
    PlanOptions o = small_plan(slo, {1, 2});
    o.full_runs = true;
    const PlanResult full = run_plan(o);
    o.full_runs = false;
    const PlanResult quick = run_plan(o);
    CHECK(quick.plan["answer"] == full.plan["answer"]);
    CHECK(quick.plan["shapes"] == full.plan["shapes"]);
    CHECK(quick.plan["monotonicity_violations"] == full.plan["monotonicity_violations"]);
    const auto& qr = quick.plan["runs"];
    const auto& fr = full.plan["runs"];
    REQUIRE(qr.size() == fr.size());
    for (size_t i = 0; i < qr.size(); ++i) {
      INFO(qr[i].dump() << "\n" << fr[i].dump());
      CHECK_FALSE(fr[i].contains("stopped"));
      if (qr[i].contains("stopped")) {
        CHECK(qr[i]["meets"] == false);
        CHECK(fr[i]["meets"] == false);
        CHECK(qr[i]["replicas"] == fr[i]["replicas"]);
      } else {
        CHECK(qr[i] == fr[i]);
      }
    }
  }
}

TEST_CASE("a TP given that the model cannot take is refused before any run, naming --tp", "[plan]") {
  const PlanOptions o = small_plan("ttft_p99=2s", {1, 3});
  try {
    run_plan(o);
    FAIL("--tp 1,3 was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind("--tp: 3 does not divide", 0) == 0);
    CHECK(std::string(e.what()).find("TP 3") != std::string::npos);
  }
}

TEST_CASE("a TP of the default list that the model cannot take is listed as cannot run", "[plan]") {
  PlanOptions o = small_plan("ttft_p99=2s", {1, 2, 4, 8});
  o.tps_given = false;
  o.base.model = "qwen2.5-7b";  // 28 attention heads: TP 8 does not divide them
  const PlanResult r = run_plan(o);
  REQUIRE(r.plan["shapes"].size() == 4);
  CHECK(r.plan["shapes"][3]["status"].get<std::string>().rfind("cannot run: --tp: 8 does not divide", 0) == 0);
  CHECK(r.plan["shapes"][3]["runs"] == 0);
  CHECK(r.met);
  // When no TP of the list can run, nothing is searched: exit 2 with the reason.
  o.tps = {8};
  CHECK_THROWS_WITH(run_plan(o), Catch::StartsWith("--tp: 8 does not divide"));
}
