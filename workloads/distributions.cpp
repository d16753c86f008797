#include "workloads/distributions.h"

#include <algorithm>
#include <cmath>

#include "sim/base/error.h"
#include "traces/trace_reader.h"

namespace prefixsim::workloads {

namespace {
// Prompt or output lengths of every request of a trace (any format the
// readers know), for empirical distributions.
std::vector<double> trace_lengths(const std::string& path, bool prompt) {
  auto src = open_trace(path, TraceOptions{});
  std::vector<double> out;
  Request r;
  while (src->next(r)) out.push_back(static_cast<double>(prompt ? r.prompt_len : r.output_len));
  return out;
}
}  // namespace

Dist Dist::fixed(double v) {
  Dist d;
  d.kind_ = Kind::fixed;
  d.a_ = d.lo_ = d.hi_ = v;
  return d;
}

Dist Dist::uniform(double lo, double hi) {
  Dist d;
  d.kind_ = Kind::uniform;
  d.a_ = d.lo_ = lo;
  d.b_ = d.hi_ = hi;
  return d;
}

Dist Dist::lognormal(double mean, double sigma, double lo, double hi) {
  Dist d;
  d.kind_ = Kind::lognormal;
  d.a_ = std::log(mean) - 0.5 * sigma * sigma;  // mu such that E[X] = mean
  d.b_ = sigma;
  d.lo_ = lo;
  d.hi_ = hi;
  return d;
}

Dist Dist::empirical(std::vector<double> values) {
  Dist d;
  d.kind_ = Kind::empirical;
  d.values_ = std::move(values);
  d.lo_ = *std::min_element(d.values_.begin(), d.values_.end());
  d.hi_ = *std::max_element(d.values_.begin(), d.values_.end());
  return d;
}

Dist Dist::parse(const ConfigNode& n, double lo, double hi) {
  if (n.is_scalar()) return fixed(n.as_double(lo, hi));
  if (!n.is_map()) n.fail("expected a number or a distribution {dist: ...}");
  const std::string kind = n.require("dist").as_string();
  if (kind == "fixed") {
    n.expect_map({"dist", "value"});
    return fixed(n.require("value").as_double(lo, hi));
  }
  if (kind == "uniform") {
    n.expect_map({"dist", "min", "max"});
    const double a = n.require("min").as_double(lo, hi), b = n.require("max").as_double(lo, hi);
    if (b < a) n.require("max").fail("max is below min");
    return uniform(a, b);
  }
  if (kind == "lognormal") {
    n.expect_map({"dist", "mean", "sigma", "min", "max"});
    const double mean = n.require("mean").as_double(std::max(lo, 1e-9), hi);
    const double sigma = n.require("sigma").as_double(0, 10);
    const double a = n.get("min") ? n.get("min")->as_double(lo, hi) : lo;
    const double b = n.get("max") ? n.get("max")->as_double(lo, hi) : hi;
    if (b < a) n.require("max").fail("max is below min");
    return lognormal(mean, sigma, a, b);
  }
  if (kind == "empirical") {
    n.expect_map({"dist", "values", "trace", "field"});
    std::vector<double> values;
    if (auto v = n.get("values")) {
      for (const ConfigNode& e : v->elements()) values.push_back(e.as_double(lo, hi));
      if (values.empty()) v->fail("empirical values must not be empty");
    } else if (auto t = n.get("trace")) {
      const std::string field = n.get("field") ? n.get("field")->as_string() : "prompt";
      if (field != "prompt" && field != "output") n.require("field").fail("must be prompt or output");
      std::string path = t->as_string();
      if (!path.empty() && path[0] != '/' && n.file().find('/') != std::string::npos)
        path = n.file().substr(0, n.file().rfind('/') + 1) + path;  // relative to the YAML file
      values = trace_lengths(path, field == "prompt");
      if (values.empty()) t->fail("trace '" + path + "' has no requests");
      for (double& x : values) x = std::clamp(x, lo, hi);
    } else {
      n.fail("empirical needs 'values' or 'trace'");
    }
    return empirical(std::move(values));
  }
  n.require("dist").fail("unknown distribution '" + kind + "' (fixed, uniform, lognormal, empirical)");
}

double Dist::sample(Rng& rng) const {
  switch (kind_) {
    case Kind::fixed:
      return a_;
    case Kind::uniform:
      return a_ + (b_ - a_) * rng.uniform01();
    case Kind::lognormal:
      return std::clamp(std::exp(a_ + b_ * rng.normal()), lo_, hi_);
    case Kind::empirical:
      return values_[rng.below(values_.size())];
  }
  return a_;
}

int64_t Dist::sample_int(Rng& rng, int64_t floor) const {
  if (kind_ == Kind::uniform) {
    // Integer uniform over [ceil(a), floor(b)]: every length equally likely.
    const int64_t a = static_cast<int64_t>(std::ceil(a_)), b = static_cast<int64_t>(std::floor(b_));
    return std::max(floor, b < a ? a : rng.uniform_int(a, b));
  }
  return std::max(floor, static_cast<int64_t>(std::llround(sample(rng))));
}

double Dist::mean() const {
  switch (kind_) {
    case Kind::fixed:
      return a_;
    case Kind::uniform:
      return 0.5 * (a_ + b_);
    case Kind::lognormal:
      return std::exp(a_ + 0.5 * b_ * b_);
    case Kind::empirical: {
      double s = 0;
      for (double v : values_) s += v;
      return s / static_cast<double>(values_.size());
    }
  }
  return a_;
}

Arrival Arrival::parse(const ConfigNode& n) {
  n.expect_map({"process", "rate", "cv"});
  Arrival a;
  const std::string p = n.get("process") ? n.get("process")->as_string() : "poisson";
  if (p == "poisson") a.kind = Kind::poisson;
  else if (p == "gamma") a.kind = Kind::gamma;
  else if (p == "fixed") a.kind = Kind::fixed;
  else n.require("process").fail("unknown arrival process '" + p + "' (poisson, gamma, fixed)");
  if (auto r = n.get("rate")) a.rate = r->as_double(1e-9, 1e9);
  if (auto c = n.get("cv")) {
    if (a.kind != Kind::gamma) c->fail("cv applies to the gamma process only");
    a.cv = c->as_double(1e-3, 100);
  }
  return a;
}

double Arrival::next_gap(Rng& rng) const {
  const double mean = 1.0 / rate;
  switch (kind) {
    case Kind::poisson:
      return rng.exponential(mean);
    case Kind::gamma: {
      // CV of Gamma(k, theta) is 1/sqrt(k); its mean k*theta is 1/rate.
      const double shape = 1.0 / (cv * cv);
      return rng.gamma(shape, mean / shape);
    }
    case Kind::fixed:
      return mean;
  }
  return mean;
}

const char* Arrival::name(Kind k) {
  switch (k) {
    case Kind::poisson: return "poisson";
    case Kind::gamma: return "gamma";
    case Kind::fixed: return "fixed";
  }
  return "?";
}

Zipf::Zipf(uint64_t n, double s) {
  cdf_.resize(n);
  double acc = 0;
  for (uint64_t i = 0; i < n; ++i) {
    acc += std::pow(static_cast<double>(i + 1), -s);
    cdf_[i] = acc;
  }
  for (double& c : cdf_) c /= acc;
}

uint64_t Zipf::sample(Rng& rng) const {
  const double u = rng.uniform01();
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  return std::min<uint64_t>(static_cast<uint64_t>(it - cdf_.begin()), cdf_.size() - 1);
}

double Zipf::probability(uint64_t i) const { return i == 0 ? cdf_[0] : cdf_[i] - cdf_[i - 1]; }

}  // namespace prefixsim::workloads
