// Benchmarks are registered here and run by `prefixsim bench [NAME...]`,
// which repeats each one and prints medians. A benchmark returns its metrics
// for one run; it prepares its own data outside the timed region.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace prefixsim {

struct BenchMetric {
  std::string name;   // e.g. "blocks_per_s"
  double value = 0;
  std::string unit;   // e.g. "blocks/s", "bytes/block"
};

struct BenchOptions {
  std::string shared_dir;  // ../shared (real traces), may not exist
  bool quick = false;      // smaller inputs (for CI smoke runs)
};

struct BenchCase {
  std::string name;
  std::string description;
  std::function<std::vector<BenchMetric>(const BenchOptions&)> run;
};

// Seconds elapsed since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace prefixsim
