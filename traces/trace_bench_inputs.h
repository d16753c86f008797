// The inputs of `prefixsim bench trace_read`, one per JSONL reader: a
// generated Mooncake trace of 19-digit ids, a generated native trace of
// token prompts, and given Mooncake requests (the conversation trace, or
// the 19-digit one read back) rewritten in the native, agentic-Mooncake,
// Bailian and kv-cache-tester JSONL forms. Rewriting the same requests makes
// the readers' MB per CPU second comparable: the same ids and lengths, each
// format's own keys and spacing. Everything here is deterministic.
#pragma once

#include <string>
#include <vector>

#include "sim/engine/request.h"

namespace prefixsim {

// A Mooncake-format trace (`requests` lines) whose hash ids are 19-digit
// integers, as a trace of raw 64-bit block hashes has (the Mooncake release
// renumbers its ids from 0, which keeps them short). Shaped like the
// conversation trace: conversations of 1-6 turns, each turn's ids the
// previous turn's plus 1-24 new ones.
std::string ids19_trace(int requests);

// Small requests with many distinct blocks, the common research case for
// cache mode: a Mooncake-format trace of 19-digit ids, one id per
// 16 tokens (replay it with --trace-block-size 16), ~90 prompt blocks a
// request. Conversations of 1-6 turns start on one of 2,000 shared system
// prompts (20-60 blocks; 90 % of picks heavy-tailed, popularity ~1/k^2,
// the rest uniform) plus 10-40 own blocks; each later turn adds 5-25, up to
// 160 blocks; outputs of 1-300 tokens. 50,000 requests: ~4.4 M prompt
// blocks, ~0.9 M distinct, 96 MB.
std::string small_requests_trace(int requests);

// A native trace with explicit "tokens" (what `prefixsim generate` writes
// for a token workload): conversations of 1-6 turns on one of 8 shared
// system prompts (256-1,279 tokens), each turn the previous prompt plus its
// output and 20-299 new tokens; token ids below 151,936 (Qwen's
// vocabulary), so most are 6 digits. Compact, as the native writer writes.
std::string native_tokens_trace(int requests);

// Each request's conversation parent, or -1: the latest earlier request
// that shares its longest prefix of at least two ids (Mooncake ids name a
// block with everything before it, so a shared id is a shared prefix; the
// first id alone is often a system prompt that many conversations share).
std::vector<int> conversation_parents(const std::vector<Request>& reqs);

// `reqs` (identity form, in arrival order) as the native writer writes them:
// id, t, hash_ids, block_size, prompt_len, output_len.
std::string as_native(const std::vector<Request>& reqs);
// As Dynamo's agentic rows: request_id, session_id, timestamp (ms, an
// integer), lengths, hash_ids; a later turn waits for its parent
// (wait_for, delay, tool_wait_ms), a first turn has prefix_reset.
std::string as_agentic_mooncake(const std::vector<Request>& reqs);
// As Bailian rows (chat_id, parent_chat_id, timestamp in s, type, turn):
// read with --trace-block-size set to the requests' block size.
std::string as_bailian(const std::vector<Request>& reqs);
// As WEKA-style kv-cache-tester JSONL: one line per conversation, its
// requests' t relative to its first; scope "local" when every id is below
// 2^40, else "global".
std::string as_kvcache_jsonl(const std::vector<Request>& reqs);

}  // namespace prefixsim
