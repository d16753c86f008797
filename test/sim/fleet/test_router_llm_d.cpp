// llm-d's scheduler (sim/fleet/router_llm_d.cpp): each scorer on hand-made
// fleets with the totals worked out in comments, the pickers, the errors,
// and a differential test against a plain reference of the whole profile.
#include <catch2/catch.hpp>
#include <algorithm>
#include <list>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "sim/base/error.h"
#include "sim/fleet/router.h"
#include "test/sim/fleet/fake_fleet.h"

using namespace prefixsim;
using namespace prefixsim::fleet_test;

namespace llm_d_test {

BlockHash h(uint64_t v) { return BlockHash{v, 0}; }

// How often each replica is picked over `n` routes of `p`.
std::vector<int> pick_counts(Router& r, const FakeFleet& f, const Prompt& p, int n) {
  std::vector<int> c(f.size());
  for (int i = 0; i < n; ++i) ++c[r.route(p.query(), f)];
  return c;
}

}  // namespace llm_d_test

TEST_CASE("llm-d's default profile is prefix 3, kv-util 2, queue 2", "[router][llm-d]") {
  // No prefix routed yet: prefix scores 0 everywhere.
  // queue: waiting 0, 2, 4 -> (4-q)/4 = 1, 0.5, 0;  kv-util: 1 - usage = 0.5, 0.9, 0.75.
  // totals: 2*1 + 2*0.5 = 3.0;  2*0.5 + 2*0.9 = 2.8;  0 + 2*0.75 = 1.5  -> replica 0.
  FakeFleet f({{.waiting = 0, .kv_usage = 0.5}, {.waiting = 2, .kv_usage = 0.1}, {.waiting = 4, .kv_usage = 0.25}});
  const Prompt p = prompt(1, 4);
  CHECK(make("llm-d")->route(p.query(), f) == 0);
  // Weighted the other way (kv-util 3): 2 + 1.5 = 3.5 against 1 + 2.7 = 3.7 -> replica 1.
  CHECK(make("llm-d:kv-util=3,queue=2")->route(p.query(), f) == 1);
}

TEST_CASE("llm-d's approximate prefix scorer follows what it routed, not what the replicas cache", "[router][llm-d]") {
  // prefix 2, queue 1. Replica 0 has the shortest queue, so the first
  // prompt (matching nowhere) goes there; then the queues favour replica 1,
  // but the index says replica 0 holds all 4 blocks: 2*4/4 + 0 = 2 against
  // 0 + 1 = 1 -> replica 0, though replica 1 is the one really caching it.
  auto r = make("llm-d:prefix=2,queue=1");
  const Prompt a = prompt(1, 4);
  CHECK(r->route(a.query(), FakeFleet({{.waiting = 0}, {.waiting = 1}, {.waiting = 1}})) == 0);
  FakeFleet later({{.cached = 0, .waiting = 1}, {.cached = 4, .waiting = 0}, {.waiting = 1}});
  CHECK(r->route(a.query(), later) == 0);  // the replicas' real caches are not read
  // A prompt sharing its first two blocks: match 2 of 4, so with prefix 3 replica 0 scores 1.5 against
  // the queue's 1 on replica 1; a router that routed nothing yet sends it by the queue.
  Prompt half = prompt(1, 2);
  half.blocks.push_back(llm_d_test::h(77));
  half.blocks.push_back(llm_d_test::h(78));
  CHECK(make("llm-d:prefix=3,queue=1")->route(half.query(), later) == 1);
  auto r3 = make("llm-d:prefix=3,queue=1");
  r3->route(a.query(), FakeFleet({{.waiting = 0}, {.waiting = 1}, {.waiting = 1}}));
  CHECK(r3->route(half.query(), later) == 0);
}

TEST_CASE("llm-d's approximate match stops at the first block no replica holds, not per replica", "[router][llm-d]") {
  using llm_d_test::h;
  // llm-d's matchLongestPrefix: for each block in order, every replica holding it gets +1; it stops at
  // the first block held by none. Replica 0 holds h1, h3, h4; replica 1 holds h1, h2.
  auto r = make("llm-d:prefix=1,queue=1", 2);
  CHECK(r->route(prompt_of({h(1), h(3), h(4)}).query(), FakeFleet({{.waiting = 0}, {.waiting = 1}})) == 0);
  // h1 is held by 0: prefix 0.5 + queue 0 for replica 0, 0 + 1 for replica 1.
  CHECK(r->route(prompt_of({h(1), h(2)}).query(), FakeFleet({{.waiting = 1}, {.waiting = 0}})) == 1);
  // x = h1 h2 h3 h4: h1 -> both, h2 -> 1, h3 -> 0, h4 -> 0; replica 0 matches 3 of 4, replica 1 2 of 4.
  // A longest run per replica would give replica 0 only 1 (h1) and send x to replica 1.
  CHECK(r->route(prompt_of({h(1), h(2), h(3), h(4)}).query(), FakeFleet({{}, {}})) == 0);
}

