// The agentic-Mooncake reader's fast path (agentic_mooncake_jsonl.cpp): a
// scanner for the plain rows Dynamo's converter writes (request_id,
// session_id, timestamp, input_length, output_length, hash_ids, and
// optionally wait_for, delay or delay_ms, tool_wait_ms, branches,
// prefix_reset, output_token_ids; keys in any order, any JSON whitespace).
// It fills the Request's fields in one pass and declines the rest to the
// simdjson path: Dynamo's scheduling hints (priority, strict_priority,
// policy_class, request_kind, tool_events), unknown, escaped or repeated
// keys, values of the wrong type or out of range (json_scan.h's subset),
// a missing column and an empty request_id. The reader then applies the
// row's rules and its state (earlier request_ids) and declines a row that
// breaks one, so either path gives the same Request or the same error
// (test_agentic_scan).
//
// Why: through simdjson's DOM the reader took ~0.45 GB of such rows per
// CPU second (`prefixsim bench trace_read`, the Mooncake trace's requests
// as agentic rows); a fifth of its time then went to its set of earlier
// request ids, now string_set.h.
#pragma once

#include <string_view>

#include "sim/engine/request.h"

namespace prefixsim {

// What a row holds beyond the Request's own fields.
struct AgenticRow {
  double timestamp_ms = 0;
  double delay_ms = 0;       // "delay" or "delay_ms"
  double tool_wait_ms = 0;
  bool output_tokens = false;  // "output_token_ids" was given
};

// Fills out.id, session, prompt_len, output_len, hash_ids, wait_for and
// output_tokens (`out` cleared by the caller) and `row`; returns false
// (contents unspecified) for a line outside the subset above.
bool scan_agentic_line(std::string_view line, Request& out, AgenticRow& row);

}  // namespace prefixsim
