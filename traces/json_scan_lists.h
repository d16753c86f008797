// Lists of integers for the line scanners (json_scan.h): hash ids and token
// ids, most of a trace line's bytes. A list is read in blocks of up to 63
// bytes: SSE2 compares turn a block into bit masks of its digits, commas
// and spaces; bit arithmetic on the masks checks the grammar (after '[' or
// a comma, then spaces: a number; after a number, then spaces: a comma or
// ']') and finds every number's start and end at once, and each number is
// then read from its own 8-byte loads (json_scan::digits_value). The
// numbers of a block are independent of one another, so the CPU reads them
// in parallel; a digit-at-a-time scanner must find where each number ends
// before it can start on the next, and waits on that chain (on the Mooncake
// trace's lines, 24 ids of 1-6 digits: ~9 ns an id that way, ~5 ns here,
// on the 2-core VM).
//
// Padding: the block loads read up to 64 bytes past the cursor, so the
// line must be followed by kScanPadding readable bytes, as the JSONL
// reader's LineReader guarantees (simdjson needs the same). What lies past
// the line is masked off and never changes a result.
//
// A block with anything else (a tab, a newline, a number too long to end
// in the block) goes to the scalar loop, which takes the same subset one
// token at a time; a number the subset refuses (a leading zero, too many
// digits, a value too large) declines the list either way.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "traces/json_scan.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace prefixsim::json_scan {

inline constexpr size_t kScanPadding = 64;

namespace detail {

enum class Step { kMore, kDone, kScalar, kDecline };

#if defined(__SSE2__)
struct Masks {
  uint64_t digit = 0, comma = 0, space = 0;
};

// Masks of the 64 bytes at p: bit i for byte p[i].
inline Masks block_masks(const char* p) {
  Masks m;
  const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
  const __m128i comma = _mm_set1_epi8(','), space = _mm_set1_epi8(' ');
  for (int k = 0; k < 4; ++k) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i x = _mm_sub_epi8(b, zero);  // a digit becomes 0-9, unsigned
    const auto bits = [k](__m128i eq) {
      return static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(eq))) << (16 * k);
    };
    m.digit |= bits(_mm_cmpeq_epi8(_mm_min_epu8(x, nine), x));
    m.comma |= bits(_mm_cmpeq_epi8(b, comma));
    m.space |= bits(_mm_cmpeq_epi8(b, space));
  }
  return m;
}

// Bits of the first byte after each run that `from` marks the byte before
// (bit i of `from`: look from byte i + 1), skipping spaces: the carry of
// adding a bit at the start of a run of spaces comes out at its end.
inline uint64_t next_after_spaces(uint64_t from, uint64_t space) { return ((from << 1) + space) & ~space; }

// One block of a list at c.p, which is just after the '[' (`first`) or a
// comma: up to and including its last comma (kMore), or through the ']'
// (kDone), its numbers appended to `out`; kScalar leaves the cursor and
// `out` untouched.
template <typename T, unsigned MaxDigits, uint64_t MaxValue>
Step scan_block(Cursor& c, bool first, std::vector<T>& out) {
  const long avail = c.end - c.p;
  if (avail <= 0) return Step::kScalar;
  const uint64_t valid = avail >= 63 ? (uint64_t{1} << 63) - 1 : (uint64_t{1} << avail) - 1;
  const Masks m = block_masks(c.p);
  uint64_t digit = m.digit & valid, comma = m.comma & valid, space = m.space & valid;
  const uint64_t other = valid & ~(digit | comma | space);
  unsigned len;  // the block's bytes: [0, len)
  bool done;
  if (other) {
    len = static_cast<unsigned>(std::countr_zero(other));
    if (c.p[len] != ']') return Step::kScalar;  // a tab, a newline, anything
    done = true;
  } else {
    if (!comma) return Step::kScalar;
    len = 64 - static_cast<unsigned>(std::countl_zero(comma));  // through the last comma
    done = false;
  }
  const uint64_t block = (uint64_t{1} << len) - 1;  // len <= 63
  digit &= block;
  comma &= block;
  space &= block;
  const uint64_t tokens = digit | comma;
  if (!tokens) {  // spaces, then ']': only "[ ]" is a list
    if (!first || !done) return Step::kScalar;
    c.p += len + 1;
    return Step::kDone;
  }
  // The grammar: the first token and the one before ']' are numbers; after
  // a comma comes a number, after a number a comma (spaces between).
  const uint64_t ends = digit & ~(digit >> 1), starts = digit & ~(digit << 1);
  if (!(digit & tokens & (0 - tokens))) return Step::kScalar;
  if (done && !((digit >> (63 - std::countl_zero(tokens))) & 1)) return Step::kScalar;
  if (next_after_spaces(comma, space) & block & ~digit) return Step::kScalar;
  if (next_after_spaces(ends, space) & block & ~comma) return Step::kScalar;
  // The numbers, start and end paired in order.
  for (uint64_t s = starts, e = ends; s; s &= s - 1, e &= e - 1) {
    const unsigned at = static_cast<unsigned>(std::countr_zero(s));
    const unsigned n = static_cast<unsigned>(std::countr_zero(e)) - at + 1;
    const char* q = c.p + at;
    if (n > MaxDigits || (*q == '0' && n > 1)) return Step::kDecline;  // too long, or a leading zero
    // Up to 8 digits (almost every id and token): one load, moved to the
    // high bytes of the word.
    const uint64_t v = n <= 8 ? fold8((load8(q) ^ (kOnes * '0')) << (64 - 8 * n)) : digits_value(q, n);
    if (MaxValue < UINT64_MAX && v > MaxValue) return Step::kDecline;
    out.push_back(static_cast<T>(v));
  }
  c.p += len + (done ? 1 : 0);
  return done ? Step::kDone : Step::kMore;
}
#else
template <typename T, unsigned MaxDigits, uint64_t MaxValue>
Step scan_block(Cursor&, bool, std::vector<T>&) {
  return Step::kScalar;
}
#endif

}  // namespace detail

// '[' integers ']' with JSON whitespace, each at most MaxDigits digits (at
// most 19) and at most MaxValue, appended to `out`; a value past either
// declines the list. An empty list is accepted. Needs kScanPadding.
template <typename T, unsigned MaxDigits, uint64_t MaxValue>
inline bool scan_list(Cursor& c, std::vector<T>& out) {
  static_assert(MaxDigits <= 19);
  if (!c.eat('[')) return false;
  bool first = true;
  for (;;) {
    const detail::Step step = detail::scan_block<T, MaxDigits, MaxValue>(c, first, out);
    if (step == detail::Step::kDone) return true;
    if (step == detail::Step::kDecline) return false;
    if (step == detail::Step::kScalar) break;
    first = false;
  }
  // One token at a time, from just after the '[' or a comma.
  c.skip_ws();
  if (first && c.eat(']')) return true;
  for (;;) {
    uint64_t v = 0;
    if (!scan_uint(c, MaxDigits, v) || v > MaxValue) return false;
    out.push_back(static_cast<T>(v));
    c.skip_ws();
    if (c.eat(']')) return true;
    if (!c.eat(',')) return false;
    c.skip_ws();
  }
}

// Block identities: integers below 2^64 of at most 19 digits, appended.
inline bool scan_ids(Cursor& c, std::vector<uint64_t>& out) { return scan_list<uint64_t, 19, UINT64_MAX>(c, out); }

// Token ids: integers in [0, 2^31), appended.
inline bool scan_tokens(Cursor& c, std::vector<int32_t>& out) { return scan_list<int32_t, 10, 0x7fffffff>(c, out); }

}  // namespace prefixsim::json_scan
