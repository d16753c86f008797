// plan's search (sim/study/plan_search.h): SLO parsing and its refusals; the
// doubling + bisection finds the fewest replicas for every monotone verdict,
// running the answer and one fewer, in few runs; violations of monotonicity
// are reported. The split search (prefill x decode instances) against trying
// every fleet, and its worked example.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "sim/base/error.h"
#include "sim/study/plan_search.h"

using namespace prefixsim;

TEST_CASE("--slo terms parse into bounds in the columns' units", "[plan]") {
  const auto slo = parse_slo("ttft_p99=2s,hit_rate>=0.5,queue_p99<=250ms,block_hit_rate=40%");
  REQUIRE(slo.size() == 4);
  CHECK(slo[0].metric == "ttft_p99_ms");
  CHECK(slo[0].at_most);
  CHECK(slo[0].limit == 2000);
  CHECK(slo[1].metric == "hit_rate");
  CHECK_FALSE(slo[1].at_most);
  CHECK(slo[1].limit == 0.5);
  CHECK(slo[2].limit == 250);
  CHECK(slo[3].limit == Approx(0.4));
  CHECK(slo[0].meets(2000));
  CHECK_FALSE(slo[0].meets(2000.5));
  CHECK_FALSE(slo[0].meets(NAN));
  CHECK(slo[0].margin(1500) == Approx(0.25));
  CHECK(slo[1].margin(0.4) == Approx(-0.2));
  CHECK(meets_slo(slo, {{"ttft_p99_ms", 10}, {"hit_rate", 0.6}, {"queue_p99_ms", 1}, {"block_hit_rate", 0.5}}));
  CHECK_FALSE(meets_slo(slo, {{"ttft_p99_ms", 10}, {"hit_rate", 0.6}, {"queue_p99_ms", 1}}));  // one missing
}

TEST_CASE("a refusal rate is bounded from above, as a fraction or a percentage", "[plan]") {
  const auto slo = parse_slo("ttft_p99=2s,refusal_rate<=1%");
  REQUIRE(slo.size() == 2);
  CHECK(slo[1].metric == "refusal_rate");
  CHECK(slo[1].at_most);
  CHECK(slo[1].limit == Approx(0.01));
  CHECK(parse_slo("refusal_rate=0")[0].limit == 0);
  CHECK(meets_slo(slo, {{"ttft_p99_ms", 10}, {"refusal_rate", 0.005}}));
  CHECK_FALSE(meets_slo(slo, {{"ttft_p99_ms", 10}, {"refusal_rate", 0.02}}));
}

TEST_CASE("bad --slo terms are refused with the term named", "[plan]") {
  for (const char* bad : {"", "ttft_p99", "ttft_p99=2", "ttft_p99>=2s", "hit_rate<=0.5", "hit_rate>=1.5",
                          "nosuch<=1s", "ttft_p99=2s,", "ttft_p99=2s,ttft_p99=3s", "ttft_p99=-1s", "ttft_p99=xs",
                          "=2s", "refusal_rate>=1%", "refusal_rate=100%", "refusal_rate=-0.1"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_slo(bad), InputError);
  }
  CHECK_THROWS_WITH(parse_slo("ttft_p99=2s,ttft_p99=3s"), Catch::Contains("ttft_p99=3s") && Catch::Contains("contradictory"));
}

TEST_CASE("the search finds the fewest replicas of every monotone verdict, running it and one fewer", "[plan]") {
  for (int64_t max : {1, 2, 5, 16, 64, 100}) {
    for (int64_t need = 1; need <= max + 1; ++need) {  // need > max: none meets
      std::set<int64_t> ran;
      const SearchResult r = search_replicas(max, [&](int64_t n) {
        CHECK(ran.insert(n).second);  // each count run once
        CHECK(n >= 1);
        CHECK(n <= max);
        return n >= need;
      });
      INFO("max " << max << ", need " << need);
      CHECK(r.answer == (need <= max ? need : 0));
      CHECK(r.violations.empty());
      if (r.answer > 0) CHECK(ran.count(r.answer));
      if (r.answer > 1) CHECK(ran.count(r.answer - 1));
      // Doubling, bisection and the probe: about 2 log2(max) runs, not max.
      CHECK(static_cast<double>(ran.size()) <= 2 * std::ceil(std::log2(static_cast<double>(max))) + 3);
    }
  }
}

TEST_CASE("the probe of one replica more reports a verdict that is not monotone", "[plan]") {
  // Meets at 4 only, then from 7 on: runs 1, 2 (fail), 4 (meets), 3 (fails), probe 5 (fails).
  std::vector<int64_t> order;
  const SearchResult r = search_replicas(16, [&](int64_t n) {
    order.push_back(n);
    return n == 4 || n >= 7;
  });
  CHECK(r.answer == 4);
  CHECK(order == std::vector<int64_t>{1, 2, 4, 3, 5});
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0] == "4 replicas met the SLO but 5 did not");
  // Monotone: the probe meets, nothing is reported.
  const SearchResult m = search_replicas(16, [](int64_t n) { return n >= 6; });
  CHECK(m.answer == 6);
  CHECK(m.steps.back().replicas == 7);
  CHECK(m.steps.back().meets);
  CHECK(m.violations.empty());
  // At the largest fleet allowed there is no probe.
  const SearchResult top = search_replicas(5, [](int64_t n) { return n >= 5; });
  CHECK(top.answer == 5);
  CHECK(top.steps.back().replicas != 6);
}

