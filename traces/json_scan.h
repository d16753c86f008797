// The pieces of the JSONL readers' fast paths (mooncake_scan.h,
// native_scan.h, agentic_scan.h, bailian_scan.h): a cursor over one line
// and scanners for the plain forms of JSON's tokens. Each accepts a strict
// subset of JSON and returns false on anything else (cursor then
// unspecified), so a line scanner built from them declines whatever it does
// not know, and the simdjson path reads that line with its error messages.
// What each accepts, it reads to the value simdjson would: integers without
// sign (but for scan_int's "-"), fraction, exponent or leading zeros, short
// enough not to overflow; decimals within the range where one division is
// correctly rounded, as simdjson's parse is; strings without escapes or
// control characters, their UTF-8 checked by simdjson's own validator.
// What follows a value is left to the line's grammar (',', ']', '}' or
// whitespace), which catches "1.5" after scan_uint's "1".
//
// Inline: the loops over a line's numbers are the readers' hot path.
#pragma once

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "sim/base/types.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace prefixsim::json_scan {

struct Cursor {
  const char* p;
  const char* end;
  explicit Cursor(std::string_view s) : p(s.data()), end(s.data() + s.size()) {}
  void skip_ws() {
    constexpr uint64_t kWs = 1ULL << ' ' | 1ULL << '\t' | 1ULL << '\r' | 1ULL << '\n';
    while (p < end && static_cast<unsigned char>(*p) <= ' ' && ((kWs >> *p) & 1)) ++p;
  }
  bool eat(char c) {
    if (p == end || *p != c) return false;
    ++p;
    return true;
  }
  // The key `name` (given with its closing quote) right at the cursor.
  template <size_t N>
  bool eat_key(const char (&name)[N]) {
    if (static_cast<size_t>(end - p) < N - 1 || std::memcmp(p, name, N - 1) != 0) return false;
    p += N - 1;
    return true;
  }
  // Whitespace, then the end of the line.
  bool at_end() {
    skip_ws();
    return p == end;
  }
};

inline bool is_digit(char c) { return static_cast<unsigned>(c - '0') <= 9; }

