// The agentic-Mooncake reader's fast path (traces/agentic_scan.h) against
// its simdjson path: plain rows in any key order and spacing are taken by
// the scanner; the fixture, random rows and systematically mutated ones,
// read after rows that define request ids, give the same requests (ids,
// waits, sessions) or the same error (file, line, field) either way.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "test/support.h"
#include "test/traces/scan_test_util.h"
#include "traces/agentic_scan.h"
#include "traces/string_set.h"

using namespace prefixsim;
using namespace prefixsim::test;

namespace {

std::string pad_buf;  // padded()'s buffer

// Two rows whose ids the row under test may wait for.
const std::string kContext =
    "{\"request_id\": \"r0\", \"timestamp\": 0, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [1]}\n"
    "{\"request_id\": \"r1\", \"timestamp\": 0, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [2], "
    "\"wait_for\": [\"r0\"], \"delay\": 3}\n";

std::string random_row(std::mt19937_64& rng, bool longer) {
  std::vector<std::pair<std::string, std::string>> m;
  static const char* const ids[] = {"\"r2\"", "\"r2\"", "\"r2\"", "\"r0\"", "\"x\xc3\xa9\""};
  m.emplace_back("request_id", ids[rng() % 5]);
  if (rng() % 2) m.emplace_back("session_id", rng() % 2 ? "\"root\"" : "\"s-7\"");
  m.emplace_back("timestamp", random_decimal(rng, longer));
  const int64_t n = 1 + static_cast<int64_t>(rng() % 6);
  m.emplace_back("input_length", std::to_string(n * 512 - static_cast<int64_t>(rng() % 512)));
  const int64_t out = static_cast<int64_t>(rng() % 5);
  m.emplace_back("output_length", std::to_string(out));
  std::string list = "[" + ws(rng);
  for (int64_t k = 0; k < n; ++k) list += (k ? "," + ws(rng) : "") + random_uint(rng, 19);
  m.emplace_back("hash_ids", list + ws(rng) + "]");
  static const char* const waits[] = {"[\"r0\"]", "[\"r0\", \"r1\"]", "[]", "[ \"r1\" ]"};
  if (rng() % 2) m.emplace_back("wait_for", waits[rng() % 4]);
  if (rng() % 2) m.emplace_back(rng() % 4 ? "delay" : "delay_ms", random_decimal(rng, longer));
  if (rng() % 2) m.emplace_back("tool_wait_ms", random_decimal(rng, longer));
  if (rng() % 3 == 0) m.emplace_back("branches", rng() % 2 ? "[]" : "[\"c1\", \"c2\"]");
  if (rng() % 3 == 0) m.emplace_back("prefix_reset", rng() % 2 ? "true" : "false");
  if (rng() % 4 == 0) {
    std::string toks = "[";
    for (int64_t k = 0; k < out; ++k) toks += (k ? ", " : "") + random_uint(rng, 9);
    m.emplace_back("output_token_ids", toks + "]");
  }
  return object_of(m, rng);
}

}  // namespace

TEST_CASE("the agentic scanner takes plain rows in any key order and spacing, with simdjson's values",
          "[traces][agentic_scan]") {
  std::mt19937_64 rng(5);
  int taken = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::string line = random_row(rng, false);
    INFO(line);
    Request r;
    AgenticRow row;
    REQUIRE(scan_agentic_line(padded(line, pad_buf), r, row));
    const Outcome o = check_both_paths(make_agentic_mooncake_source, kContext + line + "\n");
    taken += o.error.empty();
  }
  CHECK(taken > 2000);  // the rest reuse r0 or time out of order: errors, alike
}

