// The workloads' own seeded PRNG and the distributions drawn from it.
//
// std::mt19937_64 is specified exactly, but std::*_distribution are not (each
// standard library draws differently), so generated traces would change with
// the compiler. Everything here is spelled out: xoshiro256** seeded through
// SplitMix64, and each distribution by its textbook method, so the same seed
// gives the same trace everywhere (up to libm's last-ulp behaviour of
// log/exp/cos, which glibc keeps stable).
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/base/mix.h"

namespace prefixsim::workloads {

inline uint64_t splitmix64(uint64_t& state) { return mix64(state += 0x9e3779b97f4a7c15ULL); }

// A stream seed derived from a base seed and a stream tag, so independent
// parts of a workload (arrivals, mixture choice, each component, each
// document) draw from independent streams and changing one leaves the others
// byte-identical.
inline uint64_t derive_seed(uint64_t seed, uint64_t tag) {
  uint64_t s = seed ^ (tag * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL);
  splitmix64(s);
  return splitmix64(s);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t sm = seed;
    for (auto& w : s_) w = splitmix64(sm);
  }

  // xoshiro256** (Blackman & Vigna).
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe to take the log of.
  double uniform01_open_low() { return 1.0 - uniform01(); }

  // Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n) {
    if (n <= 1) return 0;
    __uint128_t m = static_cast<__uint128_t>(next_u64()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<__uint128_t>(next_u64()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Uniform integer in [lo, hi] (lo <= hi).
  int64_t uniform_int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // Standard normal by Box-Muller (one value per call: no hidden cached
  // state, so the stream position depends only on the number of calls).
  double normal() {
    const double u1 = uniform01_open_low();
    const double u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

  double exponential(double mean) { return -mean * std::log(uniform01_open_low()); }

  // Gamma(shape, scale) by Marsaglia & Tsang (2000); shape < 1 via the
  // boost Gamma(shape+1) * U^(1/shape).
  double gamma(double shape, double scale) {
    if (shape < 1.0) {
      const double g = gamma(shape + 1.0, 1.0);
      return scale * g * std::pow(uniform01_open_low(), 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = uniform01_open_low();
      if (u < 1.0 - 0.0331 * x * x * x * x) return scale * d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return scale * d * v;
    }
  }

  // A token id: uniform over a Llama-3-sized vocabulary. Random 16-token
  // blocks from it never coincide by chance.
  int32_t token() { return static_cast<int32_t>(below(kVocab)); }
  static constexpr uint64_t kVocab = 128256;

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace prefixsim::workloads
