// Opening a trace: detects its format and compression from its content and
// returns a streaming RequestSource (requests in arrival order, read lazily).
//
// Formats (DESIGN.md "File formats", ../shared/traces/README.md):
//   native          our JSONL: id, t (s), tokens | hash_ids (+block_size,
//                   prompt_len), output_len, output_tokens, session, salt,
//                   lora, mm
//   mooncake        JSONL: timestamp (ms), input_length, output_length,
//                   hash_ids of trace_block_size-token blocks (512)
//   agentic-mooncake  Dynamo's Mooncake rows with request_id and wait_for
//                   dependencies, honoured by the engine (agentic_mooncake_jsonl.cpp)
//   bailian         Qwen-Bailian JSONL: chat_id, parent_chat_id, timestamp
//                   (s), input_length, output_length, type, turn, hash_ids of
//                   16-token blocks (content hashes, chained like vLLM's)
//   kvcache-tester  a folder or tar archive of per-conversation JSON files
//                   (64-token hash ids local to each file), one such file,
//                   or a JSONL of them, one per line (WEKA / SemiAnalysis)
// Any JSONL or single file may be gzip- or zstd-compressed; a tar may be
// compressed with anything libarchive reads (xz, gzip, zstd, bzip2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/engine/request_source.h"

namespace prefixsim {

struct TraceOptions {
  std::string format = "auto";   // auto | native | mooncake | agentic-mooncake | bailian | kvcache-tester
  // Tokens per trace hash id. 0 = the format's default: 512 for Mooncake, 16 for Bailian,
  // the file's block_size (64) for kv-cache-tester; native lines with
  // hash_ids carry their own block_size and fall back to this.
  int32_t trace_block_size = 0;
  double conversation_rate = 1.0;  // conversations per second (kv-cache-tester)
  uint64_t seed = 1;             // conversation start times (kv-cache-tester)
  // Accept JSONL whose timestamps go backwards by sorting it (stably) by
  // arrival. This buffers the whole trace in memory: it is not streaming.
  bool sort = false;
  // Try each JSONL line with its format's fast path (a strict scanner of the
  // plain line form, json_scan.h) before simdjson. Either path gives the same
  // requests and errors; false (tests, benchmarks) reads every line with
  // simdjson.
  bool fast_scan = true;
};

// Opens `path` ("-" = stdin). Throws InputError ("FILE:LINE: message") for
// an unreadable or empty file, an unknown format, or bad options; bad data
// further in throws from the source's next().
std::unique_ptr<RequestSource> open_trace(const std::string& path, const TraceOptions& opts);

// The format names open_trace accepts in TraceOptions::format.
inline constexpr const char* kTraceFormats = "auto, native, mooncake, agentic-mooncake, bailian, kvcache-tester";

}  // namespace prefixsim
