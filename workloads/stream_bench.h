// Bounded-memory benchmark (registered with `prefixsim bench`): generated
// traces of growing size streamed through a cache-mode replay; peak RSS must
// stay flat as the trace grows.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/base/bench.h"
#include "sim/kv/eviction_policy.h"

namespace prefixsim {

std::vector<BenchCase> stream_bench_cases(std::function<std::unique_ptr<EvictionPolicy>()> make_policy);

}  // namespace prefixsim
