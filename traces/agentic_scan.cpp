#include "traces/agentic_scan.h"

#include "traces/json_scan_lists.h"
#include "traces/jsonl_source.h"

namespace prefixsim {
// Named, not anonymous: the unity build compiles the scanners into one
// translation unit, where their key enums and helpers would clash.
namespace agentic_scan_detail {

using namespace json_scan;

enum Key {
  kId, kSession, kTimestamp, kInput, kOutput, kIds, kWaitFor, kBranches, kReset, kDelay, kToolWait, kOutTokens,
  kOther
};

Key key_of(std::string_view k) {
  if (is_key(k, "hash_ids")) return kIds;
  if (is_key(k, "request_id")) return kId;
  if (is_key(k, "session_id")) return kSession;
  if (is_key(k, "timestamp")) return kTimestamp;
  if (is_key(k, "input_length")) return kInput;
  if (is_key(k, "output_length")) return kOutput;
  if (is_key(k, "wait_for")) return kWaitFor;
  if (is_key(k, "branches")) return kBranches;
  if (is_key(k, "prefix_reset")) return kReset;
  if (is_key(k, "delay") || is_key(k, "delay_ms")) return kDelay;
  if (is_key(k, "tool_wait_ms")) return kToolWait;
  if (is_key(k, "output_token_ids")) return kOutTokens;
  return kOther;
}

// The key at c.p (just after its opening quote) written plainly: the name,
// its closing quote and the colon, in one comparison of known length
// chosen by the first letter; kOther (cursor unmoved) for anything else.
Key plain_key(Cursor& c) {
  switch (*c.p) {  // the line's padding makes reading at the end safe
    case 'r': return c.eat_key("request_id\":") ? kId : kOther;
    case 's': return c.eat_key("session_id\":") ? kSession : kOther;
    case 't': return c.eat_key("timestamp\":") ? kTimestamp : c.eat_key("tool_wait_ms\":") ? kToolWait : kOther;
    case 'i': return c.eat_key("input_length\":") ? kInput : kOther;
    case 'o':
      return c.eat_key("output_length\":") ? kOutput : c.eat_key("output_token_ids\":") ? kOutTokens : kOther;
    case 'h': return c.eat_key("hash_ids\":") ? kIds : kOther;
    case 'w': return c.eat_key("wait_for\":") ? kWaitFor : kOther;
    case 'b': return c.eat_key("branches\":") ? kBranches : kOther;
    case 'p': return c.eat_key("prefix_reset\":") ? kReset : kOther;
    case 'd': return c.eat_key("delay\":") || c.eat_key("delay_ms\":") ? kDelay : kOther;
    default: return kOther;
  }
}

// '[' strings ']', each handed to `take`.
template <typename Take>
bool scan_strings(Cursor& c, Take&& take) {
  if (!c.eat('[')) return false;
  c.skip_ws();
  if (c.eat(']')) return true;
  for (;;) {
    std::string_view s;
    if (!scan_quoted(c, s)) return false;
    take(s);
    c.skip_ws();
    if (c.eat(']')) return true;
    if (!c.eat(',')) return false;
    c.skip_ws();
  }
}

bool scan_bool(Cursor& c) { return c.eat_key("true") || c.eat_key("false"); }

}  // namespace agentic_scan_detail

bool scan_agentic_line(std::string_view line, Request& out, AgenticRow& row) {
  using namespace agentic_scan_detail;
  Cursor c(line);
  std::string_view s;
  const auto value = [&](Key key) {
    bool ok = false;
    switch (key) {
      case kId:
        ok = scan_quoted(c, s) && !s.empty();
        if (ok) out.id.assign(s);
        break;
      case kSession:
        ok = scan_quoted(c, s);
        if (ok) out.session.assign(s);
        break;
      case kTimestamp: ok = scan_decimal(c, row.timestamp_ms); break;
      case kInput: ok = scan_bounded(c, 1, kMaxTokens, out.prompt_len); break;
      case kOutput: ok = scan_bounded(c, 0, kMaxTokens, out.output_len); break;
      case kIds: ok = scan_ids(c, out.hash_ids) && out.hash_ids.size() < 0xFFFFFF; break;
      case kWaitFor: ok = scan_strings(c, [&out](std::string_view w) { out.wait_for.emplace_back(w); }); break;
      case kBranches: ok = scan_strings(c, [](std::string_view) {}); break;
      case kReset: ok = scan_bool(c); break;
      case kDelay: ok = scan_decimal(c, row.delay_ms); break;
      case kToolWait: ok = scan_decimal(c, row.tool_wait_ms); break;
      case kOutTokens: ok = scan_tokens(c, out.output_tokens) && out.output_tokens.size() <= static_cast<size_t>(kMaxTokens); break;
      case kOther: break;
    }
    return ok;
  };
  unsigned seen = 0;
  if (!scan_object(c, kOther, plain_key, key_of, value, seen)) return false;
  row.output_tokens = seen & (1u << kOutTokens);
  constexpr unsigned kRequired = 1u << kId | 1u << kTimestamp | 1u << kInput | 1u << kOutput | 1u << kIds;
  return c.at_end() && (seen & kRequired) == kRequired;
}

}  // namespace prefixsim
