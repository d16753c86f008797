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

// Peak resident set (VmHWM) of this process image, in MiB; getrusage's
// lifetime maximum where /proc is absent.
double peak_rss_mib();

// Set for a `prefixsim` child that a benchmark runs: a command that succeeds
// writes its peak_rss_mib() there, in kB (main.cpp), since the kernel's ru_maxrss
// of a child also counts the pages of the parent it was spawned from.
inline constexpr char kPeakRssFileEnv[] = "PREFIXSIM_PEAK_RSS_FILE";

// Seconds elapsed since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace prefixsim
