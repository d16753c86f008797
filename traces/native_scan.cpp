#include "traces/native_scan.h"

#include <limits>

#include "traces/json_scan_lists.h"
#include "traces/jsonl_source.h"

namespace prefixsim {
// Named, not anonymous: the unity build compiles the scanners into one
// translation unit, where their key enums and helpers would clash.
namespace native_scan_detail {

using namespace json_scan;

enum Key { kId, kT, kTokens, kIds, kBlockSize, kPromptLen, kOutLen, kOutTokens, kSession, kSalt, kLora, kOther };

Key key_of(std::string_view k) {
  switch (k.size()) {
    case 1: return k[0] == 't' ? kT : kOther;
    case 2: return is_key(k, "id") ? kId : kOther;
    case 4: return is_key(k, "salt") ? kSalt : is_key(k, "lora") ? kLora : kOther;
    case 6: return is_key(k, "tokens") ? kTokens : kOther;
    case 7: return is_key(k, "session") ? kSession : kOther;
    case 8: return is_key(k, "hash_ids") ? kIds : kOther;
    case 10:
      return is_key(k, "output_len")   ? kOutLen
             : is_key(k, "prompt_len") ? kPromptLen
             : is_key(k, "block_size") ? kBlockSize
                                       : kOther;
    case 13: return is_key(k, "output_tokens") ? kOutTokens : kOther;
    default: return kOther;  // "mm" among them: the simdjson path reads it
  }
}

// The key at c.p (just after its opening quote) as the native writer
// writes it: the name, its closing quote and the colon, in one comparison
// of known length, chosen by the first letter. kOther (the cursor where it
// was) for anything else: spaces before the colon, escapes, other keys.
Key writer_key(Cursor& c) {
  switch (*c.p) {  // the line's padding makes reading at the end safe
    case 'i': return c.eat_key("id\":") ? kId : kOther;
    case 't': return c.eat_key("t\":") ? kT : c.eat_key("tokens\":") ? kTokens : kOther;
    case 'h': return c.eat_key("hash_ids\":") ? kIds : kOther;
    case 'b': return c.eat_key("block_size\":") ? kBlockSize : kOther;
    case 'p': return c.eat_key("prompt_len\":") ? kPromptLen : kOther;
    case 'o': return c.eat_key("output_len\":") ? kOutLen : c.eat_key("output_tokens\":") ? kOutTokens : kOther;
    case 's': return c.eat_key("session\":") ? kSession : c.eat_key("salt\":") ? kSalt : kOther;
    case 'l': return c.eat_key("lora\":") ? kLora : kOther;
    default: return kOther;
  }
}

}  // namespace native_scan_detail

bool scan_native_line(std::string_view line, int32_t default_block_size, long line_no, Request& out) {
  using namespace native_scan_detail;
  Cursor c(line);
  int64_t block_size = 0, prompt_len = 0, output_len = 0, lora = 0;
  std::string_view s;
  const auto value = [&](Key key) {
    bool ok = false;
    switch (key) {
      case kId:
        ok = scan_quoted(c, s);
        if (ok) out.id.assign(s);
        break;
      case kT: {
        double t = 0;
        ok = scan_decimal(c, t) && t <= kMaxSeconds;
        out.arrival = ns_of_seconds(t);
        break;
      }
      case kTokens: ok = scan_tokens(c, out.tokens); break;
      case kOutTokens: ok = scan_tokens(c, out.output_tokens); break;
      case kIds:
        ok = scan_ids(c, out.hash_ids);
        break;
      case kBlockSize: ok = scan_bounded(c, 1, 1 << 20, block_size); break;
      case kPromptLen: ok = scan_bounded(c, 1, kMaxTokens, prompt_len); break;
      case kOutLen: ok = scan_bounded(c, 0, kMaxTokens, output_len); break;
      case kLora: ok = scan_bounded(c, 0, std::numeric_limits<int32_t>::max(), lora); break;
      case kSession:
        ok = scan_quoted(c, s);
        if (ok) out.session.assign(s);
        break;
      case kSalt:
        ok = scan_quoted(c, s);
        if (ok) out.extras.salt.assign(s);
        break;
      case kOther: break;
    }
    return ok;
  };
  unsigned seen = 0;
  if (!scan_object(c, kOther, writer_key, key_of, value, seen)) return false;
  if (!c.at_end()) return false;
  // The rules of NativeSource::parse (jsonl_formats.cpp), in its order; a
  // line that breaks one goes to that path for its message.
  const auto has = [seen](Key k) { return (seen & (1u << k)) != 0; };
  if (!has(kT) || has(kTokens) == has(kIds)) return false;
  if (!has(kId)) assign_decimal(out.id, line_no);
  if (has(kIds)) {
    if (!has(kBlockSize)) block_size = default_block_size;
    if (block_size <= 0 || out.hash_ids.size() >= 0xFFFFFF ||
        out.hash_ids.size() > static_cast<size_t>(kMaxTokens / block_size + 1))
      return false;
    out.trace_block_size = static_cast<int32_t>(block_size);
    out.prompt_len = has(kPromptLen) ? prompt_len : static_cast<int64_t>(out.hash_ids.size()) * block_size;
  } else {
    if (has(kBlockSize) || out.tokens.size() > static_cast<size_t>(kMaxTokens)) return false;
    out.prompt_len = has(kPromptLen) ? prompt_len : static_cast<int64_t>(out.tokens.size());
  }
  if (out.output_tokens.size() > static_cast<size_t>(kMaxTokens)) return false;
  if (has(kOutLen)) {
    if (has(kOutTokens) && out.output_tokens.size() != static_cast<size_t>(output_len)) return false;
    out.output_len = output_len;
  } else if (has(kOutTokens)) {
    out.output_len = static_cast<int64_t>(out.output_tokens.size());
  } else {
    return false;
  }
  if (has(kLora)) out.extras.lora = static_cast<int32_t>(lora);
  return true;
}

}  // namespace prefixsim
