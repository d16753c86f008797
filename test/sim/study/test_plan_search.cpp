// plan's search (sim/study/plan_search.h): SLO parsing and its refusals; the
// doubling + bisection finds the fewest replicas for every monotone verdict,
// running the answer and one fewer, in few runs; violations of monotonicity
// are reported.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
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
