// The Mooncake fast path (traces/mooncake_scan.h) against simdjson as the
// oracle: every line it accepts must be valid JSON holding exactly the four
// keys with the values it returned; plain lines in any key order and
// spacing must be accepted; and through the reader, a trace read with the
// fast path gives the same requests and the same errors as simdjson's path
// (lines that the scanner declines).
#include <simdjson.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "test/support.h"
#include "test/traces/scan_test_util.h"
#include "traces/mooncake_scan.h"
#include "traces/trace_reader.h"

namespace test_mooncake_scan {

using prefixsim::MooncakeLine;
using prefixsim::scan_mooncake_line;
using prefixsim::test::padded;
using prefixsim::test::random_uint;
using prefixsim::test::ws;

std::string pad_buf;  // padded()'s buffer

constexpr int64_t kMaxTokens = 100'000'000;

struct Oracle {
  bool ok = false;
  MooncakeLine m;
  std::vector<uint64_t> ids;
};

// What the reader's simdjson path would accept as the fast path's subset:
// a JSON object with exactly the four keys, integer lengths in range, an
// integer timestamp, a non-empty array of unsigned 64-bit ids.
Oracle oracle(const std::string& line) {
  Oracle o;
  simdjson::dom::parser p;
  simdjson::dom::object obj;
  if (p.parse(line).get_object().get(obj)) return o;
  int seen = 0, fields = 0;
  for (auto f : obj) {
    ++fields;
    int64_t i = 0;
    if (f.key == "timestamp") {
      if (f.value.get_int64().get(i) || i < 0) return o;
      o.m.timestamp_ms = static_cast<uint64_t>(i);
      seen |= 1;
    } else if (f.key == "input_length") {
      if (f.value.get_int64().get(i) || i < 1 || i > kMaxTokens) return o;
      o.m.input_length = i;
      seen |= 2;
    } else if (f.key == "output_length") {
      if (f.value.get_int64().get(i) || i < 0 || i > kMaxTokens) return o;
      o.m.output_length = i;
      seen |= 4;
    } else if (f.key == "hash_ids") {
      simdjson::dom::array a;
      if (f.value.get_array().get(a)) return o;
      for (auto x : a) {
        uint64_t u = 0;
        if (x.get_uint64().get(u)) return o;
        o.ids.push_back(u);
      }
      if (o.ids.empty()) return o;
      seen |= 8;
    } else {
      return o;
    }
  }
  o.ok = seen == 15 && fields == 4;
  return o;
}

// A valid Mooncake line: keys in a random order, random JSON whitespace,
// numbers from 1 to 19 digits.
std::string random_line(std::mt19937_64& rng) {
  auto num = [&](int max_digits) { return random_uint(rng, max_digits); };
  const int n_ids = 1 + static_cast<int>(rng() % 6);
  std::string ids = "[" + ws(rng);
  for (int k = 0; k < n_ids; ++k) ids += (k ? "," + ws(rng) : "") + num(19) + ws(rng);
  ids += "]";
  std::vector<std::string> members = {"\"timestamp\"" + ws(rng) + ":" + ws(rng) + num(9),
                                      "\"input_length\"" + ws(rng) + ":" + ws(rng) + std::to_string(1 + rng() % 5000),
                                      "\"output_length\"" + ws(rng) + ":" + ws(rng) + std::to_string(rng() % 900),
                                      "\"hash_ids\"" + ws(rng) + ":" + ws(rng) + ids};
  std::shuffle(members.begin(), members.end(), rng);
  std::string s = ws(rng) + "{" + ws(rng);
  for (size_t k = 0; k < members.size(); ++k) s += (k ? "," + ws(rng) : "") + members[k] + ws(rng);
  return s + "}" + ws(rng);
}

// One random edit, from the characters that matter to JSON numbers and
// structure (the Mooncake subset has no strings or literals).
std::string mutate(const std::string& s, std::mt19937_64& rng) {
  return prefixsim::test::mutate(s, rng, "{}[]\":,.-+eE0123456789 \t\\axu\x01\xc3");
}

TEST_CASE("the Mooncake scanner accepts plain lines in any key order and spacing, with simdjson's values",
          "[traces][mooncake_scan]") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const std::string line = random_line(rng);
    INFO(line);
    MooncakeLine m;
    std::vector<uint64_t> ids;
    const Oracle o = oracle(line);
    REQUIRE(o.ok);
    REQUIRE(scan_mooncake_line(padded(line, pad_buf), kMaxTokens, m, ids));
    CHECK(m.timestamp_ms == o.m.timestamp_ms);
    CHECK(m.input_length == o.m.input_length);
    CHECK(m.output_length == o.m.output_length);
    CHECK(ids == o.ids);
  }
}

TEST_CASE("every line the Mooncake scanner accepts is one simdjson reads to the same values (mutated lines)",
          "[traces][mooncake_scan]") {
  std::mt19937_64 rng(11);
  int accepted = 0, declined = 0;
  const int cases = prefixsim::test::sanitized_share(200000);  // 1/8 under the sanitizers
  for (int i = 0; i < cases; ++i) {
    std::string line = random_line(rng);
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) line = mutate(line, rng);
    MooncakeLine m;
    std::vector<uint64_t> ids;
    if (!scan_mooncake_line(padded(line, pad_buf), kMaxTokens, m, ids)) {
      ++declined;
      continue;
    }
    ++accepted;
    const Oracle o = oracle(line);
    INFO(line);
    REQUIRE(o.ok);
    REQUIRE(m.timestamp_ms == o.m.timestamp_ms);
    REQUIRE(m.input_length == o.m.input_length);
    REQUIRE(m.output_length == o.m.output_length);
    REQUIRE(ids == o.ids);
  }
  // Both sides of the property were exercised.
  CHECK(accepted > cases / 200);
  CHECK(declined > cases / 200);
}

