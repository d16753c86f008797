// The kv-cache-tester reader's fast path (traces/kvcache_scan.h) against its
// simdjson path: plain conversations in any key order and spacing are taken
// by the scanner; random conversations, WEKA-shaped lines with subagents and
// metadata, block sizes against --trace-block-size, and systematically
// mutated lines give the same requests (ids namespaced per line, times
// sorted, sessions) or the same error either way.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "test/support.h"
#include "test/traces/scan_test_util.h"
#include "traces/kvcache_scan.h"
#include "traces/kvcache_tester.h"

namespace test_kvcache_scan {

using namespace prefixsim;
using namespace prefixsim::test;

std::string pad_buf;  // padded()'s buffer

// MakeSource's shape (the other readers take their path by value).
std::unique_ptr<RequestSource> make_kvcache(std::string path, std::unique_ptr<LineReader> lines,
                                            const TraceOptions& opts) {
  return open_kvcache_jsonl(path, std::move(lines), opts);
}
const MakeSource kMake = make_kvcache;

// One plain request: times out of order sometimes (the reader sorts them),
// ids covering the full blocks or all of them.
std::string random_request(std::mt19937_64& rng, int64_t bs, bool longer) {
  std::vector<std::pair<std::string, std::string>> m;
  m.emplace_back("t", random_decimal(rng, longer));
  const int64_t in = 1 + static_cast<int64_t>(rng() % 700);
  m.emplace_back("in", std::to_string(in));
  m.emplace_back("out", std::to_string(rng() % 300));
  if (rng() % 3) m.emplace_back("type", rng() % 2 ? "\"n\"" : "\"s\"");
  const int64_t n = rng() % 4 == 0 ? (in + bs - 1) / bs : in / bs;
  std::string list = "[" + ws(rng);
  for (int64_t k = 0; k < n; ++k) list += (k ? "," + ws(rng) : "") + std::to_string(rng() % 6);
  m.emplace_back("hash_ids", list + ws(rng) + "]");
  return object_of(m, rng);
}

std::string random_conversation(std::mt19937_64& rng, bool longer) {
  const int64_t bs = rng() % 2 ? 64 : 16;
  std::vector<std::pair<std::string, std::string>> m;
  if (rng() % 3) m.emplace_back("id", "\"conv-" + std::to_string(rng() % 5) + "\"");
  if (rng() % 4) m.emplace_back("block_size", std::to_string(bs));
  if (rng() % 3) m.emplace_back("hash_id_scope", rng() % 2 ? "\"local\"" : "\"global\"");
  std::string reqs = "[" + ws(rng);
  const int n = static_cast<int>(rng() % 5);
  for (int k = 0; k < n; ++k) reqs += (k ? "," + ws(rng) : "") + random_request(rng, bs, longer);
  m.emplace_back("requests", reqs + ws(rng) + "]");
  return object_of(m, rng);
}

TEST_CASE("the kv-cache-tester scanner takes plain conversations in any key order and spacing",
          "[traces][kvcache_scan]") {
  std::mt19937_64 rng(41);
  for (int i = 0; i < sanitized_share(2000); ++i) {  // 1/8 under the sanitizers
    const std::string line = random_conversation(rng, false);
    INFO(line);
    KvScanConversation conv;
    CHECK(scan_kvcache_conversation(padded(line, pad_buf), conv));
    // Two lines: two hash scopes and two Poisson starts.
    check_both_paths(kMake, line + "\n" + random_conversation(rng, true) + "\n");
  }
}

TEST_CASE("the kv-cache-tester scanner declines subagents, metadata and escapes, which simdjson then reads",
          "[traces][kvcache_scan]") {
  const char* const lines[] = {
      R"({"id":"a","requests":[{"t":0,"type":"subagent","requests":[{"t":1,"in":64,"out":1,"hash_ids":[1]}]}]})",
      R"({"id":"a","models":["m"],"requests":[{"t":0,"in":64,"out":1,"hash_ids":[1]}]})",
      R"({"id":"a\u0062","requests":[{"t":0,"in":64,"out":1,"hash_ids":[1]}]})",
      R"({"id":"a","requests":[{"t":0,"in":64,"out":1,"hash_ids":[1],"model":"x"}]})",
      R"({"id":"a","id":"b","requests":[]})",
      R"({"id":"a","requests":[{"t":1e2,"in":64,"out":1,"hash_ids":[1]}]})",
      R"({"requests":[{"t":0,"in":64,"out":1}]})",
  };
  for (const char* line : lines) {
    INFO(line);
    KvScanConversation conv;
    CHECK_FALSE(scan_kvcache_conversation(padded(line, pad_buf), conv));
    check_both_paths(kMake, std::string(line) + "\n");
  }
}

TEST_CASE("what the scanner takes but the reader's checks refuse goes to simdjson and its message",
          "[traces][kvcache_scan]") {
  // Ids that do not match "in"'s blocks, an id past the local scope's 2^40,
  // a block size against --trace-block-size: each the simdjson path's error.
  const std::string ids = R"({"block_size":64,"requests":[{"t":0,"in":200,"out":1,"hash_ids":[1]}]})";
  CHECK(check_both_paths(kMake, ids + "\n").error.find("has 1 ids but \"in\" = 200") != std::string::npos);
  const std::string big = R"({"requests":[{"t":0,"in":64,"out":1,"hash_ids":[1099511627776]}]})";
  CHECK(check_both_paths(kMake, big + "\n").error.find("too large to namespace") != std::string::npos);
  TraceOptions o;
  o.trace_block_size = 16;
  const std::string bs = R"({"block_size":64,"requests":[{"t":0,"in":64,"out":1,"hash_ids":[1]}]})";
  CHECK(check_both_paths(kMake, bs + "\n", o).error.find("--trace-block-size is 16") != std::string::npos);
}

TEST_CASE("mutated kv-cache-tester lines give the same requests or the same error either way",
          "[traces][kvcache_scan]") {
  std::mt19937_64 rng(43);
  for (int i = 0; i < sanitized_share(3000); ++i) {
    std::string line = random_conversation(rng, i % 2 == 0);
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) line = mutate(line, rng);
    check_both_paths(kMake, line + "\n");
  }
  check_each_deletion(kMake,
                      R"({"id": "c", "block_size": 16, "hash_id_scope": "local", "requests": [{"t": 0.5, "type": "n", )"
                      R"("in": 40, "out": 3, "hash_ids": [7, 8]}, {"t": 0, "in": 20, "out": 0, "hash_ids": [7]}]})"
                      "\n");
}

