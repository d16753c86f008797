// Benchmarks of trace reading, run by `prefixsim bench trace_read`.
#pragma once

#include <string>
#include <vector>

#include "sim/base/bench.h"

namespace prefixsim {

// "trace_read": MB of JSONL per CPU second reading the Mooncake conversation
// trace (../shared/traces/mooncake/conversation_trace.jsonl, left out when
// absent) and a generated trace of 19-digit hash ids, each plain, gzip and
// zstd (the compressed forms as CPU cost over the plain one).
std::vector<BenchCase> trace_bench_cases();

// A Mooncake-format trace (`requests` lines) whose hash ids are 19-digit
// integers, as a trace of raw 64-bit block hashes has (the Mooncake release
// renumbers its ids from 0, which keeps them short). Shaped like the
// conversation trace: conversations of 1-6 turns, each turn's ids the
// previous turn's plus 1-24 new ones. Deterministic.
std::string ids19_trace(int requests);

}  // namespace prefixsim
