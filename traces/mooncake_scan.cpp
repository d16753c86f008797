#include "traces/mooncake_scan.h"

#include <cstring>

namespace prefixsim {
namespace {

struct Cursor {
  const char* p;
  const char* end;
  void skip_ws() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) ++p;
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
};

bool is_digit(char c) { return static_cast<unsigned>(c - '0') <= 9; }

// A JSON integer with no sign, fraction or exponent and at most max_digits
// digits (at most 19, so it fits in 64 bits); no leading zero but in "0".
// What follows is left to the grammar (a ',', ']', '}' or whitespace).
bool scan_uint(Cursor& c, long max_digits, uint64_t& v) {
  const char* const start = c.p;
  const char* q = start;
  const char* const stop = c.end - start > max_digits ? start + max_digits : c.end;
  uint64_t x = 0;
  while (q < stop && is_digit(*q)) x = x * 10 + static_cast<uint64_t>(*q++ - '0');
  if (q == start || (q < c.end && is_digit(*q))) return false;  // no digit, or too many
  if (*start == '0' && q - start > 1) return false;              // a leading zero: not JSON
  c.p = q;
  v = x;
  return true;
}

}  // namespace

bool scan_mooncake_line(std::string_view line, int64_t max_tokens, MooncakeLine& out, std::vector<uint64_t>& ids) {
  Cursor c{line.data(), line.data() + line.size()};
  ids.clear();
  c.skip_ws();
  if (!c.eat('{')) return false;
  unsigned seen = 0;
  for (;;) {
    c.skip_ws();
    if (!c.eat('"')) return false;
    unsigned key;
    if (c.eat_key("hash_ids\"")) key = 0;
    else if (c.eat_key("timestamp\"")) key = 1;
    else if (c.eat_key("input_length\"")) key = 2;
    else if (c.eat_key("output_length\"")) key = 3;
    else return false;  // another key, or one written with escapes
    if (seen & (1u << key)) return false;
    seen |= 1u << key;
    c.skip_ws();
    if (!c.eat(':')) return false;
    c.skip_ws();
    uint64_t v = 0;
    if (key == 0) {
      if (!c.eat('[')) return false;
      c.skip_ws();
      for (;;) {  // at least one id: an empty list is the slow path's error
        if (!scan_uint(c, 19, v)) return false;
        ids.push_back(v);
        c.skip_ws();
        if (c.eat(']')) break;
        if (!c.eat(',')) return false;
        c.skip_ws();
      }
    } else {
      // Lengths: 9 digits hold kMaxTokens; the timestamp: 12 digits of
      // milliseconds (31 years) stay far below seconds_to_ns's bound.
      if (!scan_uint(c, key == 1 ? 12 : 9, v)) return false;
      if (key == 1) out.timestamp_ms = v;
      else if (key == 2 && v >= 1 && v <= static_cast<uint64_t>(max_tokens)) out.input_length = static_cast<int64_t>(v);
      else if (key == 3 && v <= static_cast<uint64_t>(max_tokens)) out.output_length = static_cast<int64_t>(v);
      else return false;
    }
    c.skip_ws();
    if (c.eat('}')) break;
    if (!c.eat(',')) return false;
  }
  c.skip_ws();
  return c.p == c.end && seen == 15;
}

}  // namespace prefixsim
