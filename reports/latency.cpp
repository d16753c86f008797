#include "reports/latency.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace prefixsim {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Log-linear fold: 2^kMinExp .. 2^kMaxExp seconds (about 1e-12 s .. 1e9 s),
// kSub sub-buckets per power of two. Bucket 0 holds values <= 0.
constexpr int kMinExp = -40, kMaxExp = 30, kSub = 256;
}  // namespace

uint64_t nearest_rank_of(double q, uint64_t n) {
  auto k = static_cast<uint64_t>(std::ceil(q / 100.0 * static_cast<double>(n)));
  return std::clamp<uint64_t>(k, 1, n);
}

double nearest_rank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  return sorted[nearest_rank_of(q, sorted.size()) - 1];
}

LatencySummary summarize(std::vector<double>& values) {
  LatencySummary s;
  s.count = values.size();
  if (values.empty()) {
    s.mean = s.p50 = s.p90 = s.p95 = s.p99 = s.max = kNaN;
    return s;
  }
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;  // ascending order: deterministic and a little more accurate
  s.mean = sum / static_cast<double>(values.size());
  s.p50 = nearest_rank(values, 50);
  s.p90 = nearest_rank(values, 90);
  s.p95 = nearest_rank(values, 95);
  s.p99 = nearest_rank(values, 99);
  s.max = values.back();
  return s;
}

const std::vector<double>& vllm_ttft_buckets() {
  static const std::vector<double> b = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,   0.25,   0.5,   0.75,
                                        1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  return b;
}

const std::vector<double>& vllm_request_latency_buckets() {
  static const std::vector<double> b = {0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,   5.0,   10.0,  15.0,  20.0,
                                        30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return b;
}

const std::vector<double>& vllm_tpot_buckets() {
  static const std::vector<double> b = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                        0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
  return b;
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void Histogram::add(double v) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  ++counts[i];
  sum += v;
  ++count;
}

uint64_t Histogram::cumulative(size_t i) const {
  uint64_t c = 0;
  for (size_t k = 0; k <= i && k < counts.size(); ++k) c += counts[k];
  return c;
}

LatencyAccumulator::LatencyAccumulator(std::vector<double> prom_bounds, size_t exact_limit)
    : prom_(std::move(prom_bounds)), exact_limit_(exact_limit) {}

void LatencyAccumulator::add(double seconds) {
  prom_.add(seconds);
  ++count_;
  sum_ += seconds;
  max_ = count_ == 1 ? seconds : std::max(max_, seconds);
  if (folded_) {
    ++log_counts_[log_bucket(seconds)];
    return;
  }
  samples_.push_back(seconds);
  if (samples_.size() > exact_limit_) fold();
}

size_t LatencyAccumulator::log_bucket(double v) const {
  if (!(v > 0)) return 0;
  int e = 0;
  const double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  if (e <= kMinExp) return 1;
  if (e > kMaxExp) return static_cast<size_t>(kMaxExp - kMinExp) * kSub;
  const auto sub = std::min(kSub - 1, static_cast<int>((m - 0.5) * 2 * kSub));
  return 1 + static_cast<size_t>(e - kMinExp - 1) * kSub + static_cast<size_t>(sub);
}

double LatencyAccumulator::log_bucket_value(size_t b) const {
  if (b == 0) return 0;
  const size_t i = b - 1;
  const int e = kMinExp + 1 + static_cast<int>(i / kSub);
  const double m = 0.5 + (static_cast<double>(i % kSub) + 0.5) / (2.0 * kSub);  // bucket midpoint
  return std::ldexp(m, e);
}

void LatencyAccumulator::fold() {
  log_counts_.assign(static_cast<size_t>(kMaxExp - kMinExp) * kSub + 1, 0);
  for (double v : samples_) ++log_counts_[log_bucket(v)];
  std::vector<double>().swap(samples_);
  folded_ = true;
}

std::vector<std::pair<double, uint64_t>> LatencyAccumulator::sorted_counts() const {
  std::vector<std::pair<double, uint64_t>> out;
  if (!folded_) {
    std::vector<double> s = samples_;
    std::sort(s.begin(), s.end());
    for (double v : s) {
      if (!out.empty() && out.back().first == v)
        ++out.back().second;
      else
        out.emplace_back(v, 1);
    }
    return out;
  }
  for (size_t b = 0; b < log_counts_.size(); ++b)
    if (log_counts_[b]) out.emplace_back(std::min(log_bucket_value(b), max_), log_counts_[b]);
  return out;
}

LatencySummary LatencyAccumulator::summary_ms() const {
  LatencySummary s;
  s.count = count_;
  if (count_ == 0) {
    s.mean = s.p50 = s.p90 = s.p95 = s.p99 = s.max = kNaN;
    return s;
  }
  if (!folded_) {
    std::vector<double> v = samples_;
    s = summarize(v);
  } else {
    const auto sc = sorted_counts();
    auto pct = [&](double q) {
      const uint64_t k = nearest_rank_of(q, count_);
      uint64_t seen = 0;
      for (const auto& [v, c] : sc)
        if ((seen += c) >= k) return v;
      return max_;
    };
    s.mean = sum_ / static_cast<double>(count_);
    s.p50 = pct(50);
    s.p90 = pct(90);
    s.p95 = pct(95);
    s.p99 = pct(99);
    s.max = max_;
  }
  s.count = count_;
  for (double* x : {&s.mean, &s.p50, &s.p90, &s.p95, &s.p99, &s.max}) *x *= 1000.0;
  return s;
}

std::vector<CdfPoint> LatencyAccumulator::cdf_ms(size_t max_points) const {
  std::vector<CdfPoint> out;
  if (count_ == 0 || max_points < 2) return out;
  const auto sc = sorted_counts();
  // Walk the distinct values; keep a point whenever the cumulative fraction
  // has advanced by at least 1/(max_points-1) since the last kept one, and
  // always keep the first and the last, so steps at the tails survive.
  const double step = 1.0 / static_cast<double>(max_points - 1);
  uint64_t seen = 0;
  double last_kept = -1;
  for (size_t i = 0; i < sc.size(); ++i) {
    seen += sc[i].second;
    const double f = static_cast<double>(seen) / static_cast<double>(count_);
    const bool last = i + 1 == sc.size();
    if (i == 0 || last || f - last_kept >= step) {
      if (out.size() + 1 >= max_points && !last) continue;
      out.push_back({sc[i].first * 1000.0, f});
      last_kept = f;
    }
  }
  return out;
}

}  // namespace prefixsim