inline constexpr uint64_t kOnes = 0x0101010101010101ULL;
inline constexpr uint64_t kPow10Int[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

// Eight digit values (0-9, the first in the low byte: little-endian text)
// as one number: pairs, then the four pairs weighted in two
// multiplications (fast_float's parse_eight_digits_unrolled).
inline uint64_t fold8(uint64_t v) {
  constexpr uint64_t kMask = 0x000000ff000000ffULL;
  constexpr uint64_t kMul1 = 100 + (1000000ULL << 32), kMul2 = 1 + (10000ULL << 32);
  v = v * 10 + (v >> 8);  // byte 2k: the pair 2k, 2k+1
  return (((v & kMask) * kMul1) + (((v >> 16) & kMask) * kMul2)) >> 32;
}

inline uint64_t load8(const char* q) {
  uint64_t chunk;
  std::memcpy(&chunk, q, 8);
  return chunk;
}

// The digits of `chunk` (8 bytes of text) before its first non-digit, 0-8
// of them, and their value. Branch-free (SWAR): a number's length costs no
// mispredicted loop exit, which is most of what a digit-at-a-time loop
// spends on ids of 1-19 digits.
inline unsigned swar_digits(uint64_t chunk, uint64_t& value) {
  const uint64_t x = chunk ^ (kOnes * '0');  // a digit byte becomes 0-9
  // Bit 7 of each byte that is not 0-9: x >= 10 as (x & 0x7f) + 0x76
  // reaching 0x80 (no carry between bytes), or x's own bit 7.
  const uint64_t non_digit = ((((x & (kOnes * 0x7f)) + kOnes * 0x76) | x) & (kOnes * 0x80));
  const unsigned n = non_digit ? static_cast<unsigned>(__builtin_ctzll(non_digit)) / 8 : 8;
  if (n == 0) return 0;
  value = fold8(x << (8 * (8 - n)));  // the n digits to the high bytes, zeros before them
  return n;
}

// The value of the `n` (1-19) digits at q, known to be digits; reads up
// to 7 bytes past them.
inline uint64_t digits_value(const char* q, unsigned n) {
  uint64_t v = 0;
  for (; n > 8; n -= 8, q += 8) v = v * 100000000 + fold8(load8(q) ^ (kOnes * '0'));
  return v * kPow10Int[n] + fold8((load8(q) ^ (kOnes * '0')) << (8 * (8 - n)));
}

// A JSON integer with no sign, fraction or exponent and at most max_digits
// digits (at most 19, so it fits in 64 bits); no leading zero but in "0".
inline bool scan_uint(Cursor& c, long max_digits, uint64_t& v) {
  const char* const start = c.p;
  const char* q = start;
  uint64_t x = 0;
  bool more = true;  // no non-digit seen yet
  // Eight bytes at a time while eight are left in the line (the reader's
  // padding is not counted on: the scanners also run on bare strings).
  while (more && c.end - q >= 8) {
    uint64_t part = 0;
    const unsigned n = swar_digits(load8(q), part);
    if (q - start + static_cast<long>(n) > 19) return false;  // x would overflow: too many digits anyway
    x = x * kPow10Int[n] + part;
    q += n;
    more = n == 8;
  }
  while (more && q < c.end && is_digit(*q)) {
    if (q - start == 19) return false;
    x = x * 10 + static_cast<uint64_t>(*q++ - '0');
  }
  if (q == start || q - start > max_digits) return false;  // no digit, or too many
  if (*start == '0' && q - start > 1) return false;        // a leading zero: not JSON
  c.p = q;
  v = x;
  return true;
}

// scan_uint with an optional '-' (max_digits at most 18); "-0" is declined.
inline bool scan_int(Cursor& c, long max_digits, int64_t& v) {
  const bool negative = c.eat('-');
  uint64_t x = 0;
  if (!scan_uint(c, max_digits, x) || (negative && x == 0)) return false;
  v = negative ? -static_cast<int64_t>(x) : static_cast<int64_t>(x);
  return true;
}

// A non-negative JSON number without exponent: digits, then optionally '.'
// and digits, at most 19 digits in all and a significand below 2^53. Then
// significand / 10^decimals is one correctly rounded division of two exact
// doubles (Clinger's fast case), the double simdjson's parser returns too.
inline bool scan_decimal(Cursor& c, double& v) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
                                      1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19};
  uint64_t whole = 0;
  const char* const start = c.p;
  if (!scan_uint(c, 19, whole)) return false;
  long digits = c.p - start, decimals = 0;
  uint64_t m = whole;
  if (c.p < c.end && *c.p == '.') {
    const char* q = ++c.p;
    while (q < c.end && is_digit(*q) && digits < 19) {
      m = m * 10 + static_cast<uint64_t>(*q++ - '0');
      ++digits;
    }
    decimals = q - c.p;
    if (decimals == 0 || (q < c.end && is_digit(*q))) return false;  // "1." or too many digits
    c.p = q;
  }
  if (m > (uint64_t{1} << 53)) return false;
  v = static_cast<double>(m) / kPow10[decimals];
  return true;
}

// A string after its opening quote, through its closing one: no escapes, no
// control characters; non-ASCII bytes must be valid UTF-8, as simdjson
// requires of a whole document. Sixteen bytes at a time up to the first
// byte that is not plain ASCII (SSE2; reads up to 15 bytes past the line:
// the scanners' padding, json_scan_lists.h), then one at a time.
inline bool scan_string(Cursor& c, std::string_view& s) {
  const char* q = c.p;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), control = _mm_set1_epi8(0x1f);
  for (;; q += 16) {
    if (q >= c.end) return false;
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i plain_end = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, quote), _mm_cmpeq_epi8(b, backslash)),
                                           _mm_cmpeq_epi8(_mm_min_epu8(b, control), b));
    // The high bit of each byte is its own mask bit: non-ASCII stops too.
    const unsigned stop = static_cast<unsigned>(_mm_movemask_epi8(plain_end) | _mm_movemask_epi8(b));
    if (stop) {
      q += __builtin_ctz(stop);
      break;
    }
  }
  if (q < c.end && *q == '"') {  // ASCII throughout: done
    s = std::string_view(c.p, static_cast<size_t>(q - c.p));
    c.p = q + 1;
    return true;
  }
