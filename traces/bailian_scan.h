// The Bailian reader's fast path (bailian_format.cpp): a scanner for the
// plain rows of Alibaba's Qwen-Bailian traces ({"chat_id": 159,
// "parent_chat_id": 55, "timestamp": 61.114, "input_length": 521,
// "output_length": 132, "type": "text", "turn": 2, "hash_ids": [1089, 1090]},
// keys in any order, any JSON whitespace; type and turn optional). It fills
// the Request's lengths, arrival and ids in one pass and declines anything
// outside json_scan.h's subset, a key unknown, escaped or repeated, a type
// other than text, search, image and file, a missing column, an empty
// hash_ids and a chat that is its own parent. The reader then adds the
// session from its state, so either path gives the same Request or the
// same error (test_bailian_scan).
//
// Why: through simdjson's DOM the reader took ~0.5 GB of such rows per CPU
// second (`prefixsim bench trace_read`, the Mooncake trace's requests as
// Bailian rows).
#pragma once

#include <cstdint>
#include <string_view>

#include "sim/engine/request.h"

namespace prefixsim {

struct BailianRow {
  int64_t chat = 0;
  int64_t parent = -1;
};

// Fills out.arrival, prompt_len, output_len and hash_ids (`out` cleared by
// the caller) and `row`; returns false (contents unspecified) for a line
// outside the subset above.
bool scan_bailian_line(std::string_view line, Request& out, BailianRow& row);

}  // namespace prefixsim
