// The native reader's fast path: a scanner for the lines `prefixsim
// generate` and the native writer produce (id, t, tokens or hash_ids with
// block_size and prompt_len, output_len, and optionally output_tokens,
// session, salt, lora; keys in any order, any JSON whitespace), which
// fills the Request in one pass over the line, numbers straight into its
// vectors. It accepts only what json_scan.h's pieces accept, each key once,
// and declines everything else: "mm" (rare, and its hex hashes and sorting
// are not worth a second implementation), unknown or escaped keys, values
// of the wrong type or out of range, and lines that break one of the
// reader's rules (no t, both or neither of tokens and hash_ids, block_size
// with tokens, output_tokens disagreeing with output_len). The simdjson
// path then reads the line and reports what is wrong, so a line gives the
// same Request or the same error on either path (test_native_scan checks
// this on the fixtures and on mutated lines).
//
// Why: through simdjson's DOM the native reader took ~0.47-0.49 GB of JSONL
// per CPU second (`prefixsim bench trace_read`: the Mooncake trace's
// requests in native form, and token prompts): simdjson writes each number
// to its tape, then the reader walks the tape and copies it. The scanner
// reads each number once, straight into the Request: 0.94 and 1.09 GB/s.
#pragma once

#include <cstdint>
#include <string_view>

#include "sim/engine/request.h"

namespace prefixsim {

// Fills `out` (cleared by the caller) from `line` and returns true when the
// line is in the subset above; returns false (`out` unspecified) otherwise.
// `default_block_size`: the block size of hash_ids without "block_size"
// (--trace-block-size; 0 = none, and such a line is declined); `line_no`:
// the request id of a line without "id", as the reader names it.
bool scan_native_line(std::string_view line, int32_t default_block_size, long line_no, Request& out);

}  // namespace prefixsim