TEST_CASE("llm-d's approximate index evicts root first, as its per-pod LRU adds blocks in order", "[router][llm-d]") {
  // Pool of 6 blocks per replica. A (4 blocks) then B (4 blocks) both go to replica 0 (queue). B's
  // insert evicts A's two oldest entries: its root a1 and a2. Asked for A again, a1 is held by nobody,
  // so A matches 0 everywhere and the queue sends it to replica 1. (Had the index kept A's root, as a
  // leaf-first insert does, A would match 2 of 4: prefix 3*0.5 = 1.5 > queue 1 -> replica 0.)
  auto r = make("llm-d:prefix=3,queue=1", 3, 6);
  const FakeFleet zero_first({{.waiting = 0}, {.waiting = 1}, {.waiting = 1}});
  const Prompt a = prompt(1, 4), b = prompt(2, 4);
  REQUIRE(r->route(a.query(), zero_first) == 0);
  REQUIRE(r->route(b.query(), zero_first) == 0);
  CHECK(r->route(a.query(), FakeFleet({{.waiting = 1}, {.waiting = 0}, {.waiting = 1}})) == 1);
  // With room for both (8 blocks), A is still whole on replica 0.
  auto roomy = make("llm-d:prefix=3,queue=1", 3, 8);
  roomy->route(a.query(), zero_first);
  roomy->route(b.query(), zero_first);
  CHECK(roomy->route(a.query(), FakeFleet({{.waiting = 1}, {.waiting = 0}, {.waiting = 1}})) == 0);
}

TEST_CASE("llm-d's precise prefix scorer: released min-max over holders, or main's fraction", "[router][llm-d]") {
  const Prompt p = prompt(1, 4);
  // cached 4, 2, 0 of 4 blocks; queue 0.6 with waiting 2, 0, 0 -> queue scores 0, 1, 1.
  // minmax over the holders (4 and 2): 1, 0, 0 -> totals 1, 0.6, 0.6 -> replica 0.
  // fraction: 1, 0.5, 0 -> totals 1, 1.1, 0.6 -> replica 1.
  FakeFleet f({{.cached = 4, .waiting = 2}, {.cached = 2, .waiting = 0}, {.cached = 0, .waiting = 0}});
  CHECK(make("llm-d:precise-prefix=1,queue=0.6")->route(p.query(), f) == 0);
  CHECK(make("llm-d:precise-prefix=1,queue=0.6,precise-norm=fraction")->route(p.query(), f) == 1);
  // A lone holder of 1 block in 4 gets minmax's full 1 (fraction: 0.25). waiting 1, 0, 1 -> queue 0, 1, 0.
  // minmax: 1 against 0.6 -> replica 0; fraction: 0.25 against 0.6 -> replica 1.
  FakeFleet lone({{.cached = 1, .waiting = 1}, {.cached = 0, .waiting = 0}, {.cached = 0, .waiting = 1}});
  CHECK(make("llm-d:precise-prefix=1,queue=0.6")->route(p.query(), lone) == 0);
  CHECK(make("llm-d:precise-prefix=1,queue=0.6,precise-norm=fraction")->route(p.query(), lone) == 1);
}

TEST_CASE("llm-d's kv-util, running and load-aware scorers", "[router][llm-d]") {
  const Prompt p = prompt(1, 2);
  // kv-util: 1 - usage = 0.1, 0.8, 0.5 -> replica 1.
  CHECK(make("llm-d:kv-util=1")->route(p.query(), FakeFleet({{.kv_usage = 0.9}, {.kv_usage = 0.2}, {.kv_usage = 0.5}})) == 1);
  // running: (max - r) / (max - min) with running 5, 3, 1 -> 0, 0.5, 1 -> replica 2.
  CHECK(make("llm-d:running=1")->route(p.query(), FakeFleet({{.running = 5}, {.running = 3}, {.running = 1}})) == 2);
  // load-aware (threshold 128): waiting 200, 64, 10 -> 0, 0.5*(1-64/128) = 0.25, 0.5*(1-10/128) = 0.461.
  CHECK(make("llm-d:load-aware=1")->route(p.query(), FakeFleet({{.waiting = 200}, {.waiting = 64}, {.waiting = 10}})) == 2);
  // load-aware=1, kv-util=0.1: waiting 0 -> 0.5 + 0.1*0 = 0.5; waiting 10 -> 0.461 + 0.1*1 = 0.561 -> replica 1,
  // and with load-threshold=10: waiting 10 -> 0 + 0.1 = 0.1 -> replica 0.
  FakeFleet g({{.waiting = 0, .kv_usage = 1.0}, {.waiting = 10, .kv_usage = 0.0}});
  CHECK(make("llm-d:load-aware=1,kv-util=0.1", 2)->route(p.query(), g) == 1);
  CHECK(make("llm-d:load-aware=1,kv-util=0.1,load-threshold=10", 2)->route(p.query(), g) == 0);
}

