// Benchmarks of the block manager (issue: foundation): ops/s of an operation
// script, blocks/s of lookup + allocate + free, metadata bytes per block.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/base/bench.h"
#include "sim/kv/eviction_policy.h"

namespace prefixsim {

// make_policy is passed in because sim/ does not know the policy registry.
std::vector<BenchCase> block_bench_cases(std::function<std::unique_ptr<EvictionPolicy>()> make_policy);

}  // namespace prefixsim
