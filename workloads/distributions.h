// Distributions a workload YAML can name: lengths and think times (fixed,
// uniform, lognormal, empirical), arrival processes (Poisson, Gamma, fixed
// rate) and a Zipf popularity law. All draw from workloads::Rng only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/config_node.h"
#include "workloads/rng.h"

namespace prefixsim::workloads {

// A real-valued distribution, clamped to [min, max].
//   fixed:     {dist: fixed, value: V}        (or just the number V)
//   uniform:   {dist: uniform, min: A, max: B}
//   lognormal: {dist: lognormal, mean: M, sigma: S [, min, max]}  (M is the
//              distribution's arithmetic mean; S the sigma of its log)
//   empirical: {dist: empirical, values: [..]} or {dist: empirical, trace: FILE,
//              field: prompt|output}: a uniformly drawn recorded value
class Dist {
 public:
  enum class Kind { fixed, uniform, lognormal, empirical };

  static Dist fixed(double v);
  static Dist uniform(double lo, double hi);
  static Dist lognormal(double mean, double sigma, double lo, double hi);
  static Dist empirical(std::vector<double> values);
  // `lo`/`hi` bound what the key may hold (e.g. lengths are >= 0).
  static Dist parse(const ConfigNode& n, double lo, double hi);

  double sample(Rng& rng) const;
  // Rounded to an integer length, at least `floor`.
  int64_t sample_int(Rng& rng, int64_t floor = 0) const;
  // The mean of the (clamped) distribution, exactly where it is cheap; the
  // unclamped lognormal mean otherwise. For documentation and tests.
  double mean() const;
  Kind kind() const { return kind_; }

 private:
  Kind kind_ = Kind::fixed;
  double a_ = 0, b_ = 0;           // fixed: a; uniform: [a, b]; lognormal: mu, sigma
  double lo_ = 0, hi_ = 0;         // clamp
  std::vector<double> values_;     // empirical
};

// Inter-arrival gaps of an arrival process, `rate` events per second:
//   poisson: exponential gaps; gamma: Gamma gaps with coefficient of variation
//   `cv` (cv > 1 is burstier than Poisson); fixed: exactly 1/rate apart.
struct Arrival {
  enum class Kind { poisson, gamma, fixed };
  Kind kind = Kind::poisson;
  double rate = 1.0;
  double cv = 1.0;

  static Arrival parse(const ConfigNode& n);
  double next_gap(Rng& rng) const;
  static const char* name(Kind k);
};

// Zipf law over n items: P(i) proportional to 1 / (i+1)^s; item 0 is the most
// popular. Sampling is a binary search of the precomputed CDF.
class Zipf {
 public:
  Zipf() = default;
  Zipf(uint64_t n, double s);
  uint64_t sample(Rng& rng) const;
  uint64_t size() const { return cdf_.size(); }
  double probability(uint64_t i) const;

 private:
  std::vector<double> cdf_;
};

}  // namespace prefixsim::workloads
