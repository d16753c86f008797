// Benchmarks of trace reading, run by `prefixsim bench trace_read`.
#pragma once

#include <vector>

#include "sim/base/bench.h"

namespace prefixsim {

// "trace_read": MB of JSONL per CPU second reading the Mooncake conversation
// trace (../shared/traces/mooncake/conversation_trace.jsonl, left out when
// absent) and a generated trace of 19-digit hash ids, each plain, gzip and
// zstd (the compressed forms as CPU cost over the plain one).
std::vector<BenchCase> trace_bench_cases();

}  // namespace prefixsim
