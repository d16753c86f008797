#include "sim/scenario/point_run.h"

#include <algorithm>
#include <limits>
#include <span>

#include "sim/base/error.h"
#include "sim/base/interrupt.h"
#include "sim/engine/engine.h"
#include "sim/engine/vector_source.h"
#include "sim/fleet/fleet.h"
#include "sim/scenario/counted_requests.h"

namespace prefixsim {
namespace {

// Thrown by the observer when the run's StopBound `which` can no longer
// hold; run_engine_point catches it.
struct StopRun {
  size_t which;
};

// A StopBound of a run of at most `requests` counted requests, and how far
// the run has gone towards settling it.
struct StopCheck {
  StopBound bound;
  uint64_t stop_at = 0;     // a percentile: this many values over the limit settle it
  double sum_limit_ms = 0;  // the mean: values adding up past this settle it
  uint64_t above = 0;
  double sum_ms = 0;
};

std::vector<StopCheck> stop_checks(const std::vector<StopBound>& bounds, uint64_t requests) {
  std::vector<StopCheck> out;
  for (const StopBound& b : bounds) {
    StopCheck c;
    c.bound = b;
    // N - rank(q, N) + 1 values over the limit leave fewer than rank(q, N)
    // at or below it; N - rank(q, N) grows with N, so fewer requests
    // finishing (refused, shed) only makes it surer.
    if (b.percentile > 0) c.stop_at = requests - nearest_rank_of(b.percentile, requests) + 1;
    // The final mean is at least this sum over N; the margin covers the
    // rounding of the summary's own sum.
    else c.sum_limit_ms = b.limit_ms * static_cast<double>(requests) * (1 + 1e-6);
    out.push_back(c);
  }
  return out;
}

// Collects a point's figures from one engine run. Warm-up requests
// (--warmup) warm the caches and are left out of every figure, as replay's
// collector leaves them out (sim/scenario/replay_collector.cpp).
class PointObserver final : public EngineObserver {
 public:
  PointObserver(int32_t block_size, std::vector<const BlockPool*> check, std::vector<StopCheck> stops)
      : block_size_(block_size), check_(std::move(check)), stops_(std::move(stops)) {}
  void on_request_finished(const RequestRecord& r) override {
    throw_if_interrupted();  // a run its caller abandoned ends here (plan's runs ahead)
    if (!counted.add(r)) return;
    // Seconds, by figure (StopBound::Figure); no TPOT with one output token.
    const double secs[] = {static_cast<double>(r.ttft()) / 1e9, static_cast<double>(r.queueing()) / 1e9,
                           static_cast<double>(r.e2e()) / 1e9, r.output_tokens > 1 ? r.tpot() / 1e9 : NAN};
    if (!stops_.empty()) check_stops(secs);
    ++finished;
    prompt_tokens += static_cast<uint64_t>(r.prompt_tokens);
    hit_tokens += static_cast<uint64_t>(r.hit_tokens);
    if (per_replica.size() <= r.replica) per_replica.resize(r.replica + 1);
    ++per_replica[r.replica];
    ttft.add(secs[0]);
    queue.add(secs[1]);
    e2e.add(secs[2]);
    if (r.output_tokens > 1) tpot.add(secs[3]);
    if (r.prefill_done >= 0) {  // a split request: its TTFT in parts (summed; a part that does not apply adds 0)
      ++split;
      part_queue += static_cast<double>(r.split_queue());
      part_prefill += static_cast<double>(r.split_prefill());
      part_transfer += static_cast<double>(std::max<TimeNs>(r.split_transfer(), 0));
      part_first_decode += static_cast<double>(std::max<TimeNs>(r.split_first_decode(), 0));
    }
    first_arrival = std::min(first_arrival, r.arrival);
    last_finish = std::max(last_finish, r.finish);
    queried_blocks += static_cast<uint64_t>((r.prompt_tokens + block_size_ - 1) / block_size_);
    hit_blocks += static_cast<uint64_t>(r.hit_tokens / block_size_);
  }
  void on_step(const StepRecord& s) override {
    if (s.replica >= check_.size()) return;
    const std::string broken = check_[s.replica]->check_invariants();
    if (!broken.empty())
      throw InternalError("pool invariant violated after step " + std::to_string(s.index) + ": " + broken);
  }
  LatencyAccumulator ttft{vllm_ttft_buckets()}, queue{vllm_ttft_buckets()}, e2e{vllm_ttft_buckets()},
      tpot{vllm_tpot_buckets()};
  uint64_t split = 0;  // requests split over the two pools; their TTFT parts summed, ns
  double part_queue = 0, part_prefill = 0, part_transfer = 0, part_first_decode = 0;
  uint64_t queried_blocks = 0, hit_blocks = 0;
  uint64_t finished = 0, prompt_tokens = 0, hit_tokens = 0;  // client requests (a split one once)
  CountedRequests counted;
  TimeNs first_arrival = std::numeric_limits<TimeNs>::max(), last_finish = 0;
  std::vector<uint64_t> per_replica;  // finished requests
  const std::vector<StopCheck>& stops() const { return stops_; }

