// Benchmarks of trace reading, run by `prefixsim bench trace_read`.
#pragma once

#include <string>
#include <vector>

#include "sim/base/bench.h"
#include "traces/trace_bench_inputs.h"  // ids19_trace, for replay_bench

namespace prefixsim {

// "trace_read": MB of JSONL per CPU second reading the Mooncake conversation
// trace (../shared/traces/mooncake/conversation_trace.jsonl, left out when
// absent) and a generated trace of 19-digit hash ids, each plain, gzip and
// zstd (the compressed forms as CPU cost over the plain one); the same
// requests through every other JSONL reader (native, agentic Mooncake,
// Bailian, kv-cache-tester: <trace>_<reader>_mb_per_cpu_s), and a native
// trace of token prompts (native_tokens_mb_per_cpu_s). Inputs:
// trace_bench_inputs.h.
std::vector<BenchCase> trace_bench_cases();

}  // namespace prefixsim