TEST_CASE("llm-d's session affinity sends a session back to the replica that served it", "[router][llm-d]") {
  auto r = make("llm-d:session=1,queue=0.5");
  const Prompt t1 = prompt(1, 2, "t1", "chat-a"), t2 = prompt(2, 2, "t2", "chat-a"), other = prompt(3, 2, "o", "chat-b");
  // waiting 1, 0, 1 -> queue 0, 0.5, 0: the first turn goes to replica 1.
  REQUIRE(r->route(t1.query(), FakeFleet({{.waiting = 1}, {.waiting = 0}, {.waiting = 1}})) == 1);
  // Now replica 0 has the shortest queue (0.5) but the session scores 1 on replica 1.
  const FakeFleet shifted({{.waiting = 0}, {.waiting = 1}, {.waiting = 1}});
  CHECK(r->route(t2.query(), shifted) == 1);
  CHECK(r->route(other.query(), shifted) == 0);  // another session has no affinity yet
  CHECK(make("llm-d:queue=0.5")->route(t2.query(), shifted) == 0);
}

TEST_CASE("llm-d's pickers: max-score draws among ties, random ignores scores, weighted-random follows them",
          "[router][llm-d]") {
  const Prompt p = prompt(1, 2);
  const FakeFleet even({{}, {}, {}, {}});
  auto ties = make("llm-d:queue=1,seed=5", 4);
  const std::vector<int> c = llm_d_test::pick_counts(*ties, even, p, 4000);
  for (int n : c) CHECK(n > 850);  // 1000 expected each; the lowest id does not win every tie
  auto again = make("llm-d:queue=1,seed=5", 4);
  CHECK(llm_d_test::pick_counts(*again, even, p, 4000) == c);  // seeded: the same draws
  // random: uniform even where one replica scores best.
  const FakeFleet skewed({{.kv_usage = 0.0}, {.kv_usage = 0.5}, {.kv_usage = 1.0}});
  auto uniform = make("llm-d:kv-util=1,picker=random");
  for (int n : llm_d_test::pick_counts(*uniform, skewed, p, 3000)) CHECK(n > 850);
  // weighted-random: totals 1, 0.5, 0 -> 2/3, 1/3, never.
  auto weighted = make("llm-d:kv-util=1,picker=weighted-random");
  const std::vector<int> w = llm_d_test::pick_counts(*weighted, skewed, p, 3000);
  CHECK(w[0] > 1850);
  CHECK(w[0] < 2150);
  CHECK(w[2] == 0);
  CHECK(make("llm-d:kv-util=1")->route(p.query(), skewed) == 0);  // max-score: the best
}

TEST_CASE("llm-d's spec errors name the parameter", "[router][llm-d]") {
  CHECK_THROWS_WITH(make("llm-d:picker=best"), Catch::Contains("picker must be max-score, random or weighted-random"));
  CHECK_THROWS_WITH(make("llm-d:precise-norm=z"), Catch::Contains("precise-norm must be minmax"));
  CHECK_THROWS_WITH(make("llm-d:queue=0"), Catch::Contains("every scorer's weight is 0"));
  CHECK_THROWS_WITH(make("llm-d:queue=-1"), Catch::Contains("queue"));
  CHECK_THROWS_WITH(make("llm-d:prefix-max-blocks=0"), Catch::Contains("prefix-max-blocks must be in [1, 1000000]"));
  CHECK_THROWS_WITH(make("llm-d:prefx=3"), Catch::Contains("prefx"));
}

namespace llm_d_test {

// The whole profile written plainly: per-replica LRU lists searched
// linearly, each formula as llm-d's Go source states it. It never picks; it
// says which replicas reach the best total, and learns the router's choice.
struct Reference {
  double precise = 0, prefix = 0, kv = 0, queue = 0, running = 0, load = 0, session = 0;
  size_t capacity = 0, max_blocks = 256;
  std::vector<std::list<BlockHash>> lru;  // most recent at the back
  std::map<std::string, uint32_t> last;

