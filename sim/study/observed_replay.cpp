#include "sim/study/observed_replay.h"

#include <algorithm>

#include "policies/registry.h"
#include "sim/cost/kv_sizing.h"
#include "sim/engine/vector_source.h"
#include "sim/scenario/scenario_fleet.h"

namespace prefixsim {
namespace {

// One stretch of a replica's timeline: [start, end), whose length is
// dot(terms, features) + constant at the terms it ran with.
struct Segment {
  TimeNs start = 0, end = 0;
  StepTerms features{};
};

struct Finished {
  TimeNs arrival = 0, first_token = 0, finish = 0, latency = 0;
  int64_t prompt = 0, output = 0;
  uint32_t replica = 0;
};

// Collects each replica's segments and each request's times.
class TimelineObserver final : public EngineObserver {
 public:
  TimelineObserver(const Fleet& fleet, const StepTerms& terms, const StepBasis& basis, bool async)
      : fleet_(fleet), terms_(terms), basis_(basis), async_(async), segments_(fleet.replicas.size()) {}

  void on_step(const StepRecord& s) override {
    const ModeledExecutor& exec = fleet_.replicas[s.replica]->exec;
    const StepFeatures f = step_features(terms_, basis_, exec.padded_summary(s.plan->batch));
    std::vector<Segment>& segs = segments_[s.replica];
    const TimeNs prev_end = segs.empty() ? s.start : segs.back().end;
    if (s.start > prev_end) {
      // A gap: under async scheduling, the host work the device waited for.
      Segment gap{prev_end, s.start, {}};
      if (async_) gap.features = f.host;
      segs.push_back(gap);
    }
    Segment step{s.start, s.start + s.duration, f.device};
    if (!async_)
      for (size_t k = 0; k < step.features.size(); ++k) step.features[k] += f.host[k];
    segs.push_back(step);
  }
  void on_request_finished(const RequestRecord& r) override {
    const TimeNs latency =
        fleet_.replicas[r.replica]->exec.request_latency(r.prompt_tokens);
    done_.push_back({r.arrival, r.first_token, r.finish, latency, r.prompt_tokens, r.output_tokens, r.replica});
  }
  void on_request_refused(const Request&, const std::string&) override { ++refused_; }

  std::vector<std::vector<Segment>> take_segments() { return std::move(segments_); }
  const std::vector<Finished>& finished() const { return done_; }
  int64_t refused() const { return refused_; }

 private:
  const Fleet& fleet_;
  const StepTerms& terms_;
  const StepBasis& basis_;
  bool async_;
  std::vector<std::vector<Segment>> segments_;
  std::vector<Finished> done_;
  int64_t refused_ = 0;
};

// Prefix sums of the features over a replica's segments, for the features
// of any interval in O(log steps).
class Timeline {
 public:
  explicit Timeline(std::vector<Segment> segs) : segs_(std::move(segs)), prefix_(segs_.size() + 1) {
    for (size_t i = 0; i < segs_.size(); ++i)
      for (size_t k = 0; k < prefix_[i].size(); ++k) prefix_[i + 1][k] = prefix_[i][k] + segs_[i].features[k];
  }
  // The features of [0, t): whole segments before t, and the covered
  // fraction of the one t falls in.
  StepTerms upto(TimeNs t) const {
    const auto it = std::upper_bound(segs_.begin(), segs_.end(), t,
                                     [](TimeNs x, const Segment& s) { return x < s.end; });
    const size_t i = static_cast<size_t>(it - segs_.begin());
    StepTerms f = prefix_[i];
    if (i < segs_.size() && t > segs_[i].start) {
      const double frac = static_cast<double>(t - segs_[i].start) / static_cast<double>(segs_[i].end - segs_[i].start);
      for (size_t k = 0; k < f.size(); ++k) f[k] += frac * segs_[i].features[k];
    }
    return f;
  }

 private:
  std::vector<Segment> segs_;
  std::vector<StepTerms> prefix_;
};

// Adds (value, gradient) of one request's interval [a, b) to a running mean.
void add_interval(LinearMean& sum, const Timeline& tl, TimeNs a, TimeNs b, const StepTerms& terms, double scale) {
  const StepTerms fa = tl.upto(a), fb = tl.upto(b);
  double modeled = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const double g = (fb[k] - fa[k]) * 1e3 * scale;  // features are seconds per unit of a term; means are ms
    sum.gradient[k] += g;
    modeled += g * terms[k];
  }
  sum.constant += static_cast<double>(b - a) / 1e6 * scale - modeled;
}

}  // namespace