TEST_CASE("agentic rows read the same with and without the fast path, mutated or not", "[traces][agentic_scan]") {
  std::mt19937_64 rng(19);
  int accepted = 0, declined = 0;
  const int cases = prefixsim::test::sanitized_share(60000);  // 1/8 under the sanitizers
  for (int i = 0; i < cases; ++i) {
    std::string line = random_row(rng, true);
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) line = mutate(line, rng);
    Request r;
    AgenticRow row;
    (scan_agentic_line(padded(line, pad_buf), r, row) ? accepted : declined)++;
    check_both_paths(make_agentic_mooncake_source, kContext + line + "\n");
  }
  CHECK(accepted > cases / 6);
  CHECK(declined > cases / 6);
}

TEST_CASE("the agentic fixture reads the same with and without the fast path", "[traces][agentic_scan]") {
  const std::string text = read_file(data_path("traces/agentic_mooncake_small.jsonl"));
  const Outcome o = check_both_paths(make_agentic_mooncake_source, text);
  CHECK(o.error.empty());
  CHECK(o.requests.size() >= 3);
  check_each_deletion(make_agentic_mooncake_source, text);
}

TEST_CASE("the agentic scanner declines what it leaves to simdjson; both paths report it alike",
          "[traces][agentic_scan]") {
  const std::string head = R"({"request_id": "r2", "timestamp": 5, "input_length": 600, "output_length": 2, "hash_ids": [1, 2])";
  const char* const tails[] = {
      R"(, "priority": 3})",                       // a scheduling hint
      R"(, "tool_events": []})",                   // telemetry
      R"(, "x": 1})",                              // unknown
      R"(, "wait_for": ["nope"]})",                // not an earlier request
      R"(, "wait_for": [1]})",                     // not a string
      R"(, "wait_for": ["r0"], "delay": -1})",     // negative delay
      R"(, "delay": 1, "delay_ms": 2})",           // the delay twice
      R"(, "prefix_reset": 1})",                   // not a bool
      R"(, "branches": ["a", 2]})",                // not strings
      R"(, "output_token_ids": [1]})",             // disagrees with output_length
      R"(, "session_id": null})",                  // null
      R"(, "timestamp": 7})",                      // twice
  };
  for (const char* tail : tails) {
    const std::string line = head + tail;
    INFO(line);
    Request r;
    AgenticRow row;
    const bool taken = scan_agentic_line(padded(line, pad_buf), r, row);
    // The scanner takes the two it cannot judge alone (an unknown
    // wait_for id, output tokens of the wrong count); the reader declines
    // them to simdjson.
    CHECK(taken == (std::string(tail).find("nope") != std::string::npos ||
                    std::string(tail).find("output_token_ids") != std::string::npos));
    const Outcome o = check_both_paths(make_agentic_mooncake_source, kContext + line + "\n");
    const bool hint = std::string(tail).find("priority") != std::string::npos ||
                      std::string(tail).find("tool_events") != std::string::npos;
    CHECK(o.error.empty() == hint);  // hints are valid; the rest name line 3
    if (!hint) CHECK(o.error.rfind("mem.jsonl:3: ", 0) == 0);
  }
  // request_id reused, and empty: errors either way.
  check_both_paths(make_agentic_mooncake_source,
                   kContext + R"({"request_id": "r1", "timestamp": 5, "input_length": 600, "output_length": 2, "hash_ids": [1, 2]})" "\n");
  check_both_paths(make_agentic_mooncake_source,
                   kContext + R"({"request_id": "", "timestamp": 5, "input_length": 600, "output_length": 2, "hash_ids": [1, 2]})" "\n");
}

TEST_CASE("StringSet holds what std::unordered_set holds", "[traces][agentic_scan]") {
  std::mt19937_64 rng(31);
  prefixsim::StringSet set;
  std::unordered_set<std::string> want;
  for (int i = 0; i < 200000; ++i) {
    std::string id = (rng() % 2 ? "r" : "request-") + std::to_string(rng() % 50000);
    if (rng() % 100 == 0) id.clear();
    if (rng() % 3) {
      INFO(id);
      REQUIRE(set.insert(id) == want.insert(id).second);
    } else {
      REQUIRE(set.contains(id) == (want.count(id) > 0));
    }
  }
  CHECK(set.size() == want.size());
}
