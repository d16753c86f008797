// Benchmarks of `prefixsim analyze` (registered with `prefixsim bench`).
#pragma once

#include <vector>

#include "sim/base/bench.h"

namespace prefixsim {

std::vector<BenchCase> analysis_bench_cases();

}  // namespace prefixsim
