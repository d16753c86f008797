// The native reader's fast path (traces/native_scan.h) against its simdjson
// path: plain lines in any key order and spacing are taken by the scanner;
// the fixtures, random lines and systematically mutated ones read to the
// same requests, or the same error (file, line, field), either way.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "test/support.h"
#include "test/traces/scan_test_util.h"
#include "traces/native_scan.h"
#include "traces/native_writer.h"

namespace test_native_scan {

using namespace prefixsim;
using namespace prefixsim::test;

std::string pad_buf;  // padded()'s buffer

std::string random_text(std::mt19937_64& rng) {
  static const char* const pieces[] = {"a", "b", "r", "-", "_", "7", " ", "/", "\xc3\xa9", ":", "Z"};
  std::string s = "\"";
  for (int k = static_cast<int>(rng() % 8); k > 0; --k) s += pieces[rng() % 11];
  return s + "\"";
}

std::string uint_list(std::mt19937_64& rng, size_t n, int max_digits) {
  std::string s = "[" + ws(rng);
  for (size_t k = 0; k < n; ++k) s += (k ? "," + ws(rng) : "") + random_uint(rng, max_digits) + ws(rng);
  return s + "]";
}

// A valid native line of either prompt form, with a random choice of the
// optional fields; `trace_block_size`: the reader's default, so block_size
// may be left out when it is set.
std::string random_native_line(std::mt19937_64& rng, bool longer, int32_t trace_block_size) {
  std::vector<std::pair<std::string, std::string>> m;
  if (rng() % 5) m.emplace_back("id", random_text(rng));
  m.emplace_back("t", random_decimal(rng, longer));
  if (rng() % 2) {
    const size_t n = 1 + rng() % 12;
    m.emplace_back("tokens", uint_list(rng, n, 9));
    if (rng() % 3 == 0) m.emplace_back("prompt_len", std::to_string(n));
  } else {
    const size_t n = 1 + rng() % 8;
    int64_t bs = 1 + static_cast<int64_t>(rng() % 64);
    if (trace_block_size > 0 && rng() % 2) bs = trace_block_size;
    else m.emplace_back("block_size", std::to_string(bs));
    m.emplace_back("hash_ids", uint_list(rng, n, 19));
    const int64_t len = static_cast<int64_t>(n) * bs - static_cast<int64_t>(rng() % static_cast<uint64_t>(bs));
    if (rng() % 3 || len != static_cast<int64_t>(n) * bs) m.emplace_back("prompt_len", std::to_string(len));
  }
  const size_t out = rng() % 6;
  const int form = static_cast<int>(rng() % 3);  // output_len, output_tokens, or both
  if (form != 1) m.emplace_back("output_len", std::to_string(out));
  if (form != 0) m.emplace_back("output_tokens", uint_list(rng, out, 9));
  if (rng() % 3 == 0) m.emplace_back("session", random_text(rng));
  if (rng() % 4 == 0) m.emplace_back("salt", random_text(rng));
  if (rng() % 4 == 0) m.emplace_back("lora", random_uint(rng, 9));
  return object_of(m, rng);
}

TEST_CASE("the native scanner takes plain lines in any key order and spacing, with simdjson's values",
          "[traces][native_scan]") {
  std::mt19937_64 rng(3);
  for (int32_t tbs : {0, 16}) {
    TraceOptions opts;
    opts.trace_block_size = tbs;
    for (int i = 0; i < 5000; ++i) {
      const std::string line = random_native_line(rng, false, tbs);
      INFO(line);
      Request r;
      REQUIRE(scan_native_line(padded(line, pad_buf), tbs, 1, r));
      const Outcome o = check_both_paths(make_native_source, line + "\n", opts);
      CHECK(o.error.empty());
    }
  }
}

TEST_CASE("native lines read the same with and without the fast path, mutated or not", "[traces][native_scan]") {
  std::mt19937_64 rng(13);
  int accepted = 0, declined = 0;
  const int cases = prefixsim::test::sanitized_share(60000);  // 1/8 under the sanitizers
  for (int i = 0; i < cases; ++i) {
    const int32_t tbs = rng() % 2 ? 16 : 0;
    std::string line = random_native_line(rng, true, tbs);
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) line = mutate(line, rng);
    Request r;
    (scan_native_line(padded(line, pad_buf), tbs, 2, r) ? accepted : declined)++;
    TraceOptions opts;
    opts.trace_block_size = tbs;
    // After a good line, so that arrival order and line numbers count too.
    check_both_paths(make_native_source, "{\"t\":0,\"tokens\":[1],\"output_len\":1}\n" + line + "\n", opts);
  }
  // Both sides of the property were exercised.
  CHECK(accepted > cases / 6);
  CHECK(declined > cases / 6);
}

TEST_CASE("the native fixtures read the same with and without the fast path", "[traces][native_scan]") {
  const std::string text = read_file(data_path("traces/native_small.jsonl"));
  const Outcome o = check_both_paths(make_native_source, text);
  CHECK(o.error.empty());
  CHECK(o.requests.size() >= 2);
  // Each line alone, and each with every one-byte deletion.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    check_both_paths(make_native_source, line + "\n");
    for (size_t at = 0; at < line.size(); ++at)
      check_both_paths(make_native_source, line.substr(0, at) + line.substr(at + 1) + "\n");
  }
}

