// The Bailian reader's fast path (traces/bailian_scan.h) against its
// simdjson path: plain rows in any key order and spacing are taken by the
// scanner; the fixture, random rows and systematically mutated ones, read
// after rows that start conversations, give the same requests (sessions
// followed through parent_chat_id) or the same error either way.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "test/support.h"
#include "test/traces/scan_test_util.h"
#include "traces/bailian_scan.h"

namespace test_bailian_scan {

using namespace prefixsim;
using namespace prefixsim::test;

std::string pad_buf;  // padded()'s buffer

const std::string kContext =
    "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0.0, \"input_length\": 32, \"output_length\": 1, "
    "\"type\": \"text\", \"turn\": 1, \"hash_ids\": [1, 2]}\n"
    "{\"chat_id\": 2, \"parent_chat_id\": 1, \"timestamp\": 0.0, \"input_length\": 48, \"output_length\": 1, "
    "\"type\": \"text\", \"turn\": 2, \"hash_ids\": [1, 2, 3]}\n";

std::string random_row(std::mt19937_64& rng, bool longer) {
  std::vector<std::pair<std::string, std::string>> m;
  static const char* const chats[] = {"3", "3", "3", "2", "9223372036854775807"};
  static const char* const parents[] = {"-1", "1", "2", "7", "3"};
  m.emplace_back("chat_id", chats[rng() % 5]);
  m.emplace_back("parent_chat_id", parents[rng() % 5]);
  m.emplace_back("timestamp", random_decimal(rng, longer));
  const int64_t n = 1 + static_cast<int64_t>(rng() % 8);
  m.emplace_back("input_length", std::to_string(n * 16 - static_cast<int64_t>(rng() % 16)));
  m.emplace_back("output_length", std::to_string(rng() % 300));
  static const char* const types[] = {"\"text\"", "\"search\"", "\"image\"", "\"file\""};
  if (rng() % 4) m.emplace_back("type", types[rng() % 4]);
  if (rng() % 4) m.emplace_back("turn", std::to_string(1 + rng() % 5));
  std::string list = "[" + ws(rng);
  for (int64_t k = 0; k < n; ++k) list += (k ? "," + ws(rng) : "") + random_uint(rng, 19);
  m.emplace_back("hash_ids", list + ws(rng) + "]");
  return object_of(m, rng);
}

TEST_CASE("the Bailian scanner takes plain rows in any key order and spacing, with simdjson's values",
          "[traces][bailian_scan]") {
  std::mt19937_64 rng(23);
  for (int i = 0; i < 5000; ++i) {
    const std::string line = random_row(rng, false);
    INFO(line);
    Request r;
    BailianRow row;
    const bool taken = scan_bailian_line(padded(line, pad_buf), r, row);
    REQUIRE(taken == (row.chat != row.parent));
    check_both_paths(make_bailian_source, kContext + line + "\n");
  }
}

TEST_CASE("Bailian rows read the same with and without the fast path, mutated or not", "[traces][bailian_scan]") {
  std::mt19937_64 rng(29);
  int accepted = 0, declined = 0;
  const int cases = prefixsim::test::sanitized_share(60000);  // 1/8 under the sanitizers
  for (int i = 0; i < cases; ++i) {
    std::string line = random_row(rng, true);
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) line = mutate(line, rng);
    Request r;
    BailianRow row;
    (scan_bailian_line(padded(line, pad_buf), r, row) ? accepted : declined)++;
    check_both_paths(make_bailian_source, kContext + line + "\n");
  }
  CHECK(accepted > cases / 6);
  CHECK(declined > cases / 6);
}

TEST_CASE("the Bailian fixture reads the same with and without the fast path", "[traces][bailian_scan]") {
  const std::string text = read_file(data_path("traces/bailian_small.jsonl"));
  const Outcome o = check_both_paths(make_bailian_source, text);
  CHECK(o.error.empty());
  CHECK(o.requests.size() >= 3);
  check_each_deletion(make_bailian_source, text);
}

TEST_CASE("the Bailian scanner declines what it leaves to simdjson; both paths report it alike",
          "[traces][bailian_scan]") {
  const char* const lines[] = {
      R"({"chat_id": 3, "parent_chat_id": 3, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [1]})",
      R"({"chat_id": 3, "parent_chat_id": -2, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [1]})",
      R"({"chat_id": 3, "parent_chat_id": -0, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [1]})",
      R"({"chat_id": 9223372036854775808, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [1]})",
      R"({"chat_id": 3, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": []})",
      R"({"chat_id": 3, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 1, "type": "video", "hash_ids": [1]})",
      R"({"chat_id": 3, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 1, "turn": 0, "hash_ids": [1]})",
      R"({"chat_id": 3, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [1]})",
      R"({"chat_id": 3, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [1], "x": 0})",
      R"({"chat_id": 3, "parent_chat_id": -1, "timestamp": 1.5e0, "input_length": 16, "output_length": 1, "hash_ids": [1]})",
      R"({"chat_id": 3, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [1, 2]})",
  };
  for (const char* line : lines) {
    INFO(line);
    Request r;
    BailianRow row;
    // The last: ids that do not cover input_length, which only
    // Request::validate sees (after either path).
    CHECK(scan_bailian_line(padded(line, pad_buf), r, row) == (line == lines[std::size(lines) - 1]));
    check_both_paths(make_bailian_source, kContext + line + "\n");
  }
}

}  // namespace test_bailian_scan
