// The fleet on real replicas: one replica is the lone engine event for
// event whatever the router; a fleet conserves requests (finished + refused
// == arrived, on every replica and in total), keeps every pool's
// invariants after every step and frees every block; it repeats itself
// exactly; and on multi-turn traffic the prefix-aware routers keep more
// of the cache than the blind ones.
#include <catch2/catch.hpp>
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "sim/base/error.h"
#include "sim/engine/vector_source.h"
#include "sim/fleet/fleet.h"
#include "test/sim/fleet/linear_replica.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/kv_cache_manager.h"

using namespace prefixsim;

namespace {

// `sessions` conversations of `turns` turns: every prompt starts with one
// shared 64-token system prompt, then the session's history so far (each
// turn adds 48 tokens); a request every `gap` ns, sessions interleaved.
std::vector<Request> multi_turn(int sessions, int turns, TimeNs gap, uint64_t seed) {
  std::vector<Request> out;
  std::vector<int> next_turn(static_cast<size_t>(sessions), 0);
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  int left = sessions * turns;
  TimeNs t = 0;
  while (left > 0) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int s = static_cast<int>(x % static_cast<uint64_t>(sessions));
    if (next_turn[static_cast<size_t>(s)] == turns) continue;
    const int k = next_turn[static_cast<size_t>(s)]++;
    Request r;
    r.id = "s" + std::to_string(s) + "-t" + std::to_string(k);
    r.session = "s" + std::to_string(s);
    r.arrival = t;
    for (int i = 0; i < 64; ++i) r.tokens.push_back(i + 1);
    for (int j = 0; j <= k; ++j)
      for (int i = 0; i < 48; ++i) r.tokens.push_back(100'000 * (s + 1) + 1'000 * j + i);
    r.prompt_len = static_cast<int64_t>(r.tokens.size());
    r.output_len = 8 + static_cast<int64_t>(x % 24);
    out.push_back(std::move(r));
    t += gap;
    --left;
  }
  return out;
}

using Replica = fleet_test::LinearReplica;

// Checks every replica's pool after each of its steps; counts records.
class Checker final : public EngineObserver {
 public:
  explicit Checker(std::vector<const BlockPool*> pools) : pools_(std::move(pools)) {}
  void on_step(const StepRecord& s) override {
    ++steps;
    const std::string broken = pools_.at(s.replica)->check_invariants();
    if (!broken.empty()) FAIL("replica " << s.replica << " step " << s.index << ": " << broken);
  }
  void on_request_finished(const RequestRecord& r) override {
    trace.push_back(r.request->id + "@" + std::to_string(r.replica) + ":" + std::to_string(r.first_token) + "/" +
                    std::to_string(r.hit_tokens));
  }
  uint64_t steps = 0;
  std::vector<std::string> trace;

 private:
  std::vector<const BlockPool*> pools_;
};

struct FleetRun {
  FleetResult result;
  std::vector<std::string> trace;
  std::vector<int32_t> free_blocks;
};

// `wrap`, when given, wraps the router made from its spec.
using RouterWrap = std::function<std::unique_ptr<Router>(std::unique_ptr<Router>)>;
FleetRun run(const std::vector<Request>& reqs, uint32_t n, const std::string& router, int32_t blocks,
            TimeNs scrape = 0, RouterViewStats* stats = nullptr, const AdmissionConfig& admission = {},
            const RouterWrap& wrap = {}) {
  EventLoop loop;
  std::vector<std::unique_ptr<Replica>> reps;
  std::vector<Engine*> engines;
  std::vector<const BlockPool*> pools;
  for (uint32_t i = 0; i < n; ++i) {
    reps.push_back(std::make_unique<Replica>(blocks, &loop, i));
    engines.push_back(&reps.back()->engine);
    pools.push_back(&reps.back()->pool);
  }
  Checker check(pools);
  for (Engine* e : engines) e->set_observer(&check);
  RouterContext ctx;
  ctx.replicas = n;
  ctx.pool_blocks = blocks;
  auto r = make_router(router, ctx);
  if (wrap) r = wrap(std::move(r));
  VectorSource src{std::span<const Request>(reqs)};
  FleetRun out;
  out.result = run_fleet(loop, src, engines, *r, 16, 0, stats, scrape, admission);
  out.trace = std::move(check.trace);
  for (const auto& rep : reps) out.free_blocks.push_back(rep->pool.num_free());
  return out;
}

