// Benchmark of the time-driven engine: simulated requests per wall second on
// a synthetic stream (shared system prompts + unique user parts, Poisson-like
// arrivals) with a linear-cost executor defined in the .cpp. The Mooncake +
// cost-model version lives with `prefixsim replay`.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/base/bench.h"
#include "sim/kv/eviction_policy.h"

namespace prefixsim {

// make_policy is passed in because sim/ does not know the policy registry.
std::vector<BenchCase> engine_bench_cases(std::function<std::unique_ptr<EvictionPolicy>()> make_policy);

}  // namespace prefixsim