  std::set<uint32_t> best(const Prompt& p, const FakeFleet& f) const {
    const size_t n = f.size();
    std::vector<double> total(n, 0);
    // precise, min-max over the replicas holding block 0
    std::vector<double> raw(n);
    for (size_t i = 0; i < n; ++i) raw[i] = static_cast<double>(std::min(f.r_[i].cached, p.blocks.size()));
    double lo = 1e300, hi = -1;
    for (double x : raw)
      if (x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
    for (size_t i = 0; i < n; ++i)
      if (raw[i] > 0) total[i] += precise * (hi == lo ? 1.0 : (raw[i] - lo) / (hi - lo));
    // approximate
    const size_t nb = std::min(p.blocks.size(), max_blocks);
    std::vector<double> match(n, 0);
    for (size_t b = 0; b < nb; ++b) {
      bool any = false;
      for (size_t i = 0; i < n; ++i)
        if (std::find(lru[i].begin(), lru[i].end(), p.blocks[b]) != lru[i].end()) match[i] += 1, any = true;
      if (!any) break;
    }
    for (size_t i = 0; i < n; ++i)
      if (nb) total[i] += prefix * match[i] / static_cast<double>(nb);
    size_t qmin = SIZE_MAX, qmax = 0, rmin = SIZE_MAX, rmax = 0;
    for (const FakeReplica& r : f.r_) {
      qmin = std::min(qmin, r.waiting), qmax = std::max(qmax, r.waiting);
      rmin = std::min(rmin, r.running), rmax = std::max(rmax, r.running);
    }
    for (size_t i = 0; i < n; ++i) {
      const FakeReplica& r = f.r_[i];
      total[i] += kv * (1 - r.kv_usage);
      total[i] += queue * (qmax == qmin ? 1.0 : double(qmax - r.waiting) / double(qmax - qmin));
      total[i] += running * (rmax == rmin ? 1.0 : double(rmax - r.running) / double(rmax - rmin));
      total[i] += load * (r.waiting == 0 ? 0.5 : 0.5 * (1 - std::min(double(r.waiting), 128.0) / 128.0));
    }
    auto s = last.find(p.req.session);
    if (!p.req.session.empty() && s != last.end()) total[s->second] += session;
    const double top = *std::max_element(total.begin(), total.end());
    std::set<uint32_t> out;
    for (size_t i = 0; i < n; ++i)
      if (total[i] >= top - 1e-9) out.insert(static_cast<uint32_t>(i));
    return out;
  }

  void routed(const Prompt& p, uint32_t to) {
    for (size_t b = 0; b < std::min(p.blocks.size(), max_blocks); ++b) {
      lru[to].remove(p.blocks[b]);
      lru[to].push_back(p.blocks[b]);
      if (lru[to].size() > capacity) lru[to].pop_front();
    }
    if (!p.req.session.empty()) last[p.req.session] = to;
  }
};

}  // namespace llm_d_test

TEST_CASE("llm-d's router picks what a plain reference of its profile scores best", "[router][llm-d]") {
  std::mt19937_64 rng(11);
  const uint32_t n = 5;
  llm_d_test::Reference ref;
  ref.precise = 1.5, ref.prefix = 3, ref.kv = 2, ref.queue = 2, ref.running = 0.5, ref.load = 1, ref.session = 0.7;
  ref.capacity = 40;
  ref.max_blocks = 12;
  ref.lru.resize(n);
  auto router = make(
      "llm-d:precise-prefix=1.5,prefix=3,kv-util=2,queue=2,running=0.5,load-aware=1,session=0.7,prefix-max-blocks=12",
      n, 40);
  // Prompts from 30 families sharing leading blocks (a family's prompts are prefixes of one another),
  // 1 to 20 blocks; queues and usages drawn small so that ties happen too.
  int ties = 0, max_match = 0;
  for (int k = 0; k < 3000; ++k) {
    Prompt p = prompt(rng() % 30, 1 + rng() % 20, "r", rng() % 3 ? "s" + std::to_string(rng() % 50) : "");
    std::vector<FakeReplica> reps(n);
    for (FakeReplica& r : reps) {
      r.waiting = rng() % 4;
      r.running = rng() % 4;
      r.kv_usage = static_cast<double>(rng() % 5) / 4;
      r.cached = rng() % 6;
    }
    const FakeFleet f(reps);
    const std::set<uint32_t> best = ref.best(p, f);
    const uint32_t got = router->route(p.query(), f);
    INFO("route " << k);
    REQUIRE(best.count(got) == 1);
    ties += best.size() > 1;
    for (const auto& l : ref.lru) max_match = std::max(max_match, static_cast<int>(l.size()));
    ref.routed(p, got);
  }
  CHECK(ties > 10);         // the tie rule was exercised
  CHECK(max_match == 40);   // and the LRUs were full, so eviction was too
}
