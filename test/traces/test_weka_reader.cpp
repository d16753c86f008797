// WEKA / SemiAnalysis coding-agent traces: kv-cache-tester conversations
// published one per line (test/data/traces/weka_small.jsonl, written after
// kv-cache-tester's docs/trace_replay_tester.md and the fields of aiperf's
// WEKA loader): one hash scope per line, subagents in their parent's scope,
// nested times on the parent's clock.
//
// The fixture (64-token ids, engine blocks of 16; conversation b starts at a
// seeded Poisson time, and shares nothing with a):
//   a#0  t 0    [0 1 2]    192 tokens   0
//   a#1  t 5.5  [0 1]      128          (0 1) = 8 blocks, capped at floor(127/16) = 7 -> 112
//   a#2  t 7    [0 1 3]    192          (0 1) = 8 blocks -> 128 (3 is new)
//   a#3  t 10   [0 1 3 4]  256          (0 1 3) = 12 blocks -> 192
//   b#0  t 0    [0 1 2]    192          its own scope: 0
//   b#1  t 2    [0 1 2 5]  256          (0 1 2) -> 192
// (a#1 and a#2 are a subagent's, spawned at 5 s: their times 5.5 and 7 are
// on the parent's clock.) Ideal hit rate 624 / 1216. Reading the nested
// times as relative (5 + 5.5, 5 + 7) would put a#2 after a#3, which then
// hits only (0 1): 608 / 1216.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>

#include "sim/base/error.h"
#include "sim/engine/ideal_hit.h"
#include "test/support.h"
#include "test/traces/trace_test_util.h"

namespace test_weka_reader {

using namespace prefixsim;
using namespace prefixsim::test;

const std::string kFixture = "traces/weka_small.jsonl";

std::map<std::string, Request> by_id(const std::vector<Request>& reqs) {
  std::map<std::string, Request> m;
  for (const Request& r : reqs) m[r.id] = r;
  return m;
}

TEST_CASE("a JSONL of kv-cache-tester conversations reads one conversation per line", "[traces][weka]") {
  CHECK(open_trace(data_path(kFixture), {})->format() == "kvcache-tester");
  const auto reqs = read_all(data_path(kFixture));
  REQUIRE(reqs.size() == 6);
  for (size_t i = 1; i < reqs.size(); ++i) CHECK(reqs[i - 1].arrival <= reqs[i].arrival);
  const auto m = by_id(reqs);
  REQUIRE(m.count("weka-a#3"));
  REQUIRE(m.count("weka-b#1"));
  CHECK(m.at("weka-a#0").session == "weka_small.jsonl:1");
  CHECK(m.at("weka-b#0").session == "weka_small.jsonl:2");
  CHECK(m.at("weka-a#0").trace_block_size == 64);
  CHECK(m.at("weka-a#3").prompt_len == 256);
  // The second conversation starts later, at the seeded Poisson time, with its offsets kept.
  CHECK(m.at("weka-b#0").arrival > 0);
  CHECK(m.at("weka-b#1").arrival - m.at("weka-b#0").arrival == 2'000'000'000);
}

TEST_CASE("a WEKA subagent's nested times are on the parent's clock when none precedes the spawn",
          "[traces][weka]") {
  const auto m = by_id(read_all(data_path(kFixture)));
  CHECK(m.at("weka-a#1").arrival == 5'500'000'000);  // not 5 + 5.5 s
  CHECK(m.at("weka-a#2").arrival == 7'000'000'000);
  CHECK(m.at("weka-a#3").arrival == 10'000'000'000);
  // kv-cache-tester's own files keep relative nested times (the first is 0).
  const auto kv = by_id(read_all(data_path("traces/kvcache")));
  CHECK(kv.at("trace_0000#2").arrival == 12'500'000'000);
}

TEST_CASE("each line is its own hash scope, and a subagent shares its parent's", "[traces][weka]") {
  const auto m = by_id(read_all(data_path(kFixture)));
  const auto& a0 = m.at("weka-a#0").hash_ids;
  const auto& a1 = m.at("weka-a#1").hash_ids;  // the subagent's
  const auto& b0 = m.at("weka-b#0").hash_ids;
  CHECK(a1[0] == a0[0]);
  CHECK(a1[1] == a0[1]);
  for (uint64_t x : a0)
    for (uint64_t y : b0) CHECK(x != y);  // same local ids, other line
}

TEST_CASE("the WEKA fixture's ideal hit rate is the hand-computed 624/1216", "[traces][weka]") {
  auto src = open_trace(data_path(kFixture), {});
  IdealHitSource ideal(*src, 16);
  Request r;
  while (ideal.next(r)) {
  }
  REQUIRE(ideal.valid());
  CHECK(ideal.hit_rate() == Approx(624.0 / 1216.0).epsilon(1e-12));
}

TEST_CASE("a bad line of a conversation JSONL is reported with its line number", "[traces][weka][errors]") {
  const std::string good = read_file(data_path(kFixture));
  const std::string first = good.substr(0, good.find('\n') + 1);
  struct Case {
    std::string line2;
    const char* want;
  };
  const std::vector<Case> cases = {
      {R"({"id":"x","block_size":64,"requests":[{"t":0,"in":128,"out":1,"hash_ids":[0]}]})", "requests[0].hash_ids"},
      {R"({"id":"x","block_size":64,"requests":[{"t":0,"in":128,"out":1,"hash_ids":[0,1]},)", "invalid JSON"},
      {R"({"id":"x","hash_id_scope":"galactic","requests":[]})", "hash_id_scope"},
      {R"({"id":"x","requests":[{"t":1,"type":"subagent","requests":[{"t":-2,"in":64,"out":1,"hash_ids":[0]}]}]})",
       "requests[0].requests[0].t"},
      {R"({"id":"x","requests":[{"t":1,"type":"subagent"}]})", "requests[0].requests"},
  };
  const std::string dir = temp_dir("weka-bad");
  for (const Case& c : cases) {
    INFO(c.line2);
    const std::string path = dir + "/bad.jsonl";
    std::ofstream(path) << first << c.line2 << "\n";
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

}  // namespace test_weka_reader