// A conversation whose requests re-send the one before's ids and add some
// (a chat), sometimes editing one midway, with tails and scopes varied.
std::string growing_conversation(std::mt19937_64& rng, int requests) {
  const int64_t bs = 16;
  std::vector<uint64_t> ids;
  std::string line = std::string("{\"block_size\":16,\"hash_id_scope\":\"") + (rng() % 4 ? "local" : "global") +
                     "\",\"requests\":[";
  for (int k = 0; k < requests; ++k) {
    for (int add = 1 + static_cast<int>(rng() % 5); add > 0; --add) ids.push_back(rng() % 1000);
    if (ids.size() > 2 && rng() % 5 == 0) ids[rng() % ids.size()] = rng() % 1000;  // an edit midway
    const int64_t in = static_cast<int64_t>(ids.size()) * bs - static_cast<int64_t>(rng() % 2) * 5;  // a tail or not
    std::string list;
    const size_t n = static_cast<size_t>(in / bs) + (rng() % 3 == 0 && in % bs ? 1 : 0);
    for (size_t i = 0; i < n; ++i) list += (i ? "," : "") + std::to_string(ids[i]);
    line += (k ? ",{\"t\":" : "{\"t\":") + std::to_string(k * 3 + static_cast<int>(rng() % 4)) +
            ",\"in\":" + std::to_string(in) + ",\"out\":" + std::to_string(rng() % 50) + ",\"hash_ids\":[" + list +
            "]}";
  }
  return line + "]}";
}

TEST_CASE("a long JSONL of overlapping conversations reads the same through either path", "[traces][kvcache_scan]") {
  // Many conversations alive at once, finished ones' objects reused for the
  // next (kvcache_tester.cpp recycle()), every 7th read by simdjson (a
  // subagent), some large enough not to be reused: the fast path's delta
  // encoding, taken from the scanned ids, must give the DOM path's requests.
  std::mt19937_64 rng(47);
  std::string text;
  for (int i = 0; i < sanitized_share(400); ++i) {
    if (i % 7 == 3)
      text += R"({"id":"s","requests":[{"t":0,"type":"subagent","requests":[{"t":1,"in":256,"out":1,"hash_ids":[1,2,3,4]}]},)"
              R"({"t":2,"in":300,"out":1,"hash_ids":[1,2,3,4,5]}]})";
    else
      text += growing_conversation(rng, i % 50 == 0 ? 1200 : 1 + static_cast<int>(rng() % 8));
    text += "\n";
  }
  TraceOptions o;
  o.conversation_rate = 2.0;  // conversations span ~3 s a request: dozens overlap
  const Outcome both = check_both_paths(kMake, text, o);
  INFO(both.error);
  CHECK(both.requests.size() > 1000);
}

TEST_CASE("the WEKA fixture reads the same through either path", "[traces][kvcache_scan]") {
  std::string text;
  {
    std::ifstream in(data_path("traces/weka_small.jsonl"));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  REQUIRE_FALSE(text.empty());
  CHECK(check_both_paths(kMake, text).requests.size() == 6);
}

}  // namespace test_kvcache_scan
