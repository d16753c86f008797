// The main job's benchmark: `prefixsim replay` of the Mooncake conversation
// trace at block size 16 on llama-3.1-8b / h100-sxm-80gb (the defaults), run
// as a child process so that its peak RSS and CPU time are its own: engine
// mode (simulated requests per CPU second, simulated time over wall time,
// peak RSS) and cache mode (blocks per CPU second, peak RSS). Everything the
// command does is timed: reading, hashing, the ideal hit rate, the
// simulation and writing the five outputs.
#pragma once

#include <vector>

#include "sim/base/bench.h"

namespace prefixsim::cli {

std::vector<BenchCase> replay_bench_cases();

}  // namespace prefixsim::cli
