// Latency statistics for reports: exact percentiles of a sample, a histogram
// with fixed (Prometheus-style) bucket bounds, and an accumulator that the
// engine feeds one request at a time with bounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace prefixsim {

// Percentiles use the nearest-rank definition: pX is the smallest sample v
// such that at least X % of the samples are <= v (index ceil(X/100 * n) - 1 of
// the sorted sample). Every reported percentile is therefore a value that was
// actually observed, never an interpolation between two. An empty sample
// summarises to all NaN (written as null in report.json).
struct LatencySummary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
  uint64_t count = 0;
};

// Sorts `values` in place and summarises them (nearest rank, see above).
LatencySummary summarize(std::vector<double>& values);
// Nearest-rank percentile of an already sorted sample; q in [0, 100].
double nearest_rank(const std::vector<double>& sorted, double q);
// Its rank (1-based) among n >= 1 samples: ceil(q / 100 * n), within [1, n].
uint64_t nearest_rank_of(double q, uint64_t n);

// vLLM's bucket bounds (seconds), from vllm/v1/metrics/loggers.py.
const std::vector<double>& vllm_ttft_buckets();           // time_to_first_token_seconds
const std::vector<double>& vllm_request_latency_buckets();  // e2e_request_latency / request_queue_time
const std::vector<double>& vllm_tpot_buckets();           // time_per_output_token_seconds

// A histogram with fixed upper bounds, as Prometheus exposes it. counts has one
// more entry than bounds: the last one is the +Inf bucket. Not cumulative.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  double sum = 0;
  uint64_t count = 0;

  Histogram() = default;
  explicit Histogram(std::vector<double> upper_bounds);
  void add(double v);  // a value v lands in the first bucket with v <= bound ("le")
  // Cumulative count of the bucket with index i (i == bounds.size() is +Inf).
  uint64_t cumulative(size_t i) const;
};

// One point of an empirical CDF: fraction of samples <= value.
struct CdfPoint {
  double value;
  double fraction;
};

// Collects one latency metric over a run. Memory is bounded: the first
// `exact_limit` samples are kept (8 bytes each) and summarised exactly; past
// that the samples fold into a log-linear histogram with 256 sub-buckets per
// power of two, whose percentiles are within 0.3 % (relative) of the exact
// ones, and the accumulator reports exact() == false. mean, max and the
// Prometheus histogram stay exact either way. Values are in seconds.
class LatencyAccumulator {
 public:
  static constexpr size_t kExactLimit = size_t{1} << 23;
  explicit LatencyAccumulator(std::vector<double> prom_bounds, size_t exact_limit = kExactLimit);
  void add(double seconds);

  uint64_t count() const { return count_; }
  bool exact() const { return !folded_; }
  // The summary in milliseconds, as report.json's latency_ms wants it.
  LatencySummary summary_ms() const;
  // The empirical CDF in milliseconds, downsampled to at most max_points
  // points (always including the minimum and the maximum).
  std::vector<CdfPoint> cdf_ms(size_t max_points = 200) const;
  const Histogram& prom_histogram() const { return prom_; }

 private:
  void fold();
  size_t log_bucket(double v) const;
  double log_bucket_value(size_t b) const;
  // Sorted (value, count) pairs of whatever representation is live.
  std::vector<std::pair<double, uint64_t>> sorted_counts() const;

  Histogram prom_;
  size_t exact_limit_;
  std::vector<double> samples_;
  std::vector<uint64_t> log_counts_;
  bool folded_ = false;
  uint64_t count_ = 0;
  double sum_ = 0, max_ = 0;
};

}  // namespace prefixsim
