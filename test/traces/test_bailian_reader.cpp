// The Qwen-Bailian reader (traces/bailian_format.cpp) on a fixture written
// from the dataset's README: fields, conversations, detection, strictness,
// and hit rates computed by hand, chained (as vLLM caches) and not.
//
// Fixture (16-token blocks, one output token each, so every request caches
// exactly its prompt blocks):
//   chat 1  t=0    [1,2,3]    48 tokens
//   chat 2  t=1    [6,9]      32 tokens
//   chat 3  t=2    [6,2,3,4]  64 tokens, turn 2 of chat 2
//   chat 4  t=3.5  [1,2,3,5]  64 tokens, turn 2 of chat 1
// A lookup may hit floor((prompt - 1) / 16) blocks. Chained, chat 3 hits
// [6] only (its block "2" follows 6, not 1): 16 tokens; chat 4 hits
// [1],[1,2],[1,2,3]: 48. Ideal = 64 / 208. Taken as bare content ids, chat 3
// would also "hit" ids 2 and 3 (computed after 1, another prefix): 96 / 208.
// LRU on 5 blocks (4 usable), request by request, vLLM's free order:
//   chat 1 caches 3 blocks; chat 2 evicts the unused block and [1,2,3];
//   chat 3 hits [6] and evicts [1,2],[1],[6,9]; chat 4 finds nothing: 16 / 208.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "policies/registry.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/ideal_hit.h"
#include "test/support.h"
#include "test/traces/trace_test_util.h"

namespace test_bailian_reader {

using namespace prefixsim;
using namespace prefixsim::test;

const std::string kFixture = data_path("traces/bailian_small.jsonl");

TEST_CASE("a Bailian trace is detected by its keys and read field by field", "[traces][bailian]") {
  auto src = open_trace(kFixture, {});
  CHECK(src->format() == "bailian");
  const auto reqs = read_all(kFixture);
  REQUIRE(reqs.size() == 4);
  CHECK(reqs[0].id == "1");
  CHECK(reqs[2].id == "3");
  CHECK(reqs[2].arrival == 2'000'000'000);
  CHECK(reqs[3].arrival == 3'500'000'000);
  CHECK(reqs[2].hash_ids == std::vector<uint64_t>{6, 2, 3, 4});
  CHECK(reqs[2].trace_block_size == 16);
  CHECK(reqs[2].prompt_len == 64);
  CHECK(reqs[2].output_len == 1);
  // Conversations follow parent_chat_id to their first chat.
  CHECK(reqs[0].session == "1");
  CHECK(reqs[1].session == "2");
  CHECK(reqs[2].session == "2");
  CHECK(reqs[3].session == "1");
}

TEST_CASE("Bailian ids are chained along the prefix: the hand-computed ideal and LRU hit rates",
          "[traces][bailian][hit-rate]") {
  {
    auto src = open_trace(kFixture, {});
    IdealHitSource ideal(*src, 16, false);
    Request r;
    while (ideal.next(r)) {
    }
    CHECK(ideal.hit_rate() == Approx(64.0 / 208));
  }
  for (auto [blocks, want] : {std::pair{int64_t{1000}, 64.0 / 208}, std::pair{int64_t{5}, 16.0 / 208}}) {
    INFO(blocks << " blocks");
    auto src = open_trace(kFixture, {});
    const CacheReplayResult r = run_cache_replay(*src, 16, blocks, make_policy("lru"), true);
    CHECK(r.prompt_tokens == 208);
    CHECK(r.hit_rate == Approx(want));
  }
  // Bare content ids, unchained (an independent count): an over-statement.
  std::set<uint64_t> seen;
  int64_t hits = 0, prompt = 0;
  for (const Request& q : read_all(kFixture)) {
    const size_t max_hit = static_cast<size_t>((q.prompt_len - 1) / 16);
    for (size_t i = 0; i < max_hit && seen.count(q.hash_ids[i]); ++i) hits += 16;
    seen.insert(q.hash_ids.begin(), q.hash_ids.end());
    prompt += q.prompt_len;
  }
  CHECK(static_cast<double>(hits) / static_cast<double>(prompt) == Approx(96.0 / 208));
}

TEST_CASE("a bad Bailian line is an error naming file, line and field", "[traces][bailian][errors]") {
  const std::string dir = temp_dir("bailian-bad");
  const std::string good =
      R"({"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 20, "output_length": 3, "type": "text", "turn": 1, "hash_ids": [7, 8]})";
  struct Case {
    const char* what;
    std::string line2;
    const char* expect;
  };
  // Line 2 is chat 2 (a repeated chat_id is an error of its own).
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find("\"chat_id\": 1"), 12, "\"chat_id\": 2");
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<Case> cases = {
      {"unknown field", with("\"turn\": 1", "\"turns\": 1"), "unknown field \"turns\""},
      {"duplicate field", with("\"turn\": 1", "\"turn\": 1, \"turn\": 2"), "field \"turn\" appears twice"},
      {"missing chat id", with("\"chat_id\": 2, ", ""), "missing field \"chat_id\""},
      {"bad type", with("\"text\"", "\"video\""), "field \"type\": 'video'"},
      {"own parent", with("\"parent_chat_id\": -1", "\"parent_chat_id\": 2"), "its own parent"},
      {"repeated chat id", with("\"chat_id\": 2", "\"chat_id\": 1"), "field \"chat_id\": 1 appears on an earlier line too"},
      {"ids and length disagree", with("[7, 8]", "[7]"), "hash_ids"},
      {"time goes back", with("\"timestamp\": 0.5", "\"timestamp\": 0.1"), "timestamp"},
      {"empty ids", with("[7, 8]", "[]"), "field \"hash_ids\" is empty"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string path = dir + "/t.jsonl";
    std::ofstream(path) << good << "\n" << c.line2 << "\n";
    try {
      read_all(path);
      FAIL("no error");
    } catch (const InputError& e) {
      const std::string msg = e.what();
      CHECK(msg.find("t.jsonl:2") != std::string::npos);
      CHECK(msg.find(c.expect) != std::string::npos);
    }
  }
}

}  // namespace test_bailian_reader
