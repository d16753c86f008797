// Benchmarks of the workload generators (registered with `prefixsim bench`).
#pragma once

#include <vector>

#include "sim/base/bench.h"

namespace prefixsim {

std::vector<BenchCase> workload_bench_cases();

}  // namespace prefixsim