#endif
  unsigned char high = 0;
  while (q < c.end && *q != '"') {
    const auto b = static_cast<unsigned char>(*q++);
    if (b < 0x20 || b == '\\') return false;
    high |= b;
  }
  if (q >= c.end) return false;
  s = std::string_view(c.p, static_cast<size_t>(q - c.p));
  if ((high & 0x80) && !simdjson::validate_utf8(s.data(), s.size())) return false;
  c.p = q + 1;
  return true;
}

// An integer in [lo, hi] (hi below 10^10: lengths, block sizes, LoRA ids).
inline bool scan_bounded(Cursor& c, uint64_t lo, uint64_t hi, int64_t& v) {
  uint64_t x = 0;
  if (!scan_uint(c, 10, x) || x < lo || x > hi) return false;
  v = static_cast<int64_t>(x);
  return true;
}

// A string value: its opening quote, then scan_string.
inline bool scan_quoted(Cursor& c, std::string_view& s) { return c.eat('"') && scan_string(c, s); }

// An object's key and the ':' after it (whitespace between), the key as
// scan_quoted reads it.
inline bool scan_key(Cursor& c, std::string_view& key) {
  if (!scan_quoted(c, key)) return false;
  if (c.p < c.end && *c.p == ':') {  // the compact form
    ++c.p;
    return true;
  }
  c.skip_ws();
  return c.eat(':');
}

// Whether `key` is `name`: a comparison of known length, which the
// compiler turns into a load or two (std::string_view's == calls memcmp).
template <size_t N>
inline bool is_key(std::string_view key, const char (&name)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), name, N - 1) == 0;
}

// One flat JSON object, `{"key": value, ...}`, for the line scanners. Each
// key is read by `plain` (the usual spelling with its colon, one
// comparison; `other` when it is not that) and failing that by `named`
// (any other spelling, through scan_key); an `other` key, or a key given
// twice, declines the line. `value(key)` reads the key's value at the
// cursor. `seen` gets one bit per key read. Whether the line ends after
// the '}' is the caller's to check.
template <typename Key, typename Plain, typename Named, typename Value>
inline bool scan_object(Cursor& c, Key other, Plain&& plain, Named&& named, Value&& value, unsigned& seen) {
  seen = 0;
  c.skip_ws();
  if (!c.eat('{')) return false;
  std::string_view s;
  for (;;) {
    c.skip_ws();
    if (!c.eat('"')) return false;
    Key key = plain(c);
    if (key == other) {  // any other spelling of a key we know
      --c.p;
      if (!scan_key(c, s)) return false;
      key = named(s);
    }
    if (key == other || (seen & (1u << key))) return false;
    seen |= 1u << key;
    c.skip_ws();
    if (!value(key)) return false;
    c.skip_ws();
    if (c.eat('}')) return true;
    if (!c.eat(',')) return false;
  }
}

// Arrival times: the latest second a trace may name (int64 nanoseconds hold
// about 292 years), and seconds as int64 nanoseconds, rounded. Exact for
// the decimals the native writer produces below ~10^6 s: the double's
// error (2^-53 relative) stays under half a nanosecond there.
inline constexpr double kMaxSeconds = 9.2e9;
inline TimeNs ns_of_seconds(double s) { return static_cast<TimeNs>(std::llround(s * 1e9)); }

}  // namespace prefixsim::json_scan
