// Dynamo's agentic Mooncake rows (test/data/traces/agentic_mooncake_small.jsonl,
// written after the AgenticMooncakeRow schema of ai-dynamo/dynamo): the
// reader, and the engine honouring wait_for + delay + tool_wait_ms.
//
// The fixture (512-token ids; rows in recorded order):
//   r1  t 0     no deps                            [1 2]      1024 tokens
//   x1  t 60    no deps                            [9]         512
//   c1  t 100   after r1, delay 5 + tool 10 ms     [1 3]      1024
//   r2  t 150   after r1, tool 50 ms               [1 2 4]    1536
//   r3  t 400   after r2 and c1, tool 30 ms        [1 2 4 5]  2048
// Every request has 2 output tokens. With a step of exactly 10 ms, a request
// alone runs a prefill step and a decode step: it finishes 20 ms after it
// arrives. By hand:
//   r1 arrives 0, finishes 20
//   c1 arrives 20 + 15 = 35, finishes 55
//   x1 arrives 60 (its recorded time), steps 60-70, 70-80: finishes 80
//   r2 arrives 20 + 50 = 70 (not 150), joins the 70-80 step: first token 80, finishes 90
//   r3 arrives max(90, 55) + 30 = 120 (not 400), finishes 140
// Dependency order r1, c1, x1, r2, r3 (file order: r1, x1, c1, r2, r3).
// Hits at block size 16: c1 (1) = 512, r2 (1 2) = 1024, r3 (1 2 4) = 1536:
// 3072 / 6144 = 0.5, in engine and cache mode alike.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>

#include "policies/registry.h"
#include "sim/base/error.h"
#include "sim/engine/engine.h"
#include "sim/engine/ideal_hit.h"
#include "test/support.h"
#include "test/traces/trace_test_util.h"

using namespace prefixsim;
using namespace prefixsim::test;

namespace {
const std::string kFixture = "traces/agentic_mooncake_small.jsonl";
constexpr TimeNs kMs = 1'000'000;

class TenMsSteps final : public Executor {
 public:
  TimeNs step_time(const Batch&) override { return 10 * kMs; }
};

class Timeline final : public EngineObserver {
 public:
  void on_request_finished(const RequestRecord& r) override {
    order.push_back(r.request->id);
    arrival[r.request->id] = r.arrival;
    first_token[r.request->id] = r.first_token;
    finish[r.request->id] = r.finish;
  }
  std::vector<std::string> order;  // by finish
  std::map<std::string, TimeNs> arrival, first_token, finish;
};
}  // namespace

TEST_CASE("the agentic Mooncake reader takes ids, sessions and the waits of each row", "[traces][agentic]") {
  CHECK(open_trace(data_path(kFixture), {})->format() == "agentic-mooncake");
  const auto reqs = read_all(data_path(kFixture));
  REQUIRE(reqs.size() == 5);
  CHECK(reqs[0].id == "r1");
  CHECK(reqs[0].session == "root");
  CHECK(reqs[0].wait_for.empty());
  CHECK(reqs[0].trace_block_size == 512);
  CHECK(reqs[2].id == "c1");
  CHECK(reqs[2].arrival == 100 * kMs);  // recorded; the engine replaces it
  CHECK(reqs[2].wait_for == std::vector<std::string>{"r1"});
  CHECK(reqs[2].wait_after == 15 * kMs);  // delay 5 + tool_wait_ms 10
  CHECK(reqs[4].wait_for == std::vector<std::string>{"r2", "c1"});
  CHECK(reqs[4].wait_after == 30 * kMs);
  for (const Request& r : reqs) CHECK(r.awaitable);
}

namespace {
// The fixture through one engine (10 ms steps) with an LRU pool of `blocks`.
EngineResult run_fixture(int32_t blocks, Timeline& t) {
  BlockPool pool(blocks, true, make_policy("lru"));
  KvCacheManager kv(16, pool);
  TenMsSteps exec;
  Engine engine({}, kv, exec);
  engine.set_observer(&t);
  auto src = open_trace(data_path(kFixture), {});
  return engine.run(*src);
}
}  // namespace

