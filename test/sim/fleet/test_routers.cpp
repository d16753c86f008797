// Each router's rule on small hand-made fleets (a fake FleetView whose
// loads and caches the test sets), with the numbers worked out in the
// comments; and the registry's errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <vector>

#include "sim/base/error.h"
#include "sim/fleet/router.h"
#include "test/sim/fleet/fake_fleet.h"

using namespace prefixsim;

using namespace prefixsim::fleet_test;

TEST_CASE("round-robin takes replicas in turn whatever their load", "[router]") {
  auto r = make("round-robin");
  FakeFleet f({{100}, {0}, {0}});
  const Prompt p = prompt(1, 2);
  std::vector<uint32_t> got;
  for (int i = 0; i < 5; ++i) got.push_back(r->route(p.query(), f));
  CHECK(got == std::vector<uint32_t>{0, 1, 2, 0, 1});
}

TEST_CASE("random is seeded, repeatable and uniform", "[router]") {
  FakeFleet f({{}, {}, {}, {}});
  const Prompt p = prompt(1, 1);
  auto a = make("random:seed=7", 4), b = make("random:seed=7", 4), c = make("random:seed=8", 4);
  std::vector<uint32_t> sa, sb, sc;
  std::map<uint32_t, int> count;
  for (int i = 0; i < 4000; ++i) {
    sa.push_back(a->route(p.query(), f));
    sb.push_back(b->route(p.query(), f));
    sc.push_back(c->route(p.query(), f));
    ++count[sa.back()];
  }
  CHECK(sa == sb);
  CHECK(sa != sc);
  REQUIRE(count.size() == 4);
  for (const auto& [replica, n] : count) CHECK(std::abs(n - 1000) < 100);  // 1000 +- ~3 sigma
}

TEST_CASE("least-loaded takes the fewest requests, ties to the lowest id", "[router]") {
  auto r = make("least-loaded");
  const Prompt p = prompt(1, 1);
  FakeFleet f({{3}, {1}, {1}});
  CHECK(r->route(p.query(), f) == 1);
  f.r_[1].load = 2;
  CHECK(r->route(p.query(), f) == 2);
}

TEST_CASE("session keeps a session on one replica and moves few sessions when the fleet grows", "[router]") {
  auto r = make("session", 8);
  FakeFleet f8(std::vector<FakeReplica>(8)), f9(std::vector<FakeReplica>(9));
  const Prompt a1 = prompt(1, 1, "a-turn-1", "conversation-a"), a2 = prompt(2, 3, "a-turn-2", "conversation-a");
  CHECK(r->route(a1.query(), f8) == r->route(a2.query(), f8));
  // Without a session, the request id is the key.
  const Prompt x = prompt(1, 1, "lonely");
  CHECK(r->route(x.query(), f8) == r->route(x.query(), f8));
  // Jump consistent hash: from 8 to 9 replicas about 1/9 of the keys move,
  // and only to the new replica.
  int moved = 0;
  std::map<uint32_t, int> spread;
  for (int i = 0; i < 9000; ++i) {
    const Prompt s = prompt(1, 1, "r", "session-" + std::to_string(i));
    const uint32_t before = r->route(s.query(), f8), after = r->route(s.query(), f9);
    ++spread[before];
    if (before != after) {
      ++moved;
      CHECK(after == 8);
    }
  }
  CHECK(moved > 800);
  CHECK(moved < 1200);
  for (const auto& [replica, n] : spread) CHECK(std::abs(n - 1125) < 150);
}

TEST_CASE("prefix follows the longest match while load is balanced", "[router]") {
  auto r = make("prefix");  // cache_threshold 0.3, balance_abs 64, balance_rel 1.5
  FakeFleet f({{0}, {0}, {0}});
  const Prompt first = prompt(7, 10);
  CHECK(r->route(first.query(), f) == 0);  // no match anywhere: least loaded, lowest id
  f.r_[0].load = 10;                       // 10 - 0 <= 64: still balanced
  const Prompt again = prompt(7, 10);
  CHECK(r->route(again.query(), f) == 0);  // full match on replica 0 beats its load
  // least-loaded would have sent it to 1: the router is not least-loaded.
  auto ll = make("least-loaded");
  CHECK(ll->route(again.query(), f) == 1);
  const Prompt other = prompt(8, 10);
  CHECK(r->route(other.query(), f) == 1);  // no match: least loaded
}

TEST_CASE("prefix routes by load when the match is at or below the threshold", "[router]") {
  auto r = make("prefix:cache_threshold=0.5");
  FakeFleet f({{0}, {0}, {0}});
  Prompt shared = prompt(3, 2);
  CHECK(r->route(shared.query(), f) == 0);
  f.r_[0].load = 5;
  // 2 of 4 blocks match on replica 0: rate 0.5, not above 0.5.
  Prompt longer = prompt(3, 4);
  CHECK(r->route(longer.query(), f) == 1);
  // 2 of 3 blocks match on replica 0, 3 of 3 on replica 1 (it took
  // `longer`): the longest match, above the threshold, wins.
  Prompt three = prompt(3, 3);
  CHECK(r->route(three.query(), f) == 1);
}