 private:
  // The values the accumulators above take (seconds), in ms as their
  // summary gives them, so a value over the limit here is one there.
  void check_stops(const double (&secs)[4]) {
    for (size_t i = 0; i < stops_.size(); ++i) {
      StopCheck& c = stops_[i];
      const double s = secs[static_cast<size_t>(c.bound.figure)];
      if (std::isnan(s)) continue;  // no sample of this figure
      const double ms = s * 1000.0;
      if (c.bound.percentile > 0) {
        if (ms > c.bound.limit_ms && ++c.above >= c.stop_at) throw StopRun{i};
      } else if ((c.sum_ms += ms) > c.sum_limit_ms) {
        throw StopRun{i};
      }
    }
  }

  int32_t block_size_;
  std::vector<const BlockPool*> check_;  // by replica; empty: no checks
  std::vector<StopCheck> stops_;
};

void run_engine_point(const PointInput& in, const Scenario& s, const ResolvedScenario& resolved,
                      const std::string& spec, const PolicyContext& ctx, int64_t num_blocks, PointResult& out) {
  // Disaggregated or mixed: num_blocks is the scenario's server's
  // (compare's size axis), so a pool of that server takes it; a pool on its
  // own GPU or TP is sized by them.
  std::vector<FleetPool> sized = fleet_pools(s, resolved);
  for (FleetPool& p : sized)
    if (p.scenario.gpu == s.gpu && p.scenario.tp == s.tp) p.kv.num_blocks = num_blocks;
  Fleet fleet = sized.empty() ? Fleet(s, resolved, num_blocks, spec, ctx) : Fleet(s, sized, spec, ctx);
  fleet.add_tiers(scenario_tiers(s, *resolved.model));
  std::vector<const BlockPool*> pools;
  for (const auto& r : fleet.replicas) pools.push_back(&r->pool);
  // Stops need exact percentiles (a run of more requests folds them) and
  // the count of requests the run could finish.
  uint64_t counted_requests = 0;
  for (const Request& q : *in.requests) counted_requests += q.warmup ? 0 : 1;
  const bool stops = !in.stop_bounds.empty() && counted_requests > 0 &&
                     counted_requests <= LatencyAccumulator::kExactLimit;
  PointObserver obs(ctx.block_size, s.check_invariants ? pools : std::vector<const BlockPool*>{},
                    stops ? stop_checks(in.stop_bounds, counted_requests) : std::vector<StopCheck>{});
  fleet.set_observer(&obs);
  VectorSource src(std::span<const Request>(*in.requests), in.format);  // shared by every point
  FleetResult fr;
  try {
    fr = fleet.run(src);
  } catch (const StopRun& stop) {
    const StopCheck& c = obs.stops()[stop.which];
    out.stopped = PointStopped{c.bound.text, obs.counted.finished, c.above, counted_requests};
    return;
  }
  const EngineResult res = obs.counted.counted(fr.total);  // warm-up requests left out
  CacheReplayResult& r = out.counts;
  r.requests = res.finished;
  r.prompt_tokens = static_cast<int64_t>(res.admitted_prompt_tokens);
  r.output_tokens = static_cast<int64_t>(res.output_tokens);
  r.hit_tokens = static_cast<int64_t>(res.admitted_hit_tokens);
  r.hit_rate = r.prompt_tokens ? static_cast<double>(r.hit_tokens) / static_cast<double>(r.prompt_tokens) : 0;
  r.tier_hit_tokens = static_cast<int64_t>(res.admitted_tier_hit_tokens);
  r.tier_hit_blocks = static_cast<uint64_t>(r.tier_hit_tokens / ctx.block_size);
  r.queried_blocks = obs.queried_blocks;
  r.hit_blocks = obs.hit_blocks;
  r.block_hit_rate =
      r.queried_blocks ? static_cast<double>(r.hit_blocks) / static_cast<double>(r.queried_blocks) : 0;
  r.evictions = 0;
  for (const BlockPool* p : pools) r.evictions += p->evictions();
  r.refused_requests = res.refused + fr.admission.refused();  // never fit, or shed at the router
  if (fleet.num_prefill > 0) {  // a split request's legs count once, with its prefill's hits
    r.requests = obs.finished;
    r.prompt_tokens = static_cast<int64_t>(obs.prompt_tokens);
    r.hit_tokens = static_cast<int64_t>(obs.hit_tokens);
    r.hit_rate = r.prompt_tokens ? static_cast<double>(r.hit_tokens) / static_cast<double>(r.prompt_tokens) : 0;
    r.output_tokens = static_cast<int64_t>(obs.counted.output_tokens);
  }
  if (fleet_replicas(s) > 1) {
    obs.per_replica.resize(static_cast<size_t>(fleet_replicas(s)));
    out.imbalance = res.finished ? max_over_mean(obs.per_replica) : NAN;
  }
  out.ttft = obs.ttft.summary_ms();
  out.queue = obs.queue.summary_ms();
  out.e2e = obs.e2e.summary_ms();
  out.tpot = obs.tpot.summary_ms();
  if (obs.split) {
    const double n = static_cast<double>(obs.split) * 1e6;  // ns summed -> ms each
    out.ttft_parts = {obs.part_queue / n, obs.part_prefill / n, obs.part_transfer / n, obs.part_first_decode / n};
  }
  out.preemptions = res.preemptions;
  out.steps = res.steps;
  if (res.finished && obs.last_finish > obs.first_arrival) {
    const double span_s = static_cast<double>(obs.last_finish - obs.first_arrival) / 1e9;
    out.requests_per_s = static_cast<double>(r.requests) / span_s;
    out.output_tokens_per_s = static_cast<double>(r.output_tokens) / span_s;
  }
}

}  // namespace

PointResult run_scenario_point(const Scenario& scenario, const ResolvedScenario& resolved, const PolicyContext& ctx,
                               int64_t num_blocks) {
  std::vector<Request> requests;
  const std::unique_ptr<RequestSource> src = open_scenario_input(scenario, resolved);
  for (Request r; src->next(r);) requests.push_back(std::move(r));
  const PointInput in{&requests, nullptr, src->format()};
  PointResult p = run_point(in, scenario, resolved, scenario.policy, ctx, num_blocks);
  if (p.error) std::rethrow_exception(p.error);
  return p;
}

PointResult run_point(const PointInput& input, const Scenario& scenario, const ResolvedScenario& resolved,
                      const std::string& policy_spec, const PolicyContext& ctx, int64_t num_blocks) {
  PointResult out;
  try {
    if (scenario.mode == "engine")
      run_engine_point(input, scenario, resolved, policy_spec, ctx, num_blocks, out);
    else {
      FleetTiers tiers(scenario_tiers(scenario, *resolved.model), 1, std::max<uint32_t>(input.prepared->num_keys(), 1),
                       ctx.block_size);
      std::unique_ptr<EvictionPolicy> policy = make_policy(policy_spec, ctx);
      RetentionFigures kept;
      if (input.probe_retention)
        policy = std::make_unique<RetentionProbe>(std::move(policy), input.prepared->num_keys(), kept);
      out.counts = run_cache_replay(*input.prepared, num_blocks, std::move(policy), scenario.check_invariants, {},
                                    tiers.stack(0));
      if (input.probe_retention) out.retention = kept;
    }
  } catch (...) {
    out.error = std::current_exception();
  }
  return out;
}

namespace {
nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}
}  // namespace