TEST_CASE("the engine starts a request when its dependencies finish, plus its delay and tool wait",
          "[traces][agentic][engine]") {
  Timeline t;
  const EngineResult res = run_fixture(2000, t);
  CHECK(res.finished == 5);
  CHECK(t.order == std::vector<std::string>{"r1", "c1", "x1", "r2", "r3"});
  CHECK(t.arrival["r1"] == 0);
  CHECK(t.finish["r1"] == 20 * kMs);
  CHECK(t.arrival["c1"] == 35 * kMs);
  CHECK(t.finish["c1"] == 55 * kMs);
  CHECK(t.arrival["x1"] == 60 * kMs);
  CHECK(t.finish["x1"] == 80 * kMs);
  CHECK(t.arrival["r2"] == 70 * kMs);
  CHECK(t.first_token["r2"] == 80 * kMs);
  CHECK(t.finish["r2"] == 90 * kMs);
  CHECK(t.arrival["r3"] == 120 * kMs);
  CHECK(t.finish["r3"] == 140 * kMs);
  CHECK(res.admitted_hit_tokens == 3072);
  CHECK(res.admitted_prompt_tokens == 6144);
}

TEST_CASE("a refused request releases the requests waiting for it", "[traces][agentic][engine]") {
  // A pool of 70 blocks (69 usable) cannot hold r2 (1536 + 1 tokens = 97
  // blocks) nor r3: both are refused at arrival, and r3, which waits for r2,
  // still arrives (at r2's refusal + 30 ms) instead of waiting forever.
  Timeline t;
  const EngineResult res = run_fixture(70, t);
  CHECK(res.refused == 2);
  CHECK(res.finished == 3);
  CHECK(res.arrived == 5);
}

TEST_CASE("the agentic fixture's ideal hit rate is 3072/6144", "[traces][agentic]") {
  auto src = open_trace(data_path(kFixture), {});
  IdealHitSource ideal(*src, 16);
  Request r;
  while (ideal.next(r)) {
  }
  CHECK(ideal.hit_rate() == Approx(0.5).epsilon(1e-12));
}

TEST_CASE("bad agentic rows are rejected with FILE:LINE and the field", "[traces][agentic][errors]") {
  const std::string good = read_file(data_path(kFixture));
  const std::string head = R"({"request_id": "z", "timestamp": 70, "input_length": 512, "output_length": 1, "hash_ids": [7])";
  struct Case {
    std::string line2;
    const char* want;
  };
  const std::vector<Case> cases = {
      {head + R"(, "wait_for": ["nobody"]})", "wait_for[0]"},
      {head + R"(, "wait_for": ["z"]})", "wait_for[0]"},  // itself: not an earlier line
      {R"({"request_id": "r1", "timestamp": 70, "input_length": 512, "output_length": 1, "hash_ids": [7]})", "request_id"},
      {head + R"(, "wait_for": "r1"})", "wait_for"},
      {head + R"(, "tool_wait_ms": -4})", "tool_wait_ms"},
      {head + R"(, "prefix_reset": 1})", "prefix_reset"},
      {head + R"(, "branches": [3]})", "branches[0]"},
      {head + R"(, "output_token_ids": [1, 2]})", "output_token_ids"},
      {head + R"(, "mystery": 1})", "mystery"},
      {R"({"timestamp": 70, "input_length": 512, "output_length": 1, "hash_ids": [7]})", "request_id"},
  };
  const std::string dir = temp_dir("agentic-bad");
  for (const Case& c : cases) {
    INFO(c.line2);
    const std::string path = dir + "/bad.jsonl";
    std::ofstream(path) << with_line(good, 2, c.line2);
    try {
      read_all(path);
      FAIL("no error");
    } catch (const InputError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.rfind(path + ":2: ", 0) == 0);
      CHECK(msg.find(c.want) != std::string::npos);
    }
  }
}