// Each finished request's intervals as linear forms in the terms (means) and
// as figures at the terms it ran with (distributions).
void measure_finished(const ObservedRun& run, const TimelineObserver& obs, const std::vector<Timeline>& timelines,
                      const StepTerms& terms, ReplayedRun& out) {
  std::vector<double> ttft, e2e, tpot;
  const std::vector<Finished>& done = obs.finished();
  out.finished = static_cast<int64_t>(done.size());
  if (done.empty()) return;
  const double per_request = 1.0 / static_cast<double>(done.size());
  int64_t multi = 0;
  for (const Finished& f : done) multi += f.output > 1;
  TimeNs first_arrival = done.front().arrival, last_finish = 0;
  for (const Finished& f : done) {
    const Timeline& tl = timelines[f.replica];
    // The engine's part of each interval, then the client's (request_s, tokenize_s).
    add_interval(out.ttft_mean, tl, f.arrival, f.first_token - f.latency, terms, per_request);
    add_interval(out.e2e_mean, tl, f.arrival, f.finish - f.latency, terms, per_request);
    if (run.client_side)
      for (LinearMean* m : {&out.ttft_mean, &out.e2e_mean}) {
        m->gradient[kRequestS] += 1e3 * per_request;
        m->gradient[kTokenizeS] += 1e3 * static_cast<double>(f.prompt) * per_request;
      }
    if (f.output > 1) {
      const double scale = 1.0 / static_cast<double>(f.output - 1) / static_cast<double>(multi);
      add_interval(out.tpot_mean, tl, f.first_token - f.latency, f.finish - f.latency, terms, scale);
      tpot.push_back(static_cast<double>(f.finish - f.first_token) / 1e6 / static_cast<double>(f.output - 1));
    }
    ttft.push_back(static_cast<double>(f.first_token - f.arrival) / 1e6);
    e2e.push_back(static_cast<double>(f.finish - f.arrival) / 1e6);
    first_arrival = std::min(first_arrival, f.arrival);
    last_finish = std::max(last_finish, f.finish);
  }
  // The client's constant part: request_latency at the terms it ran with is
  // request_s + tokenize_s * prompt, already in the gradient; the interval
  // constants above exclude it, so nothing more is added.
  out.ttft = measured_stat(std::move(ttft));
  out.e2e = measured_stat(std::move(e2e));
  out.tpot = measured_stat(std::move(tpot));
  if (last_finish > first_arrival)
    out.throughput_rps = static_cast<double>(done.size()) / (static_cast<double>(last_finish - first_arrival) / 1e9);
}

ReplayedRun replay_observed(const ObservedRun& run, const StepModel& model) {
  Scenario s = run.scenario;
  if (!run.client_side) {
    s.request_overhead_ms = 0;
    s.tokenize_us_per_token = 0;
  }
  ResolvedScenario r = resolve_scenario(s);
  r.step_model = model;
  if (!run.client_side) {
    r.step_model->terms[kRequestS] = 0;
    r.step_model->terms[kTokenizeS] = 0;
  }
  const StepTerms& terms = r.step_model->terms;
  const KvSizing kv = size_kv_pool(kv_sizing_input(s, r));
  PolicyContext pctx;
  pctx.block_size = s.block_size;
  Fleet fleet(s, r, kv.num_blocks, s.policy, pctx);
  const StepBasis basis = step_basis(*r.model, *r.gpu, s.tp, kv_dtype_bytes(s), expert_dp(s));
  TimelineObserver obs(fleet, terms, basis, s.async_scheduling);
  fleet.set_observer(&obs);
  VectorSource src(std::span<const Request>(run.requests));
  const FleetResult fr = fleet.run(src);

  ReplayedRun out;
  out.kv_blocks = kv.num_blocks;
  out.kv_source = s.kv_blocks ? "logged" : "derived";
  out.steps = fr.total.steps;
  out.preemptions = fr.total.preemptions;
  out.refused = obs.refused();
  std::vector<Timeline> timelines;
  for (std::vector<Segment>& segs : obs.take_segments()) timelines.emplace_back(std::move(segs));
  measure_finished(run, obs, timelines, terms, out);
  return out;
}

}  // namespace prefixsim
