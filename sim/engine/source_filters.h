// Request-source adapters a scenario puts in front of a trace: the first N
// requests of it, and its arrivals rescaled to another load. Both stream:
// neither holds more than the request in hand.
#pragma once

#include <cmath>
#include <memory>
#include <string>

#include "sim/base/error.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

// The first `limit` requests of a source (a slice of a long trace).
class LimitedSource final : public RequestSource {
 public:
  LimitedSource(std::unique_ptr<RequestSource> inner, int64_t limit) : inner_(std::move(inner)), left_(limit) {}
  bool next(Request& out) override { return left_-- > 0 && inner_->next(out); }
  std::string format() const override { return inner_->format(); }
  std::string origin() const override { return inner_->origin(); }

 private:
  std::unique_ptr<RequestSource> inner_;
  int64_t left_;
};

// Every gap between arrivals multiplied by `factor`, from the first arrival
// on: 0.5 offers the same requests at twice the rate. Order is kept, and a
// rescaled time past the int64 nanosecond range is an error, not a wrap.
class RescaledSource final : public RequestSource {
 public:
  // `flag` is what set the factor, named when a rescaled time overflows.
  RescaledSource(std::unique_ptr<RequestSource> inner, double factor, std::string flag = "--time-scale")
      : inner_(std::move(inner)), factor_(factor), flag_(std::move(flag)) {}
  bool next(Request& out) override {
    if (!inner_->next(out)) return false;
    if (!started_) first_ = out.arrival, started_ = true;
    const double t = static_cast<double>(first_) + static_cast<double>(out.arrival - first_) * factor_;
    if (!(t < 9.2e18)) throw InputError(flag_ + ": request " + out.id + " would arrive past 292 years");
    out.arrival = static_cast<TimeNs>(std::llround(t));
    return true;
  }
  std::string format() const override { return inner_->format(); }
  std::string origin() const override { return inner_->origin(); }

 private:
  std::unique_ptr<RequestSource> inner_;
  double factor_;
  std::string flag_;
  bool started_ = false;
  TimeNs first_ = 0;
};

// Marks the requests that warm the cache (Request::warmup): the first
// `requests`, and every one arriving within `seconds` of the first arrival.
// The rest are counted. Keeps how many it marked and up to when.
class WarmupSource final : public RequestSource {
 public:
  WarmupSource(std::unique_ptr<RequestSource> inner, int64_t requests, double seconds)
      : inner_(std::move(inner)), requests_(requests), seconds_(seconds) {}
  bool next(Request& out) override {
    if (!inner_->next(out)) return false;
    if (seen_++ == 0) first_ = out.arrival;
    out.warmup = warming_ && (static_cast<int64_t>(seen_) <= requests_ ||
                              static_cast<double>(out.arrival - first_) / 1e9 < seconds_);
    warming_ = out.warmup;  // once one request counts, all after it do
    if (out.warmup) ++marked_, last_warm_ = out.arrival - first_;
    return true;
  }
  std::string format() const override { return inner_->format(); }
  std::string origin() const override { return inner_->origin(); }
  uint64_t marked() const { return marked_; }
  double marked_span_s() const { return static_cast<double>(last_warm_) / 1e9; }  // first to last warm arrival

 private:
  std::unique_ptr<RequestSource> inner_;
  int64_t requests_;
  double seconds_;
  bool warming_ = true;
  uint64_t seen_ = 0, marked_ = 0;
  TimeNs first_ = 0, last_warm_ = 0;
};

}  // namespace prefixsim
