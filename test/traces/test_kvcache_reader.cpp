// kv-cache-tester conversations: folder, tar archives and a single file;
// per-file namespacing of the local hash ids; seeded Poisson conversation
// starts with recorded offsets kept. The real claude-code archive is read in
// test_kvcache_reader_real.cpp (suite 'real').
#include <catch2/catch.hpp>
#include <map>

#include "test/support.h"
#include "test/traces/trace_test_util.h"

using namespace prefixsim;
using namespace prefixsim::test;

namespace {
std::map<std::string, Request> by_id(const std::vector<Request>& reqs) {
  std::map<std::string, Request> m;
  for (const Request& r : reqs) m[r.id] = r;
  return m;
}
}  // namespace

TEST_CASE("a kv-cache-tester folder yields every request, subagents included, in arrival order", "[traces][kvcache]") {
  const auto reqs = read_all(data_path("traces/kvcache"));
  REQUIRE(reqs.size() == 6);  // 3 + 1 nested in trace_0000, 2 in trace_0001
  for (size_t i = 1; i < reqs.size(); ++i) CHECK(reqs[i - 1].arrival <= reqs[i].arrival);
  const auto m = by_id(reqs);
  REQUIRE(m.count("trace_0000#0"));
  REQUIRE(m.count("trace_0000#2"));  // the subagent's nested request
  const Request& first = m.at("trace_0000#0");
  CHECK(first.session == "trace_0000.json");
  CHECK(first.trace_block_size == 64);
  CHECK(first.prompt_len == 130);
  CHECK(first.output_len == 5);
  // The first conversation starts at 0; the others keep their offsets from it.
  CHECK(first.arrival == 0);
  CHECK(m.at("trace_0000#1").arrival == 10'000'000'000);
  CHECK(m.at("trace_0000#2").arrival == 12'500'000'000);  // subagent at 12 s + 0.5 s
  CHECK(m.at("trace_0000#3").arrival == 20'000'000'000);
  CHECK(m.at("trace_0001#1").arrival - m.at("trace_0001#0").arrival == 3'000'000'000);
}

TEST_CASE("conversation hash ids are namespaced per file", "[traces][kvcache]") {
  const auto m = by_id(read_all(data_path("traces/kvcache")));
  const Request& a0 = m.at("trace_0000#0");  // local ids 1 2 (+ tail)
  const Request& a1 = m.at("trace_0000#1");  // local ids 1 2 3 (+ tail)
  const Request& b0 = m.at("trace_0001#0");  // local ids 1 2, another file
  // Same file, same local ids: the same blocks.
  CHECK(a0.hash_ids[0] == a1.hash_ids[0]);
  CHECK(a0.hash_ids[1] == a1.hash_ids[1]);
  // Another file: no id in common, hence no engine block in common.
  for (uint64_t x : a0.hash_ids)
    for (uint64_t y : b0.hash_ids) CHECK(x != y);
  const auto blocks_a = engine_blocks(a0, 16), blocks_b = engine_blocks(b0, 16);
  REQUIRE(blocks_a.size() == 8);  // 130 tokens
  REQUIRE(blocks_b.size() == 8);  // 128 tokens
  for (size_t i = 0; i < 8; ++i) CHECK_FALSE(blocks_a[i] == blocks_b[i]);
  CHECK(engine_blocks(a1, 16)[7] == blocks_a[7]);
}

TEST_CASE("a partial tail without a recorded id gets an id of its own", "[traces][kvcache]") {
  const auto m = by_id(read_all(data_path("traces/kvcache")));
  const Request& a0 = m.at("trace_0000#0");  // 130 tokens, ids for 2 full blocks
  const Request& a1 = m.at("trace_0000#1");  // 200 tokens, ids for 3 full blocks
  REQUIRE(a0.hash_ids.size() == 3);
  REQUIRE(a1.hash_ids.size() == 4);
  CHECK(a0.hash_ids[2] != a1.hash_ids[2]);  // a0's tail is not the full block 3 of a1
  CHECK(a0.hash_ids[2] != a1.hash_ids[3]);
  CHECK(m.at("trace_0000#2").hash_ids.size() == 1);  // 64 tokens: exact, no tail
  CHECK(m.at("trace_0000#3").hash_ids.size() == 4);  // 256 tokens: exact
  CHECK(a0.validate().empty());
}

TEST_CASE("conversation starts follow the seed and the rate", "[traces][kvcache]") {
  TraceOptions opts;
  const auto start_of_second = [&](const TraceOptions& o) {
    return by_id(read_all(data_path("traces/kvcache"), o)).at("trace_0001#0").arrival;
  };
  const TimeNs s1 = start_of_second(opts);
  CHECK(s1 > 0);
  CHECK(start_of_second(opts) == s1);  // deterministic
  TraceOptions other = opts;
  other.seed = 2;
  CHECK(start_of_second(other) != s1);
  TraceOptions fast = opts;
  fast.conversation_rate = 1000.0;  // the same exponential draw, 1000 times shorter
  CHECK(std::abs(static_cast<double>(start_of_second(fast)) - static_cast<double>(s1) / 1000.0) <= 1.0);
}

TEST_CASE("tar archives (gzip, xz) and a single file read like the folder", "[traces][kvcache]") {
  const auto folder = read_all(data_path("traces/kvcache"));
  check_same_requests(read_all(data_path("traces/kvcache.tar.gz")), folder);
  check_same_requests(read_all(data_path("traces/kvcache.tar.xz")), folder);
  const auto single = read_all(data_path("traces/kvcache/trace_0000.json"));
  REQUIRE(single.size() == 4);
  CHECK(single[0].hash_ids == by_id(folder).at("trace_0000#0").hash_ids);
}
