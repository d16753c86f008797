#include "traces/mooncake_scan.h"

#include "traces/json_scan_lists.h"

namespace prefixsim {
using json_scan::Cursor;
using json_scan::scan_ids;
using json_scan::scan_uint;

bool scan_mooncake_line(std::string_view line, int64_t max_tokens, MooncakeLine& out, std::vector<uint64_t>& ids) {
  Cursor c(line);
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
      // At least one id: an empty list is the slow path's error, and so is
      // a list of 2^24 - 1 or more ("too many ids").
      if (!scan_ids(c, ids) || ids.empty() || ids.size() >= 0xFFFFFF) return false;
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
