// The fast paths' pieces (traces/json_scan.h, json_scan_lists.h) on their
// own: integers of every length at every distance from the line's end,
// integer lists (SSE2 blocks and the scalar loop) against a one-token-at-a-
// time reference, decimals and strings against simdjson.
#include <simdjson.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test/traces/scan_test_util.h"
#include "traces/json_scan_lists.h"

namespace test_json_scan {

using namespace prefixsim::json_scan;
using prefixsim::test::padded;

std::string pad_buf;

// The subset, one character at a time: what scan_list must accept and read.
template <typename T>
bool reference_list(std::string_view s, size_t& used, unsigned max_digits, uint64_t max_value, std::vector<T>& out) {
  size_t i = 0;
  const auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
  };
  if (i == s.size() || s[i] != '[') return false;
  ++i;
  ws();
  if (i < s.size() && s[i] == ']') {
    used = i + 1;
    return true;
  }
  for (;;) {
    const size_t start = i;
    uint64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (i - start == max_digits) return false;
      v = v * 10 + static_cast<uint64_t>(s[i++] - '0');
    }
    if (i == start || (s[start] == '0' && i - start > 1) || v > max_value) return false;
    out.push_back(static_cast<T>(v));
    ws();
    if (i < s.size() && s[i] == ']') {
      used = i + 1;
      return true;
    }
    if (i == s.size() || s[i] != ',') return false;
    ++i;
    ws();
  }
}

std::string random_list(std::mt19937_64& rng) {
  static const char* const seps[] = {",", ",", ", ", ", ", " , ", ",\t", "\t,", " ,", ",\n", ",  "};
  const bool compact = rng() % 2;
  const size_t n = rng() % 4 == 0 ? rng() % 3 : rng() % 120;
  std::string s = rng() % 5 ? "[" : "[ ";
  for (size_t k = 0; k < n; ++k) {
    if (k) s += compact ? "," : seps[rng() % 10];
    const int digits = rng() % 10 == 0 ? 1 + static_cast<int>(rng() % 21) : 1 + static_cast<int>(rng() % 7);
    s += static_cast<char>(rng() % 30 == 0 ? '0' : '1' + rng() % 9);
    for (int d = 1; d < digits; ++d) s += static_cast<char>('0' + rng() % 10);
  }
  s += rng() % 5 ? "]" : " ]";
  return s;
}

TEST_CASE("scan_uint reads 1 to 19 digits wherever the line ends, and refuses the rest", "[traces][json_scan]") {
  std::mt19937_64 rng(41);
  for (int digits = 0; digits <= 21; ++digits)
    for (int tail = 0; tail <= 12; ++tail)
      for (const char* after : {"", ",", "]", "}", " ", ".5", "e3", "x"})
        for (int trial = 0; trial < 20; ++trial) {
          std::string num;
          for (int d = 0; d < digits; ++d) num += static_cast<char>('0' + (d == 0 && trial % 4 ? 1 + rng() % 9 : rng() % 10));
          std::string line = num + after + std::string(static_cast<size_t>(tail), ' ');
          INFO(line);
          Cursor c(padded(line, pad_buf));
          uint64_t v = 0;
          const bool ok = scan_uint(c, 19, v);
          const bool want = digits >= 1 && digits <= 19 && !(num[0] == '0' && digits > 1);
          REQUIRE(ok == want);
          if (ok) {
            CHECK(v == std::stoull(num));
            CHECK(c.p == pad_buf.data() + digits);
          }
        }
}

TEST_CASE("scan_list agrees with a one-token-at-a-time reading of random lists, mutated or not",
          "[traces][json_scan]") {
  std::mt19937_64 rng(43);
  int accepted = 0, declined = 0;
  for (int i = 0; i < 40000; ++i) {
    std::string list = random_list(rng);
    for (int k = static_cast<int>(rng() % 3); k > 0 && i % 2; --k) list = prefixsim::test::mutate(list, rng);
    const std::string line = list + (rng() % 2 ? "" : ",\"x\":1}");
    INFO(line);
    std::vector<uint64_t> ids, want_ids;
    std::vector<int32_t> tokens, want_tokens;
    size_t used_ids = 0, used_tokens = 0;
    const bool want_i = reference_list(line, used_ids, 19, UINT64_MAX, want_ids);
    const bool want_t = reference_list(line, used_tokens, 10, 0x7fffffff, want_tokens);
    Cursor ci(padded(line, pad_buf));
    const char* const base = pad_buf.data();
    REQUIRE(scan_ids(ci, ids) == want_i);
    if (want_i) {
      CHECK(ids == want_ids);
      CHECK(static_cast<size_t>(ci.p - base) == used_ids);
    }
    Cursor ct(padded(line, pad_buf));
    REQUIRE(scan_tokens(ct, tokens) == want_t);
    if (want_t) {
      CHECK(tokens == want_tokens);
      CHECK(static_cast<size_t>(ct.p - pad_buf.data()) == used_tokens);
    }
    (want_i ? accepted : declined)++;
  }
  CHECK(accepted > 5000);
  CHECK(declined > 5000);
}

TEST_CASE("scan_decimal reads the double simdjson reads, or declines", "[traces][json_scan]") {
  std::mt19937_64 rng(47);
  simdjson::dom::parser parser;
  int accepted = 0;
  for (int i = 0; i < 100000; ++i) {
    std::string num = prefixsim::test::random_uint(rng, 1 + static_cast<int>(rng() % 19));
    if (rng() % 3) {
      num += '.';
      for (int d = 1 + static_cast<int>(rng() % 20); d > 0; --d) num += static_cast<char>('0' + rng() % 10);
    }
    if (rng() % 20 == 0) num = prefixsim::test::mutate(num, rng);
    INFO(num);
    Cursor c(padded(num, pad_buf));
    double v = 0;
    if (!scan_decimal(c, v) || c.p != pad_buf.data() + num.size()) continue;
    ++accepted;
    double want = 0;
    const simdjson::dom::element e = parser.parse(num).value();
    if (e.is_double()) want = e.get_double().value();
    else if (e.is_int64()) want = static_cast<double>(e.get_int64().value());
    else want = static_cast<double>(e.get_uint64().value());
    REQUIRE(std::memcmp(&v, &want, sizeof v) == 0);
  }
  CHECK(accepted > 30000);
}

TEST_CASE("scan_string takes what simdjson reads unchanged, and declines the rest", "[traces][json_scan]") {
  std::mt19937_64 rng(53);
  static const char* const pieces[] = {"a", "Z", " ", "-", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                       "\\n", "\\\"", "\x01", "\x7f", "\xc3", "\xed\xa0\x80", "\xc0\xaf", "\x80"};
  simdjson::dom::parser parser;
  int taken = 0;
  for (int i = 0; i < 50000; ++i) {
    std::string body;
    for (int k = static_cast<int>(rng() % 40); k > 0; --k) body += pieces[rng() % (rng() % 3 ? 7 : 15)];
    const std::string line = "\"" + body + "\"";
    INFO(line);
    Cursor c(padded(line, pad_buf));
    std::string_view s;
    const bool ok = c.eat('"') && scan_string(c, s);
    std::string_view want;
    const bool valid = parser.parse(line).get_string().get(want) == simdjson::SUCCESS;
    if (ok) {
      ++taken;
      REQUIRE(valid);
      CHECK(s == want);
      CHECK(c.p == pad_buf.data() + line.size());
    } else {
      // Declined: an escape, or what simdjson rejects too.
      CHECK((body.find('\\') != std::string::npos || !valid));
    }
  }
  CHECK(taken > 5000);
}

}  // namespace test_json_scan