TEST_CASE("prefix routes to the least loaded when load is imbalanced", "[router]") {
  auto r = make("prefix");
  FakeFleet f({{0}, {0}, {0}});
  const Prompt p = prompt(5, 10);
  CHECK(r->route(p.query(), f) == 0);
  f.r_[0].load = 100;  // 100 - 0 > 64 and 100 > 1.5 * 0: imbalanced
  f.r_[1].load = 20;
  f.r_[2].load = 0;
  CHECK(r->route(p.query(), f) == 2);
  // balance_abs=200: no longer imbalanced, so the full match on 0 wins again.
  auto lax = make("prefix:balance_abs=200");
  f.r_[0].load = 0;
  CHECK(lax->route(p.query(), f) == 0);
  f.r_[0].load = 100;
  CHECK(lax->route(p.query(), f) == 0);
}

TEST_CASE("least-loaded in a mixed fleet takes the fewest requests per KV block", "[router][mixed]") {
  auto r = make("least-loaded", 2);
  const Prompt p = prompt(1, 1);
  // Replica 0: 3 requests on 1000 blocks (0.003 a block); replica 1: 8 on
  // 4000 (0.002): 1, though it holds more requests.
  FakeFleet f({{3}, {8}});
  f.r_[1].capacity = 4000;
  CHECK(r->route(p.query(), f) == 1);
  // 12 on 4000 is 0.003 a block: a tie, to the lowest id.
  f.r_[1].load = 12;
  CHECK(r->route(p.query(), f) == 0);
  // Equal pools: the plain rule (3 < 8).
  f.r_[1] = {8};
  CHECK(r->route(p.query(), f) == 0);
}

TEST_CASE("kv-aware in a mixed fleet weighs decode blocks by the fleet's mean pool over the replica's",
          "[router][mixed]") {
  // B = 16, a 10-block prompt, nothing cached or queued: logit = 10 + (active + 10) * mean / pool.
  const Prompt p = prompt(1, 10);
  FakeFleet f({{0, 0, 100, 0}, {0, 0, 250, 0}});
  // Equal pools (1000): 10 + 110 = 120 vs 10 + 260 = 270 -> 0.
  CHECK(make("kv-aware", 2)->route(p.query(), f) == 0);
  // Replica 1 with 4000 blocks: mean 2500; replica 0: 10 + 110 * 2.5 = 285,
  // replica 1: 10 + 260 * 0.625 = 172.5 -> 1.
  f.r_[1].capacity = 4000;
  CHECK(make("kv-aware", 2)->route(p.query(), f) == 1);
}

TEST_CASE("kv-aware scores cached blocks against prefill and decode load (Dynamo's logit)", "[router]") {
  // B = 16, a 10-block prompt. logit = w * (queued + 160 - 16 * overlap) / 16 + active + 10 - overlap.
  const Prompt p = prompt(1, 10);
  FakeFleet f({{0, 0, 100, 0}, {0, 0, 115, 10}});
  // replica 0: 1 * 10 + 110 = 120; replica 1: 0 + 115 = 115 -> 1.
  CHECK(make("kv-aware", 2)->route(p.query(), f) == 1);
  // overlap_weight 0 ignores the cache: 110 vs 115 -> 0.
  CHECK(make("kv-aware:overlap_weight=0", 2)->route(p.query(), f) == 0);
  // weight 2: 20 + 110 = 130 vs 115 -> 1; queued prompt tokens count as prefill:
  // 320 queued on replica 1: 2 * 20 + 115 = 155 > 130 -> 0.
  CHECK(make("kv-aware:overlap_weight=2", 2)->route(p.query(), f) == 1);
  f.r_[1].queued = 320;
  CHECK(make("kv-aware:overlap_weight=2", 2)->route(p.query(), f) == 0);
  // Equal logits: the lowest id.
  FakeFleet tie({{0, 0, 50, 0}, {0, 0, 50, 0}});
  CHECK(make("kv-aware", 2)->route(p.query(), tie) == 0);
}

TEST_CASE("kv-aware with a temperature samples the softmax of the normalised logits", "[router]") {
  const Prompt p = prompt(1, 10);
  // logits 120 and 115 as above; normalised by 120: 1 and 0.9583.
  FakeFleet f({{0, 0, 100, 0}, {0, 0, 115, 10}});
  const double t = 0.05;
  const double w0 = std::exp(-1.0 / t), w1 = std::exp(-(115.0 / 120.0) / t);
  const double p1 = w1 / (w0 + w1);  // about 0.70
  auto r = make("kv-aware:temperature=0.05,seed=3", 2);
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += static_cast<int>(r->route(p.query(), f));
  CHECK(std::abs(static_cast<double>(ones) / n - p1) < 0.015);
}

TEST_CASE("the router registry names every router and rejects bad specs", "[router]") {
  for (const RouterInfo& info : router_registry()) {
    auto r = make(info.name);
    FakeFleet f({{}, {}, {}});
    const Prompt p = prompt(1, 2);
    CHECK(r->route(p.query(), f) < 3);
  }
  CHECK(router_registry().size() == 7);
  CHECK_THROWS_WITH(make("nearest"), Catch::Contains("unknown router 'nearest'") && Catch::Contains("kv-aware"));
  CHECK_THROWS_WITH(make("prefix:cache_threshold=2"), Catch::Contains("--router prefix: cache_threshold must be in"));
  CHECK_THROWS_WITH(make("random:colour=red"), Catch::Contains("--router random: unknown parameter 'colour'"));
  CHECK_THROWS_WITH(make("kv-aware:temperature"), Catch::Contains("expected key=value"));
}
