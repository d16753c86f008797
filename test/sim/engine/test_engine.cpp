// The time-driven engine, by hand: TTFT, shared prefixes, chunked prefill,
// preemption under a tiny pool, refusal of requests that can never fit,
// conservation (finished == arrived, every block free) and determinism.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine/vector_source.h"
#include "policies/registry.h"
#include "sim/engine/engine.h"
#include "sim/base/error.h"
#include "sim/kv/kv_cache_manager.h"

using namespace prefixsim;

namespace {

// 5 ms per step plus 1 us per new token.
class LinearExecutor final : public Executor {
 public:
  TimeNs step_time(const Batch& b) override { return 5'000'000 + 1'000 * b.total_new_tokens(); }
};

struct Recorded {
  std::string id;
  RequestRecord rec;
};

class Collect final : public EngineObserver {
 public:
  void on_request_finished(const RequestRecord& r) override { done.push_back({r.request->id, r}); }
  void on_step(const StepRecord& s) override { steps.push_back(s); }
  void on_request_refused(const Request& r, const std::string& why) override { refused.push_back(r.id + ": " + why); }
  const RequestRecord& of(const std::string& id) const {
    for (const auto& d : done)
      if (d.id == id) return d.rec;
    FAIL("request " << id << " did not finish");
    return done.front().rec;
  }
  std::vector<Recorded> done;
  std::vector<StepRecord> steps;
  std::vector<std::string> refused;
};

Request make(const std::string& id, TimeNs t, std::vector<int32_t> tokens, int64_t out) {
  Request r;
  r.id = id;
  r.arrival = t;
  r.prompt_len = static_cast<int64_t>(tokens.size());
  r.tokens = std::move(tokens);
  r.output_len = out;
  return r;
}

std::vector<int32_t> tokens(int32_t first, int n) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

struct Rig {
  BlockPool pool;
  KvCacheManager kv;
  LinearExecutor exec;
  Collect obs;
  Rig(int32_t num_blocks, int32_t block_size) : pool(num_blocks, true, make_policy("lru")), kv(block_size, pool) {}
  EngineResult run(const SchedulerConfig& cfg, std::vector<Request> reqs) {
    Engine e(cfg, kv, exec);
    e.set_observer(&obs);
    VectorSource src(std::move(reqs));
    EngineResult r = e.run(src);
    CHECK(e.scheduler().num_live() == 0);  // per-request state released at finish
    return r;
  }
};

constexpr TimeNs kStep = 5'000'000;
constexpr TimeNs kTok = 1'000;

}  // namespace

TEST_CASE("engine: one request's TTFT equals its prefill step time", "[engine]") {
  Rig rig(64, 16);
  const EngineResult r = rig.run({}, {make("a", 1'000, tokens(1, 100), 3)});
  const RequestRecord& a = rig.obs.of("a");
  CHECK(a.ttft() == kStep + 100 * kTok);
  CHECK(a.queueing() == 0);
  CHECK(a.e2e() == kStep + 100 * kTok + 2 * (kStep + kTok));  // then two decode steps
  CHECK(a.tpot() == Approx(static_cast<double>(kStep + kTok)));
  CHECK(a.max_itl == kStep + kTok);
  CHECK(a.output_tokens == 3);
  CHECK(a.prompt_tokens == 100);
  CHECK(r.steps == 3);
  CHECK(r.end_time == 1'000 + a.e2e());
}

TEST_CASE("engine: two requests sharing a prefix and arriving together share one step and its blocks", "[engine]") {
  Rig rig(64, 16);
  std::vector<int32_t> a = tokens(1, 64), b = tokens(1, 64);
  for (int i = 0; i < 8; ++i) {
    a.push_back(1000 + i);
    b.push_back(2000 + i);
  }
  const EngineResult r = rig.run({}, {make("a", 0, a, 2), make("b", 0, b, 2)});
  CHECK(rig.obs.of("a").hit_tokens == 0);
  CHECK(rig.obs.of("b").hit_tokens == 64);  // a's blocks, hashed when allocated in the same step
  REQUIRE(!rig.obs.steps.empty());
  CHECK(rig.obs.steps[0].num_seqs == 2);
  CHECK(rig.obs.steps[0].prefill_tokens == 72 + 8);
  CHECK(rig.obs.of("a").ttft() == kStep + 80 * kTok);
  CHECK(rig.obs.of("b").ttft() == kStep + 80 * kTok);
  CHECK(r.admitted_prompt_tokens == 144);
  CHECK(r.admitted_hit_tokens == 64);
  CHECK(r.prefix_cache.requests == 2);
  CHECK(r.prefix_cache.hits == 64);
}

TEST_CASE("engine: chunked prefill splits a long prompt across steps and TTFT spans them", "[engine]") {
  Rig rig(64, 16);
  SchedulerConfig cfg;
  cfg.max_num_batched_tokens = 64;
  rig.run(cfg, {make("long", 0, tokens(1, 200), 2)});
  std::vector<int64_t> prefill;
  for (const StepRecord& s : rig.obs.steps) prefill.push_back(s.prefill_tokens);
  CHECK(prefill == std::vector<int64_t>{64, 64, 64, 8, 0});
  CHECK(rig.obs.steps[4].decode_tokens == 1);
  CHECK(rig.obs.of("long").ttft() == 4 * kStep + 200 * kTok);
}

TEST_CASE("engine: a tiny pool forces preemptions and still finishes every request, leaving every block free",
          "[engine]") {
  Rig rig(20, 16);  // 19 usable blocks = 304 tokens
  std::vector<Request> reqs;
  for (int i = 0; i < 12; ++i) reqs.push_back(make("r" + std::to_string(i), i * 100, tokens(i * 1000, 40), 60));
  const EngineResult r = rig.run({}, reqs);
  CHECK(r.preemptions > 0);
  CHECK(r.arrived == 12);
  CHECK(r.finished == r.arrived);
  CHECK(r.refused == 0);
  CHECK(rig.pool.num_free() == rig.pool.num_usable());
  CHECK(rig.pool.check_invariants().empty());
  uint32_t preempted = 0;
  for (const auto& d : rig.obs.done) {
    CHECK(d.rec.output_tokens == 60);
    preempted += d.rec.preemptions;
  }
  CHECK(preempted == r.preemptions);
  CHECK(r.prefix_cache.preempted_requests > 0);
  CHECK(r.output_tokens == 12 * 60);
}

TEST_CASE("engine: a request that can never fit the pool is refused, counted and reported, not hung on",
          "[engine]") {
  Rig rig(9, 16);  // 8 usable blocks = 128 tokens
  const EngineResult r =
      rig.run({}, {make("ok", 0, tokens(1, 50), 4), make("huge", 10, tokens(500, 120), 20), make("ok2", 20, tokens(900, 30), 4)});
  CHECK(r.arrived == 3);
  CHECK(r.refused == 1);
  CHECK(r.finished == 2);
  REQUIRE(rig.obs.refused.size() == 1);
  CHECK(rig.obs.refused[0].rfind("huge: ", 0) == 0);
  CHECK(rig.pool.num_free() == rig.pool.num_usable());
}

TEST_CASE("engine: it idles between distant arrivals, and a late request waits for nobody", "[engine]") {
  Rig rig(64, 16);
  const TimeNs late = 10'000'000'000;
  const EngineResult r = rig.run({}, {make("a", 0, tokens(1, 10), 2), make("b", late, tokens(100, 10), 2)});
  CHECK(rig.obs.of("b").ttft() == kStep + 10 * kTok);
  CHECK(rig.obs.of("b").queueing() == 0);
  CHECK(r.steps == 4);
  CHECK(r.end_time == late + rig.obs.of("b").e2e());
}

TEST_CASE("engine: arrivals out of time order are bad input", "[engine]") {
  BlockPool pool(64, true, make_policy("lru"));
  KvCacheManager kv(16, pool);
  LinearExecutor exec;
  Engine e({}, kv, exec);
  VectorSource src({make("a", 100, tokens(1, 10), 1), make("b", 50, tokens(1, 10), 1)});
  CHECK_THROWS_AS(e.run(src), InputError);
}

TEST_CASE("engine: the same input gives the same result and event fingerprint; other timing another",
          "[engine][determinism]") {
  auto run = [](TimeNs extra) {
    class Exec final : public Executor {
     public:
      explicit Exec(TimeNs e) : e_(e) {}
      TimeNs step_time(const Batch& b) override { return 1'000'000 + e_ * static_cast<TimeNs>(b.seqs.size()); }
      TimeNs e_;
    } exec(extra);
    BlockPool pool(40, true, make_policy("lru"));
    KvCacheManager kv(16, pool);
    Engine e({}, kv, exec);
    std::vector<Request> reqs;
    for (int i = 0; i < 30; ++i) reqs.push_back(make("r" + std::to_string(i), i * 700'000, tokens((i % 3) * 64, 64 + i), 20));
    VectorSource src(reqs);
    return e.run(src);
  };
  const EngineResult a = run(50'000), b = run(50'000), c = run(60'000);
  CHECK(a.event_fingerprint == b.event_fingerprint);
  CHECK(a.events == b.events);
  CHECK(a.end_time == b.end_time);
  CHECK(a.steps == b.steps);
  CHECK(a.prefix_cache.hits == b.prefix_cache.hits);
  CHECK(a.event_fingerprint != c.event_fingerprint);
  CHECK(a.finished == 30);
}