TEST_CASE("the native scanner declines what it leaves to simdjson; both paths report it alike",
          "[traces][native_scan]") {
  const char* const lines[] = {
      R"({"t":0,"tokens":[1,2],"output_len":1,"mm":[{"hash":"ab","offset":0,"length":1}]})",  // mm
      R"({"t":0,"tokens":[1,2],"output_len":1,"x":1})",                          // unknown field
      R"({"t":0,"t":1,"tokens":[1,2],"output_len":1})",                          // twice
      R"({"tokens":[1,2],"output_len":1})",                                      // no t
      R"({"t":0,"output_len":1})",                                               // no prompt
      R"({"t":0,"tokens":[1],"hash_ids":[1],"block_size":4,"output_len":1})",    // both forms
      R"({"t":0,"tokens":[1,2]})",                                               // no output_len
      R"({"t":0,"tokens":[1,2],"block_size":4,"output_len":1})",                 // block_size with tokens
      R"({"t":0,"hash_ids":[1],"output_len":1})",                                // no block size anywhere
      R"({"t":0,"tokens":[1,2],"output_len":3,"output_tokens":[1]})",            // disagreeing output
      R"({"t":-1,"tokens":[1,2],"output_len":1})",                               // negative time
      R"({"t":1e3,"tokens":[1,2],"output_len":1})",                              // exponent
      R"({"t":1.0000000000000000001,"tokens":[1,2],"output_len":1})",            // 20 digits
      R"({"t":9300000000,"tokens":[1,2],"output_len":1})",                       // absurdly late
      R"({"t":0,"tokens":[1,2147483648],"output_len":1})",                       // token out of range
      R"({"t":0,"tokens":[1,-2],"output_len":1})",                               // negative token
      R"({"t":0,"tokens":[1,2.0],"output_len":1})",                              // float token
      R"({"t":0,"tokens":[1,02],"output_len":1})",                               // leading zero
      R"({"t":0,"hash_ids":[18446744073709551615],"block_size":4,"output_len":1})",  // 20 digits
      R"({"t":0,"tokens":[1,2],"output_len":1,"lora":2147483648})",              // lora out of range
      R"({"id":"a\"b","t":0,"tokens":[1,2],"output_len":1})",                    // escape
      R"({"id":"a\u0062","t":0,"tokens":[1,2],"output_len":1})",                 // escape
      "{\"id\":\"a\x01\",\"t\":0,\"tokens\":[1,2],\"output_len\":1}",            // control character
      "{\"id\":\"a\xc3\",\"t\":0,\"tokens\":[1,2],\"output_len\":1}",            // bad UTF-8
      "{\"id\":\"\xed\xa0\x80\",\"t\":0,\"tokens\":[1,2],\"output_len\":1}",     // a surrogate
      R"({"id":7,"t":0,"tokens":[1,2],"output_len":1})",                         // id not a string
      R"({"t":0,"tokens":[1,2],"output_len":1} x)",                              // trailing
      R"({"t":0,"tokens":[1,2],"output_len":1,})",                               // trailing comma
      R"({"t":0,"tokens":[1 2],"output_len":1})",                                // no comma
      R"({"t":0,"tokens":[1,2],"output_len":1)",                                 // unclosed
      R"({"t":0,"tokens":[1,2,],"output_len":1})",                               // trailing comma in a list
      R"({"t":0,"tokens":[1,2],"output_len":100000001})",                        // too long
      R"({"t":0,"hash_ids":[1],"block_size":1048577,"output_len":1})",           // block_size out of range
  };
  for (const char* line : lines) {
    INFO(line);
    Request r;
    CHECK_FALSE(scan_native_line(padded(line, pad_buf), 0, 1, r));
    check_both_paths(make_native_source, std::string(line) + "\n");
  }
  // A line the scanner takes, wrong only as a whole (Request::validate):
  // the same message either way.
  const Outcome o =
      check_both_paths(make_native_source, "{\"t\":0,\"hash_ids\":[1,2],\"block_size\":4,\"prompt_len\":9,\"output_len\":1}\n");
  CHECK(o.error.find("hash_ids has 2 ids") != std::string::npos);
}

TEST_CASE("what the native writer writes, the scanner reads back exactly", "[traces][native_scan]") {
  std::mt19937_64 rng(17);
  std::string text;
  for (int i = 0; i < 500; ++i) {
    Request r;
    r.id = "req-" + std::to_string(i);
    r.arrival = static_cast<TimeNs>(i) * 1'234'567'891 + static_cast<TimeNs>(rng() % 1000);
    if (i % 2) {
      for (int k = 1 + static_cast<int>(rng() % 9); k > 0; --k) r.hash_ids.push_back(rng() >> 1);
      r.trace_block_size = 16;
      r.prompt_len = static_cast<int64_t>(r.hash_ids.size()) * 16 - static_cast<int64_t>(rng() % 16);
    } else {
      for (int k = 1 + static_cast<int>(rng() % 30); k > 0; --k) r.tokens.push_back(static_cast<int32_t>(rng() % 200000));
      r.prompt_len = static_cast<int64_t>(r.tokens.size());
    }
    r.output_len = static_cast<int64_t>(rng() % 4);
    if (i % 3 == 0)
      for (int64_t k = 0; k < r.output_len; ++k) r.output_tokens.push_back(static_cast<int32_t>(k));
    if (i % 5 == 0) r.session = "s" + std::to_string(i / 5);
    if (i % 7 == 0) r.extras.salt = "tenant";
    if (i % 11 == 0) r.extras.lora = 3;
    std::string line;
    append_native_json(line, r);
    Request back;
    INFO(line);
    REQUIRE(scan_native_line(padded(line, pad_buf), 0, i + 1, back));
    CHECK(request_diff(back, r).empty());
    text += line + "\n";
  }
  check_both_paths(make_native_source, text);
}

}  // namespace test_native_scan
