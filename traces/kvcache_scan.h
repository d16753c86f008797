// The kv-cache-tester reader's fast path (kvcache_tester.cpp): a scanner for
// a plain conversation, as WEKA's and SemiAnalysis's JSONL lines and the
// bench's rows have it:
//   {"id": "conv-7", "block_size": 64, "hash_id_scope": "local",
//    "requests": [{"t": 0.5, "type": "n", "in": 700, "out": 40,
//                  "hash_ids": [1, 2, 3]}, ...]}
// keys in any order, any JSON whitespace, id, block_size and hash_id_scope
// optional. It reads the conversation's fields and every request's time,
// lengths and ids in one pass, and declines anything else: a key unknown,
// escaped or repeated (top-level metadata such as "models" or "totals"
// included), a subagent (type "subagent", or nested "requests"), a
// request missing t, in, out or hash_ids, and whatever lies outside
// json_scan.h's subset. The reader then checks what depends on its options
// and on the fields together (block size against --trace-block-size, ids
// against the blocks of "in", id ranges) and reads any conversation that
// fails them through simdjson's DOM, so either path gives the same
// requests or the same error (test_kvcache_scan).
//
// Why: through the DOM the reader took ~0.19 GB of such lines per CPU
// second (`prefixsim bench trace_read`, mooncake_kvcache), its tape
// building alone 40 % of that; the other readers' fast paths read 0.9-1.3.
// Ids are scanned straight into KvScanConversation::ids, from which the
// reader takes its delta encoding without copying them per request.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace prefixsim {

struct KvScanRequest {
  double t = 0;         // seconds from the conversation's start, as written
  int64_t in = 0;       // in [1, kMaxTokens]
  int64_t out = 0;      // in [0, kMaxTokens]
  uint32_t first_id = 0;  // its ids: KvScanConversation::ids[first_id, first_id + num_ids)
  uint32_t num_ids = 0;
};

struct KvScanConversation {
  bool has_id = false;
  std::string_view id;  // into the line
  bool has_block_size = false;
  int64_t block_size = 0;  // in [1, 2^20]
  bool global = false;     // hash_id_scope "global"
  std::vector<KvScanRequest> requests;  // in the line's order
  std::vector<uint64_t> ids;            // every request's, in order
};

// Fills `out` (cleared first) from `text`, which must be followed by
// json_scan::kScanPadding readable bytes; false (contents unspecified) for
// anything outside the subset above.
bool scan_kvcache_conversation(std::string_view text, KvScanConversation& out);

}  // namespace prefixsim