TEST_CASE("the Mooncake scanner declines what the reader must report or leave to simdjson",
          "[traces][mooncake_scan]") {
  const char* const lines[] = {
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": []})",            // empty ids
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [01]})",          // leading zero
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [-1]})",          // negative
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [18446744073709551615]})",  // 20 digits
      R"({"timestamp": 1.5, "input_length": 10, "output_length": 1, "hash_ids": [1]})",         // a float
      R"({"timestamp": 1e3, "input_length": 10, "output_length": 1, "hash_ids": [1]})",         // an exponent
      R"({"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": [1]})",            // empty prompt
      R"({"timestamp": 0, "input_length": 1000000000, "output_length": 1, "hash_ids": [1]})",   // too long
      R"({"timestamp": 0, "timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})",  // twice
      R"({"timestamp": 0, "input_length": 10, "hash_ids": [1]})",                               // missing
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1], "x": 1})",   // unknown
      R"({"time\u0073tamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})",      // escaped key
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]} x)",         // trailing
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1],})",          // trailing comma
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1 2]})",         // no comma
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1])",            // unclosed
  };
  for (const char* line : lines) {
    INFO(line);
    MooncakeLine m;
    std::vector<uint64_t> ids;
    CHECK_FALSE(scan_mooncake_line(padded(line, pad_buf), kMaxTokens, m, ids));
  }
}

TEST_CASE("a Mooncake trace read through the fast path gives simdjson's requests and errors", "[traces][mooncake_scan]") {
  // The same requests written two ways: plain (the fast path) and with
  // every key escaped (which only simdjson reads); equal requests, line for
  // line. Then a bad line in each form: the same message.
  const std::string dir = prefixsim::test::temp_dir("mooncake-scan");
  std::mt19937_64 rng(5);
  std::string plain, escaped;
  for (int i = 0; i < 300; ++i) {
    const int n = 1 + static_cast<int>(rng() % 5);
    std::string ids;
    for (int k = 0; k < n; ++k) ids += (k ? ", " : "") + std::to_string(rng() >> (rng() % 64));
    const std::string rest = std::to_string(n * 512 - static_cast<int>(rng() % 512)) + ", \"output_length\": " +
                             std::to_string(rng() % 700) + ", \"hash_ids\": [" + ids + "]}\n";
    plain += "{\"timestamp\": " + std::to_string(i * 333) + ", \"input_length\": " + rest;
    escaped += "{\"timestamp\": " + std::to_string(i * 333) + ", \"input_\\u006cength\": " + rest;
  }
  const std::string a = prefixsim::test::write_text_file(dir, "plain.jsonl", plain);
  const std::string b = prefixsim::test::write_text_file(dir, "escaped.jsonl", escaped);
  auto fa = prefixsim::open_trace(a, {});
  auto fb = prefixsim::open_trace(b, {});
  prefixsim::Request ra, rb;
  int n = 0;
  while (fa->next(ra)) {
    REQUIRE(fb->next(rb));
    CHECK(ra.id == rb.id);
    CHECK(ra.arrival == rb.arrival);
    CHECK(ra.prompt_len == rb.prompt_len);
    CHECK(ra.output_len == rb.output_len);
    CHECK(ra.hash_ids == rb.hash_ids);
    CHECK(ra.trace_block_size == rb.trace_block_size);
    ++n;
  }
  CHECK_FALSE(fb->next(rb));
  CHECK(n == 300);
  // ids that do not cover input_length: validate()'s message on both paths.
  const std::string bad_plain = R"({"timestamp": 0, "input_length": 2000, "output_length": 1, "hash_ids": [1, 2]})";
  const std::string bad_escaped = R"({"timestamp": 0, "input_\u006cength": 2000, "output_length": 1, "hash_ids": [1, 2]})";
  std::string msg[2];
  int k = 0;
  for (const std::string& line : {bad_plain, bad_escaped}) {
    const std::string p = prefixsim::test::write_text_file(dir, "bad" + std::to_string(k) + ".jsonl", line + "\n");
    try {
      auto src = prefixsim::open_trace(p, {});
      prefixsim::Request r;
      while (src->next(r)) {
      }
    } catch (const std::exception& e) {
      msg[k] = e.what();
      msg[k] = msg[k].substr(msg[k].find(".jsonl"));
    }
    ++k;
  }
  CHECK(msg[0].find("hash_ids has 2 ids but input_length 2000") != std::string::npos);
  CHECK(msg[0] == msg[1]);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Mooncake lines read the same with and without the fast path, mutated or not", "[traces][mooncake_scan]") {
  std::mt19937_64 rng(17);
  const int cases = prefixsim::test::sanitized_share(40000);  // 1/8 under the sanitizers
  for (int i = 0; i < cases; ++i) {
    std::string line = random_line(rng);
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) line = mutate(line, rng);
    // After a good line, so that order and line numbers count too. Most
    // random lines' lengths do not match their ids: Request::validate's
    // message, the same either way.
    prefixsim::test::check_both_paths(prefixsim::make_mooncake_source,
                                      R"({"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [7]})"
                                      "\n" +
                                          line + "\n");
  }
}

}  // namespace test_mooncake_scan
