// kv-cache-tester conversations (github callanjfox/kv-cache-tester): a folder
// or a tar archive of per-conversation JSON files, or a single such file.
// See ../shared/traces/README.md for the layout.
//
// Each file is one recorded conversation; its 64-token hash ids are local to
// the file ("hash_id_scope": "local"), so they are namespaced by file: id x
// of the k-th file becomes ((k + 1) << 40) | x, never equal to an id of any
// other file. A file's ids cover only its full blocks (len = floor(in / 64));
// the partial tail, whose content is unknown, gets a fresh id of its own.
// "subagent" entries hold nested requests, timed from the subagent's start
// (claude-code files) or on the parent's clock (WEKA captures: no nested
// time before the spawn); they share their parent file's hash scope.
//
// WEKA / SemiAnalysis coding-agent traces (github callanjfox/kv-cache-tester
// docs/trace_replay_tester.md; the Hugging Face datasets
// semianalysisai/cc-traces-weka-*, read by SemiAnalysisAI/aiperf's
// weka_trace.py) are the same JSON, published one conversation per line: a
// JSONL whose first line is a conversation object is read a line at a time,
// each line a conversation with its own hash scope ("local": namespaced per
// line like a folder's files; "global": shared across the whole corpus).
//
// Conversation starts follow a seeded Poisson process at
// TraceOptions::conversation_rate (the first at t = 0); the k-th conversation
// in path-name order takes the k-th start: sorted paths for a folder, sorted
// member names for a tar, so a folder and any tar of it replay the same
// (a tar is read once, front to back, before the first request: its members
// are kept zstd-compressed in memory, 9 MB for the claude-code archive). Requests keep
// their recorded offsets `t` from their conversation's start; the merged
// stream is in arrival order (ties: earlier conversation first).
//
// Memory: a conversation is read when the clock reaches its start and is
// dropped after its last request. While alive it is held delta-encoded (each
// request stores only the ids that differ from the request before it), so a
// conversation costs about its distinct ids, not its JSON: the claude-code
// archive (441 MB of JSON, 94 M ids as recorded) holds 3.4 M ids (27 MB)
// when every conversation overlaps, plus one file's JSON and its parse while
// it is read (the largest file is 4 MB). Reading the whole archive at 1
// conversation/s, where nearly all overlap, peaks at about 150 MB RSS. Memory
// grows with how many conversations overlap in time (rate x duration), not
// with the length of the trace. A finished conversation's object is kept for
// the next one when small (up to 64 of them, 4096 ids each: at most ~2 MB),
// so a trace of short conversations allocates little per conversation.
#pragma once

#include <memory>
#include <string>

#include "sim/engine/request_source.h"
#include "traces/byte_stream.h"
#include "traces/trace_reader.h"

namespace prefixsim {

// A folder: every regular *.json file below it, in sorted path order.
std::unique_ptr<RequestSource> open_kvcache_folder(const std::string& path, const TraceOptions& opts);
// A tar archive read through libarchive from `bytes` (any compression it
// knows: xz, gzip, zstd, bzip2, or none); `path` names it in messages.
std::unique_ptr<RequestSource> open_kvcache_tar(const std::string& path, std::unique_ptr<ByteStream> bytes,
                                                const TraceOptions& opts);
// A JSONL of conversations, one per line (WEKA / SemiAnalysis datasets;
// a one-line conversation file reads the same as open_kvcache_file).
std::unique_ptr<RequestSource> open_kvcache_jsonl(const std::string& path, std::unique_ptr<LineReader> lines,
                                                  const TraceOptions& opts);
// One conversation file (already decompressed).
std::unique_ptr<RequestSource> open_kvcache_file(const std::string& path, std::unique_ptr<ByteStream> bytes,
                                                 const TraceOptions& opts);

}  // namespace prefixsim