nlohmann::ordered_json point_figures(const PointResult& r, const Scenario& s, int64_t num_blocks,
                                     int64_t capacity_tokens) {
  nlohmann::ordered_json row;
  row["requests"] = r.counts.requests;
  row["hit_rate"] = number(r.counts.hit_rate);
  row["block_hit_rate"] = number(r.counts.block_hit_rate);
  // GPU + KV tiers (the GPU's alone without tiers).
  row["hit_rate_with_tiers"] =
      number(hit_rate_with_tiers(r.counts.hit_tokens, r.counts.tier_hit_tokens, r.counts.prompt_tokens));
  row["evictions"] = r.counts.evictions;
  row["refused_requests"] = r.counts.refused_requests;
  row["num_blocks"] = num_blocks;  // the pool of each replica, null block included (report.json kv_cache.num_blocks)
  row["capacity_tokens"] = capacity_tokens;
  row["ttft_mean_ms"] = number(r.ttft.mean);
  row["ttft_p50_ms"] = number(r.ttft.p50);
  row["ttft_p90_ms"] = number(r.ttft.p90);
  row["ttft_p99_ms"] = number(r.ttft.p99);
  row["queue_p99_ms"] = number(r.queue.p99);
  row["e2e_p99_ms"] = number(r.e2e.p99);
  row["tpot_p50_ms"] = number(r.tpot.p50);
  row["tpot_p99_ms"] = number(r.tpot.p99);
  row["requests_per_s"] = number(r.requests_per_s);
  row["output_tokens_per_s"] = number(r.output_tokens_per_s);
  row["preemptions"] = s.mode == "engine" ? nlohmann::ordered_json(r.preemptions) : nlohmann::ordered_json(nullptr);
  row["imbalance"] = number(r.imbalance);
  return row;
}

const std::vector<std::string>& point_figure_names() {
  static const std::vector<std::string> names = [] {
    const nlohmann::ordered_json row = point_figures(PointResult{}, Scenario{}, 0, 0);
    std::vector<std::string> n;
    for (auto it = row.begin(); it != row.end(); ++it) n.push_back(it.key());
    return n;
  }();
  return names;
}

}  // namespace prefixsim