const char* const kRouters[] = {"round-robin", "random", "least-loaded", "session", "prefix", "kv-aware"};

void same(const EngineResult& a, const EngineResult& b) {
  CHECK(a.arrived == b.arrived);
  CHECK(a.finished == b.finished);
  CHECK(a.refused == b.refused);
  CHECK(a.steps == b.steps);
  CHECK(a.preemptions == b.preemptions);
  CHECK(a.admitted_hit_tokens == b.admitted_hit_tokens);
  CHECK(a.end_time == b.end_time);
  CHECK(a.events == b.events);
  CHECK(a.event_fingerprint == b.event_fingerprint);
}

}  // namespace

TEST_CASE("one replica of a fleet is the lone engine, event for event, whatever the router", "[fleet]") {
  const auto reqs = multi_turn(12, 6, 500'000, 1);
  Replica lone(60, nullptr, 0);
  Checker check({&lone.pool});
  lone.engine.set_observer(&check);
  VectorSource src{std::span<const Request>(reqs)};
  const EngineResult want = lone.engine.run(src);
  REQUIRE(want.preemptions > 0);  // a pool small enough to make the run interesting
  for (const char* router : kRouters) {
    INFO(router);
    const FleetRun got = run(reqs, 1, router, 60);
    same(got.result.total, want);
    same(got.result.replicas.at(0), want);
    CHECK(got.trace == check.trace);
  }
}

TEST_CASE("a fleet conserves requests, keeps every pool's invariants and frees every block", "[fleet]") {
  auto reqs = multi_turn(20, 5, 1'000'000, 2);
  Request huge = reqs.back();  // can never fit a 40-block pool: refused on whichever replica
  huge.id = "huge";
  huge.tokens.assign(2000, 7);
  huge.prompt_len = 2000;
  huge.arrival = reqs.back().arrival + 1;
  reqs.push_back(huge);
  for (const char* router : kRouters) {
    INFO(router);
    const FleetRun f = run(reqs, 4, router, 40);
    const EngineResult& t = f.result.total;
    CHECK(t.arrived == reqs.size());
    CHECK(t.finished + t.refused == t.arrived);
    CHECK(t.refused == 1);
    uint64_t arrived = 0, finished = 0;
    for (const EngineResult& r : f.result.replicas) {
      CHECK(r.finished + r.refused == r.arrived);
      arrived += r.arrived;
      finished += r.finished;
    }
    CHECK(arrived == t.arrived);
    CHECK(finished == t.finished);
    for (int32_t free : f.free_blocks) CHECK(free == 39);  // every usable block free again
  }
}

// Checks, at every routing decision, that the fleet view's side-by-side
// lookup of every replica's cached prefix (engine_view.cpp) gives each
// replica's own count, then lets the wrapped router decide.
struct LookupCounts {
  size_t deepest = 0, matched = 0;
};
class PrefixLookupCheck final : public Router {
 public:
  PrefixLookupCheck(std::unique_ptr<Router> inner, LookupCounts& counts) : inner_(std::move(inner)), n_(counts) {}
  bool needs_prompt_blocks() const override { return true; }
  uint32_t route(const RouteQuery& q, const FleetView& fleet) override {
    std::vector<size_t> all(fleet.size(), 12345);
    fleet.cached_prefix_blocks_all(q.prompt_blocks, all);
    for (uint32_t i = 0; i < fleet.size(); ++i) {
      const size_t one = fleet.cached_prefix_blocks(i, q.prompt_blocks);
      if (all[i] != one) FAIL("replica " << i << ": " << all[i] << " blocks side by side, " << one << " alone");
      n_.deepest = std::max(n_.deepest, one);
      n_.matched += one > 0 ? 1 : 0;
    }
    return inner_->route(q, fleet);
  }

 private:
  std::unique_ptr<Router> inner_;
  LookupCounts& n_;  // the caller's: the router dies with the run
};

TEST_CASE("the fleet view looks up every replica's cached prefix side by side as each would alone", "[fleet]") {
  // Small pools (evictions, chains reused) and long shared prefixes (walks
  // many blocks deep on some replicas, stopping early on others).
  const auto reqs = multi_turn(16, 6, 300'000, 6);
  for (const char* router : {"kv-aware", "round-robin"}) {
    INFO(router);
    LookupCounts counts;
    run(reqs, 4, router, 120, 0, nullptr, {},
        [&](std::unique_ptr<Router> r) { return std::make_unique<PrefixLookupCheck>(std::move(r), counts); });
    CHECK(counts.deepest >= 10);  // deep walks happened
    CHECK(counts.matched > reqs.size());
  }
}

TEST_CASE("a fleet run repeats itself exactly", "[fleet]") {
  const auto reqs = multi_turn(16, 4, 2'000'000, 3);
  for (const char* router : {"random:seed=5", "prefix", "kv-aware:temperature=0.2"}) {
    INFO(router);
    const FleetRun a = run(reqs, 3, router, 120), b = run(reqs, 3, router, 120);
    same(a.result.total, b.result.total);
    CHECK(a.trace == b.trace);
  }
}

TEST_CASE("prefix-aware routers keep a higher hit rate than blind ones on multi-turn traffic", "[fleet]") {
  const auto reqs = multi_turn(24, 8, 4'000'000, 4);
  auto hit_rate = [&](const char* router) {
    const FleetRun f = run(reqs, 4, router, 400);
    const EngineResult& t = f.result.total;
    return static_cast<double>(t.admitted_hit_tokens) / static_cast<double>(t.admitted_prompt_tokens);
  };
  const double rr = hit_rate("round-robin"), rnd = hit_rate("random");
  for (const char* smart : {"prefix", "kv-aware", "session"}) {
    INFO(smart << " vs round-robin " << rr << ", random " << rnd);
    const double h = hit_rate(smart);
    CHECK(h > rr + 0.05);
    CHECK(h > rnd + 0.05);
  }
}

// --router-scrape-ms: the router reads the load sampled at the last multiple
// of the period, so requests it sent since are invisible to it. 20 requests
// arrive every 40 ms (0 to 760 ms): sampled once a second, least-loaded
// sees two empty replicas all along and sends everything to replica 0 (its
// tie rule), as a scraping router herds; sampled every 100 ms it sees
// replica 0 fill and sends later ones to replica 1; live it alternates.
TEST_CASE("a router reading load sampled every period herds onto the replica that looked idle", "[fleet][router_view]") {
  const auto reqs = multi_turn(5, 4, 40'000'000, 3);
  RouterViewStats second;
  const FleetRun herd = run(reqs, 2, "least-loaded", 400, 1'000'000'000, &second);
  CHECK(herd.result.replicas[0].arrived == 20);
  CHECK(herd.result.replicas[1].arrived == 0);
  CHECK(second.decisions == 20);
  CHECK(second.believed_load == 0);  // the only sample, at 0, saw nothing
  CHECK(second.actual_load > 0);
  CHECK(second.stale_load > 10);

  RouterViewStats tenth;
  const FleetRun sampled = run(reqs, 2, "least-loaded", 400, 100'000'000, &tenth);
  CHECK(sampled.result.replicas[1].arrived > 0);
  CHECK(tenth.stale_load < second.stale_load);

  RouterViewStats none;
  const FleetRun live = run(reqs, 2, "least-loaded", 400, 0, &none);
  CHECK(live.result.replicas[0].arrived > 0);
  CHECK(live.result.replicas[1].arrived > 0);
  CHECK(none.decisions == 0);  // nothing sampled, nothing tallied
  // Every request finishes whichever view the router had.
  for (const FleetRun* f : {&herd, &sampled, &live}) CHECK(f->result.total.finished == 20);
}

TEST_CASE("admission that never finds the fleet saturated changes nothing, event for event", "[fleet][admission]") {
  const auto reqs = multi_turn(6, 4, 5'000'000, 9);
  const FleetRun plain = run(reqs, 2, "kv-aware", 300);
  const FleetRun gated = run(reqs, 2, "kv-aware", 300, 0, nullptr, parse_admission("saturation:waiting=1000000,kv=1"));
  same(plain.result.total, gated.result.total);
  CHECK(gated.result.admission.held == 0);
  CHECK(gated.result.admission.refused() == 0);
  CHECK(plain.trace == gated.trace);
}

// 40 requests at one instant onto 2 replicas behind round-robin: arrivals
// run before any step starts, so every admitted request is still waiting
// when the next arrives. With waiting=2 the fleet is saturated once both
// replicas hold 3 (requests 1-6 admitted: 3 each); the 7th finds no room.
TEST_CASE("a saturated fleet sheds at once without a router queue, and holds up to the queue's bound with one",
          "[fleet][admission]") {
  auto reqs = multi_turn(10, 4, 0, 5);
  SECTION("no queue: refused at once") {
    const FleetRun f = run(reqs, 2, "round-robin", 400, 0, nullptr, parse_admission("saturation:waiting=2"));
    CHECK(f.result.total.arrived == 6);
    CHECK(f.result.total.finished == 6);
    CHECK(f.result.admission.refused_saturated == 34);
    CHECK(f.result.admission.refused_queue_full == 0);
    CHECK(f.result.admission.held == 0);
  }
  SECTION("a queue of 10: the next 10 wait at the router, the rest are refused; the held ones all run") {
    const FleetRun f =
        run(reqs, 2, "round-robin", 400, 0, nullptr, parse_admission("saturation:waiting=2,queue=10"));
    CHECK(f.result.admission.held == 10);
    CHECK(f.result.admission.max_queue == 10);
    CHECK(f.result.admission.refused_queue_full == 24);
    CHECK(f.result.admission.refused_saturated == 0);
    CHECK(f.result.total.arrived == 16);
    CHECK(f.result.total.finished == 16);
    // A held request's latency counts from its arrival at the router, not
    // from its release: the last of them starts well after t = 0.
    CHECK(f.result.total.end_time > run(reqs, 2, "round-robin", 400, 0, nullptr,
                                        parse_admission("saturation:waiting=2")).result.total.end_time);
  }
  SECTION("a gate reading sampled load releases the held requests at a later sample") {
    // A request every 10 ms, load sampled every 50 ms, a replica busy while
    // it runs anything (waiting=0, kv=0): held requests go on only when a
    // sample shows an idle replica, and none is left behind.
    reqs = multi_turn(10, 4, 10'000'000, 5);
    const FleetRun f = run(reqs, 2, "least-loaded", 400, 50'000'000, nullptr,
                           parse_admission("saturation:waiting=0,kv=0,queue=100"));
    CHECK(f.result.admission.refused() == 0);
    CHECK(f.result.admission.held > 0);
    CHECK(f.result.total.finished == 40);
  }
}

TEST_CASE("admission specs: off, saturation with its defaults, and bad ones named", "[fleet][admission]") {
  CHECK_FALSE(parse_admission("off").enabled);
  const AdmissionConfig d = parse_admission("saturation");
  CHECK(d.enabled);
  CHECK(d.waiting == 5);  // GAIE's DefaultQueueDepthThreshold
  CHECK(d.kv == 0.8);     // and DefaultKVCacheUtilThreshold
  CHECK(d.queue == 0);
  CHECK(admission_text(d) == "saturation:waiting=5,kv=0.8,queue=0");
  CHECK_THROWS_WITH(parse_admission("shed"), Catch::Contains("--admission: unknown 'shed'"));
  CHECK_THROWS_WITH(parse_admission("saturation:kv=2"), Catch::Contains("kv"));
  CHECK_THROWS_WITH(parse_admission("saturation:queue=-1"), Catch::Contains("queue"));
  CHECK_THROWS_WITH(parse_admission("saturation:depth=3"), Catch::Contains("depth"));
  CHECK_THROWS_AS(parse_admission("off:queue=3"), InputError);
}
