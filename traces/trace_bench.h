// Benchmarks of trace reading, run by `prefixsim bench trace_read`.
#pragma once

#include <vector>

#include "sim/base/bench.h"

namespace prefixsim {

// "trace_read": MB/s and requests/s reading the Mooncake conversation trace
// (../shared/traces/mooncake/conversation_trace.jsonl); no metrics when the
// file is absent.
std::vector<BenchCase> trace_bench_cases();

}  // namespace prefixsim
