// A point stopped at a latency bound (StopBound, point_run.h) fails that
// bound when run to the end, and a point whose figure keeps the bound is
// never stopped: for each figure plan can bound (TTFT mean, p50, p90, p99;
// queue, e2e p99; TPOT p50, p99), with limits just below, at and above
// values the full run measured, with and without warm-up requests, and
// with refusals (requests that never finish lower the count a percentile is
// taken over). Also: the count of values over the limit at which it stops.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "reports/latency.h"
#include "sim/cost/kv_sizing.h"
#include "sim/scenario/point_run.h"

using namespace prefixsim;

namespace {

struct Setup {
  Scenario s;
  ResolvedScenario resolved;
  KvSizing kv;
  std::vector<Request> requests;
  std::string format;
  PolicyContext ctx;
};

// An overloaded chatbot workload on 1 replica: TTFT grows through the run.
Setup overloaded(std::optional<int64_t> warmup) {
  Setup u;
  u.s.requests = 300;
  u.s.rate = 40;
  u.s.warmup = warmup;
  u.resolved = resolve_scenario(u.s);
  u.kv = size_kv_pool(kv_sizing_input(u.s, u.resolved));
  auto src = open_scenario_input(u.s, u.resolved);
  u.format = src->format();
  for (Request r; src->next(r);) u.requests.push_back(r);
  u.ctx.block_size = u.s.block_size;
  return u;
}

PointResult run(const Setup& u, std::vector<StopBound> bounds) {
  PointInput in{&u.requests, nullptr, u.format};
  in.stop_bounds = std::move(bounds);
  PointResult p = run_point(in, u.s, u.resolved, u.s.policy, u.ctx, u.kv.num_blocks);
  if (p.error) std::rethrow_exception(p.error);
  return p;
}

double figure(const PointResult& p, StopBound::Figure f, double pct) {
  const LatencySummary& s = f == StopBound::Figure::kTtft    ? p.ttft
                            : f == StopBound::Figure::kQueue ? p.queue
                            : f == StopBound::Figure::kE2e   ? p.e2e
                                                             : p.tpot;
  return pct == 0 ? s.mean : pct == 50 ? s.p50 : pct == 90 ? s.p90 : s.p99;
}

}  // namespace

TEST_CASE("a point stops at a latency bound only when run to the end it fails it", "[property][plan]") {
  for (const std::optional<int64_t> warmup : {std::optional<int64_t>{}, std::optional<int64_t>{40}}) {
    const Setup u = overloaded(warmup);
    const PointResult whole = run(u, {});
    REQUIRE_FALSE(whole.stopped);
    const std::vector<std::pair<StopBound::Figure, double>> figures = {
        {StopBound::Figure::kTtft, 0},  {StopBound::Figure::kTtft, 50}, {StopBound::Figure::kTtft, 90},
        {StopBound::Figure::kTtft, 99}, {StopBound::Figure::kQueue, 99}, {StopBound::Figure::kE2e, 99},
        {StopBound::Figure::kTpot, 50}, {StopBound::Figure::kTpot, 99}};
    size_t stops = 0, kept = 0;
    for (const auto& [f, pct] : figures) {
      const double v = figure(whole, f, pct);
      REQUIRE(std::isfinite(v));
      // Limits around the figure itself and around the run's other values.
      for (const double limit : {v * 0.25, v * 0.9, v * 0.999, v, v * 1.001, v * 1.5, figure(whole, f, 50)}) {
        if (!(limit > 0)) continue;
        INFO("figure " << static_cast<int>(f) << " p" << pct << " = " << v << ", limit " << limit
                       << (warmup ? ", warm-up 40" : ""));
        const PointResult p = run(u, {{f, pct, limit, "the bound"}});
        if (v <= limit) {
          CHECK_FALSE(p.stopped);  // it meets the bound: never stopped
          ++kept;
        }
        if (p.stopped) {
          ++stops;
          CHECK(v > limit);
          CHECK(p.stopped->bound == "the bound");
          CHECK(p.stopped->requests == whole.counts.requests);
          CHECK(p.stopped->finished <= whole.counts.requests);
        } else {
          CHECK(figure(p, f, pct) == v);  // run to the end: the same figures
          CHECK(p.ttft.p99 == whole.ttft.p99);
        }
      }
    }
    CHECK(stops > 0);  // the overloaded run fails most of these early
    CHECK(kept > 0);
  }
}

TEST_CASE("a percentile bound stops the run at the first value that leaves too few within it", "[plan]") {
  // N requests at most, the p-th percentile is the rank(p, N)-th smallest:
  // N - rank + 1 values over the limit leave it over, the rest whatever.
  const Setup u = overloaded({});
  const PointResult whole = run(u, {});
  const uint64_t n = whole.counts.requests;
  const PointResult p = run(u, {{StopBound::Figure::kTtft, 90, 1e-6, "ttft_p90<=1ns"}});
  REQUIRE(p.stopped);
  CHECK(p.stopped->above == n - nearest_rank_of(90, n) + 1);
  CHECK(p.stopped->finished == p.stopped->above);  // every TTFT is over 1 ns
}
