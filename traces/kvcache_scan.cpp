#include "traces/kvcache_scan.h"

#include "traces/json_scan_lists.h"
#include "traces/jsonl_source.h"

namespace prefixsim {
// Named, not anonymous: the unity build compiles the scanners into one
// translation unit, where their key enums and helpers would clash.
namespace kvcache_scan_detail {

using namespace json_scan;

enum TopKey { kId, kBlockSize, kScope, kRequests, kTopOther };
enum ReqKey { kT, kType, kIn, kOut, kIds, kReqOther };

TopKey top_key(std::string_view k) {
  if (is_key(k, "requests")) return kRequests;
  if (is_key(k, "id")) return kId;
  if (is_key(k, "block_size")) return kBlockSize;
  if (is_key(k, "hash_id_scope")) return kScope;
  return kTopOther;
}

TopKey plain_top_key(Cursor& c) {
  switch (*c.p) {  // the padding makes reading at the end safe
    case 'r': return c.eat_key("requests\":") ? kRequests : kTopOther;
    case 'i': return c.eat_key("id\":") ? kId : kTopOther;
    case 'b': return c.eat_key("block_size\":") ? kBlockSize : kTopOther;
    case 'h': return c.eat_key("hash_id_scope\":") ? kScope : kTopOther;
    default: return kTopOther;
  }
}

ReqKey req_key(std::string_view k) {
  if (is_key(k, "hash_ids")) return kIds;
  if (is_key(k, "t")) return kT;
  if (is_key(k, "type")) return kType;
  if (is_key(k, "in")) return kIn;
  if (is_key(k, "out")) return kOut;
  return kReqOther;
}

ReqKey plain_req_key(Cursor& c) {
  switch (*c.p) {
    case 't': return c.eat_key("t\":") ? kT : c.eat_key("type\":") ? kType : kReqOther;
    case 'i': return c.eat_key("in\":") ? kIn : kReqOther;
    case 'o': return c.eat_key("out\":") ? kOut : kReqOther;
    case 'h': return c.eat_key("hash_ids\":") ? kIds : kReqOther;
    default: return kReqOther;
  }
}

// One request object; its ids appended to out.ids.
bool scan_request(Cursor& c, KvScanConversation& out) {
  KvScanRequest r;
  std::string_view s;
  const auto value = [&](ReqKey key) {
    switch (key) {
      case kT: return scan_decimal(c, r.t) && r.t <= kMaxSeconds;
      case kType: return scan_quoted(c, s) && s != "subagent";
      case kIn: return scan_bounded(c, 1, kMaxTokens, r.in);
      case kOut: return scan_bounded(c, 0, kMaxTokens, r.out);
      case kIds: {  // appended in place: a declined list declines the conversation
        const size_t first = out.ids.size();
        if (!scan_ids(c, out.ids) || out.ids.size() >= UINT32_MAX) return false;
        r.first_id = static_cast<uint32_t>(first);
        r.num_ids = static_cast<uint32_t>(out.ids.size() - first);
        return true;
      }
      case kReqOther: return false;
    }
    return false;
  };
  unsigned seen = 0;
  if (!scan_object(c, kReqOther, plain_req_key, req_key, value, seen)) return false;
  constexpr unsigned kRequired = 1u << kT | 1u << kIn | 1u << kOut | 1u << kIds;
  if ((seen & kRequired) != kRequired) return false;
  out.requests.push_back(r);
  return true;
}

bool scan_requests(Cursor& c, KvScanConversation& out) {
  if (!c.eat('[')) return false;
  c.skip_ws();
  if (c.eat(']')) return true;
  for (;;) {
    if (!scan_request(c, out)) return false;
    c.skip_ws();
    if (c.eat(']')) return true;
    if (!c.eat(',')) return false;
    c.skip_ws();
  }
}

}  // namespace kvcache_scan_detail

bool scan_kvcache_conversation(std::string_view text, KvScanConversation& out) {
  using namespace kvcache_scan_detail;
  out.has_id = out.has_block_size = out.global = false;
  out.requests.clear();
  out.ids.clear();
  Cursor c(text);
  std::string_view s;
  const auto value = [&](TopKey key) {
    switch (key) {
      case kId: return out.has_id = scan_quoted(c, out.id);
      case kBlockSize: return out.has_block_size = scan_bounded(c, 1, 1 << 20, out.block_size);
      case kScope:
        if (!scan_quoted(c, s) || (s != "local" && s != "global")) return false;
        out.global = s == "global";
        return true;
      case kRequests: return scan_requests(c, out);
      case kTopOther: return false;
    }
    return false;
  };
  unsigned seen = 0;
  if (!scan_object(c, kTopOther, plain_top_key, top_key, value, seen)) return false;
  return c.at_end() && (seen & (1u << kRequests));
}

}  // namespace prefixsim
