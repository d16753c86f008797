#include "traces/bailian_scan.h"

#include "traces/json_scan_lists.h"
#include "traces/jsonl_source.h"

namespace prefixsim {
// Named, not anonymous: the unity build compiles the scanners into one
// translation unit, where their key enums and helpers would clash.
namespace bailian_scan_detail {

using namespace json_scan;

enum Key { kChat, kParent, kTimestamp, kInput, kOutput, kType, kTurn, kIds, kOther };

Key key_of(std::string_view k) {
  if (is_key(k, "hash_ids")) return kIds;
  if (is_key(k, "chat_id")) return kChat;
  if (is_key(k, "parent_chat_id")) return kParent;
  if (is_key(k, "timestamp")) return kTimestamp;
  if (is_key(k, "input_length")) return kInput;
  if (is_key(k, "output_length")) return kOutput;
  if (is_key(k, "type")) return kType;
  if (is_key(k, "turn")) return kTurn;
  return kOther;
}

// The key at c.p (just after its opening quote) written plainly: the name,
// its closing quote and the colon, in one comparison of known length
// chosen by the first letter; kOther (cursor unmoved) for anything else.
Key plain_key(Cursor& c) {
  switch (*c.p) {  // the line's padding makes reading at the end safe
    case 'c': return c.eat_key("chat_id\":") ? kChat : kOther;
    case 'p': return c.eat_key("parent_chat_id\":") ? kParent : kOther;
    case 't':
      return c.eat_key("timestamp\":") ? kTimestamp : c.eat_key("type\":") ? kType : c.eat_key("turn\":") ? kTurn : kOther;
    case 'i': return c.eat_key("input_length\":") ? kInput : kOther;
    case 'o': return c.eat_key("output_length\":") ? kOutput : kOther;
    case 'h': return c.eat_key("hash_ids\":") ? kIds : kOther;
    default: return kOther;
  }
}

// An integer in [lo, INT64_MAX] (lo >= -1): at most 19 digits, and those
// past INT64_MAX (simdjson's UINT64, an error there) declined.
bool scan_id(Cursor& c, int64_t lo, int64_t& v) {
  const bool negative = c.eat('-');
  uint64_t x = 0;
  if (!scan_uint(c, 19, x) || x > static_cast<uint64_t>(INT64_MAX)) return false;
  v = negative ? -static_cast<int64_t>(x) : static_cast<int64_t>(x);
  return !(negative && x == 0) && v >= lo;
}

}  // namespace bailian_scan_detail

bool scan_bailian_line(std::string_view line, Request& out, BailianRow& row) {
  using namespace bailian_scan_detail;
  Cursor c(line);
  std::string_view s;
  const auto value = [&](Key key) {
    bool ok = false;
    int64_t turn = 0;
    double t = 0;
    switch (key) {
      case kChat: ok = scan_id(c, 0, row.chat); break;
      case kParent: ok = scan_id(c, -1, row.parent); break;
      case kTimestamp:
        ok = scan_decimal(c, t) && t <= kMaxSeconds;
        out.arrival = ns_of_seconds(t);
        break;
      case kInput: ok = scan_bounded(c, 1, kMaxTokens, out.prompt_len); break;
      case kOutput: ok = scan_bounded(c, 0, kMaxTokens, out.output_len); break;
      case kType:
        ok = scan_quoted(c, s) && (s == "text" || s == "search" || s == "image" || s == "file");
        break;
      case kTurn: ok = scan_id(c, 1, turn); break;
      case kIds: ok = scan_ids(c, out.hash_ids) && !out.hash_ids.empty() && out.hash_ids.size() < 0xFFFFFF; break;
      case kOther: break;
    }
    return ok;
  };
  unsigned seen = 0;
  if (!scan_object(c, kOther, plain_key, key_of, value, seen)) return false;
  constexpr unsigned kRequired =
      1u << kChat | 1u << kParent | 1u << kTimestamp | 1u << kInput | 1u << kOutput | 1u << kIds;
  return c.at_end() && (seen & kRequired) == kRequired && row.parent != row.chat;
}

}  // namespace prefixsim