namespace test_plan_search_split {

// Every fleet of at most max in each pool, tried: the cheapest meeting
// the verdict's cost, or -1 when none does.
double cheapest_by_trying_all(int64_t max, const std::function<bool(int64_t, int64_t)>& meets,
                              const std::function<double(int64_t, int64_t)>& cost) {
  double best = -1;
  for (int64_t p = 1; p <= max; ++p)
    for (int64_t d = 1; d <= max; ++d)
      if (meets(p, d) && (best < 0 || cost(p, d) < best)) best = cost(p, d);
  return best;
}

TEST_CASE("the split search finds the cheapest fleet of every monotone staircase, as trying every fleet does",
          "[plan][split]") {
  std::mt19937_64 rng(5);
  int walked_left = 0;  // trials whose answer has fewer prefill than K:K's bisection found
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t max = std::vector<int64_t>{1, 2, 3, 5, 8, 13, 16, 24}[rng() % 8];
    // D(p), the fewest decode instances p prefill instances need: falling
    // with p; max + 1 = none.
    std::vector<int64_t> need(static_cast<size_t>(max) + 1);
    int64_t d = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max + 2));
    for (int64_t p = 1; p <= max; ++p) {
      if (rng() % 3 == 0) d = std::max<int64_t>(1, d - static_cast<int64_t>(rng() % 4));
      need[static_cast<size_t>(p)] = p <= static_cast<int64_t>(rng() % 3) ? max + 1 : d;  // a few too-small P
    }
    for (int64_t p = max - 1; p >= 1; --p)  // keep it a staircase
      need[static_cast<size_t>(p)] = std::max(need[static_cast<size_t>(p)], need[static_cast<size_t>(p) + 1]);
    const double cp = std::vector<double>{1, 2, 3, 8}[rng() % 4], cd = std::vector<double>{1, 2, 5}[rng() % 3];
    auto meets = [&](int64_t p, int64_t dd) { return dd >= need[static_cast<size_t>(p)]; };
    auto cost = [&](int64_t p, int64_t dd) { return cp * static_cast<double>(p) + cd * static_cast<double>(dd); };
    std::set<std::pair<int64_t, int64_t>> ran;
    const SplitSearchResult r = search_split(max, cost, [&](int64_t p, int64_t dd) {
      CHECK(ran.insert({p, dd}).second);  // each fleet run once
      CHECK((p >= 1 && p <= max && dd >= 1 && dd <= max));
      return meets(p, dd);
    });
    const double want = cheapest_by_trying_all(max, meets, cost);
    std::string stairs, runs;
    for (int64_t p = 1; p <= max; ++p) stairs += " " + std::to_string(need[static_cast<size_t>(p)]);
    for (const SplitStep& s : r.steps)
      runs += " " + std::to_string(s.prefill) + ":" + std::to_string(s.decode) + (s.meets ? "+" : "-");
    INFO("trial " << trial << ", max " << max << ", prices " << cp << "/" << cd << ", D(P):" << stairs << ", runs:"
                  << runs);
    CHECK(r.violations.empty());
    if (want < 0) {
      CHECK(r.prefill == 0);
      CHECK(r.decode == 0);
      continue;
    }
    REQUIRE(r.prefill > 0);
    CHECK(ran.count({r.prefill, r.decode}));  // the answer was run, and met
    CHECK(meets(r.prefill, r.decode));
    CHECK(cost(r.prefill, r.decode) == want);
    if (max >= 16) CHECK(ran.size() < static_cast<size_t>(max * max / 4));  // a search, not every fleet
    int64_t k = 0;  // where 1:1 doubling first met
    for (const SplitStep& s : r.steps)
      if (!k && s.meets && s.prefill == s.decode) k = s.prefill;
    if (r.decode > k) ++walked_left;
  }
  CHECK(walked_left > 0);
}

TEST_CASE("the split search's worked example: 1:1 doubling, prefill then decode bisection, the probe",
          "[plan][split]") {
  // Meets with 3 prefill and 2 decode instances or more, each priced 1.
  std::vector<std::pair<int64_t, int64_t>> order;
  auto price = [](int64_t p, int64_t d) { return static_cast<double>(p + d); };
  const SplitSearchResult r = search_split(16, price, [&](int64_t p, int64_t d) {
    order.emplace_back(p, d);
    return p >= 3 && d >= 2;
  });
  CHECK(r.prefill == 3);
  CHECK(r.decode == 2);
  // 1:1, 2:2 fail, 4:4 meets; prefill at 4 decode: 2 fails, 3 meets; decode
  // at 3 prefill: 2 meets, 1 fails; 4 prefill + 1 decode would cost 5, no
  // less than 3:2, so no staircase; the probe 4:3.
  using PD = std::pair<int64_t, int64_t>;
  CHECK(order == std::vector<PD>{{1, 1}, {2, 2}, {4, 4}, {2, 4}, {3, 4}, {3, 2}, {3, 1}, {4, 3}});
  CHECK(r.violations.empty());
  // The same verdict, but 4:3 fails: the probe shows it.
  const SplitSearchResult v =
      search_split(16, price, [](int64_t p, int64_t d) { return p >= 3 && d >= 2 && !(p == 4 && d == 3); });
  REQUIRE(v.violations.size() == 1);
  CHECK(v.violations[0] == "3P:2D met the SLO but 4P:3D did not");
}

TEST_CASE("the split search walks to fewer prefill instances when they cost more than decode ones", "[plan][split]") {
  // p + d >= 10, a prefill instance at 3, a decode one at 1: 1:9 (cost 12),
  // which 1:1 doubling (8:8) and the bisections (2:8) do not reach alone.
  const SplitSearchResult r = search_split(
      16, [](int64_t p, int64_t d) { return 3.0 * static_cast<double>(p) + static_cast<double>(d); },
      [](int64_t p, int64_t d) { return p + d >= 10; });
  CHECK(r.prefill == 1);
  CHECK(r.decode == 9);
}

}  // namespace test_plan_search_split
