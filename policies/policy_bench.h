// Benchmarks of the eviction policies (run by `prefixsim bench`):
//   compare_all         every registered policy x 8 pool sizes, cache mode, on the
//                       Mooncake conversation trace at block size 16, spread over
//                       one thread per core (what `prefixsim compare` does)
//   policy_access_cost  ns of thread CPU time per block access of each policy in one cache-mode
//                       replay of that trace, and the ratio to lru
// Both skip (return nothing) when ../shared/traces is absent.
#pragma once

#include <vector>

#include "sim/base/bench.h"

namespace prefixsim {

std::vector<BenchCase> policy_bench_cases();

}  // namespace prefixsim
