// The Mooncake reader's fast path: a scanner for the plain lines such
// traces are made of ({"timestamp": 27482, "input_length": 6955,
// "output_length": 52, "hash_ids": [46, 47, 48]}, keys in any order), which
// parses the numbers straight into the Request in one pass over the line.
// It accepts only a strict subset of JSON — the four keys once each, written
// without escapes; integers without sign, fraction, exponent or leading
// zeros, short enough not to overflow (timestamp up to 12 digits, lengths
// within the reader's bounds, ids up to 19 digits); JSON whitespace — and
// declines anything else (its pieces, shared with the other JSONL readers'
// fast paths, are in json_scan.h and json_scan_lists.h), which the simdjson path then parses, with its
// error messages for what is wrong. So a line gives the same Request, or the
// same error, on either path (test_mooncake_scan checks this against
// simdjson on mutated lines).
//
// Why not simdjson for every line: Mooncake lines are short (~250 bytes),
// so simdjson's per-document cost dominates; its DOM parser alone reads
// ~1 GB/s here, and its On-Demand API, compiled into this program for the
// baseline x86-64 of Debian's build, uses its scalar fallback kernel for the
// values and measured slower still (~0.6 GB/s).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace prefixsim {

struct MooncakeLine {
  uint64_t timestamp_ms = 0;
  int64_t input_length = 0;
  int64_t output_length = 0;
};

// Fills `line_out` and `ids` (cleared first) and returns true when `line` is
// in the subset above; returns false (contents unspecified) otherwise.
// `line` must be followed by json_scan::kScanPadding readable bytes.
// Lengths are checked against [1, max_tokens] and [0, max_tokens], and at
// least one id is required: a line outside those is declined too.
bool scan_mooncake_line(std::string_view line, int64_t max_tokens, MooncakeLine& line_out,
                        std::vector<uint64_t>& ids);

}  // namespace prefixsim
