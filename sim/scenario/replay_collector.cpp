#include "sim/scenario/replay_collector.h"

#include <cmath>
#include <cstdio>

#include "sim/base/error.h"
#include "sim/fleet/fleet.h"

namespace prefixsim {


namespace {
constexpr double kNsPerS = 1e9;

// Merges neighbouring rows pairwise as the series' interval doubles (both
// collectors, so that a long run stays at most kMaxRows rows): counts add
// up; the state at the interval's end (KV usage, queue, each replica's
// state) is the later row's; row k starts where row 2k did.
void coarsen_series(std::vector<SeriesRow>& rows) {
  std::vector<SeriesRow> merged;
  for (size_t k = 0; k < rows.size(); k += 2) {
    SeriesRow m = rows[k];
    if (k + 1 < rows.size()) {
      const SeriesRow& n = rows[k + 1];
      m.queried_tokens += n.queried_tokens;
      m.hit_tokens += n.hit_tokens;
      m.tier_hit_tokens += n.tier_hit_tokens;
      m.preemptions += n.preemptions;
      m.finished += n.finished;
      m.kv_usage = n.kv_usage;
      m.waiting = n.waiting;
      m.running = n.running;
      for (size_t r = 0; r < m.replicas.size(); ++r) {
        const uint64_t q = m.replicas[r].queried_tokens + n.replicas[r].queried_tokens;
        const uint64_t h = m.replicas[r].hit_tokens + n.replicas[r].hit_tokens;
        m.replicas[r] = n.replicas[r];
        m.replicas[r].queried_tokens = q;
        m.replicas[r].hit_tokens = h;
      }
    }
    merged.push_back(m);
  }
  rows = std::move(merged);
}

// A figure kept beside the rows, merged the same way (sums).
void coarsen_sums(std::vector<double>& v) {
  std::vector<double> merged;
  for (size_t k = 0; k < v.size(); k += 2) merged.push_back(v[k] + (k + 1 < v.size() ? v[k + 1] : 0.0));
  v = std::move(merged);
}
}  // namespace

ReplayCollector::ReplayCollector(int32_t block_size, double interval_s, bool progress,
                                 const std::vector<int64_t>& pool_blocks)
    : block_size_(block_size), interval_s_(interval_s), progress_(progress) {
  if (pool_blocks.size() > 1) replicas_.resize(pool_blocks.size());
  for (int64_t b : pool_blocks) usable_sum_ += b;
}

SeriesRow& ReplayCollector::row_at(double t_s) {
  size_t i = static_cast<size_t>(t_s / interval_s_);
  while (i >= kMaxRows) {  // coarsen: merge neighbours, double the interval
    coarsen_series(rows_);
    coarsen_sums(row_prompt_tokens_);
    coarsen_sums(row_output_tokens_);
    interval_s_ *= 2;
    i = static_cast<size_t>(t_s / interval_s_);
  }
  while (rows_.size() <= i) {
    SeriesRow r;
    r.start = static_cast<double>(rows_.size()) * interval_s_;
    if (!rows_.empty()) {  // an idle interval keeps the last state
      r.kv_usage = rows_.back().kv_usage;
      r.waiting = rows_.back().waiting;
      r.running = rows_.back().running;
      r.replicas = rows_.back().replicas;
      for (ReplicaSample& x : r.replicas) x.queried_tokens = x.hit_tokens = 0;
    } else {
      r.replicas.resize(replicas_.size());
    }
    rows_.push_back(r);
    row_prompt_tokens_.push_back(0);
    row_output_tokens_.push_back(0);
  }
  return rows_[i];
}

void ReplayCollector::on_request_finished(const RequestRecord& r) {
  if (!counted_.add(r)) {  // warmed the cache; left out of every figure
    ++finished_;
    return;
  }
  if (tiers_) {
    load_.add(static_cast<double>(r.loading()) / kNsPerS);
    prefill_.add(static_cast<double>(r.prefill()) / kNsPerS);
  }
  client_prompt_ += static_cast<uint64_t>(r.prompt_tokens);
  client_hit_ += static_cast<uint64_t>(r.hit_tokens);
  if (r.prefill_done >= 0) {  // a split request (disaggregated)
    part_queue_.add(static_cast<double>(r.split_queue()) / kNsPerS);
    part_prefill_.add(static_cast<double>(r.split_prefill()) / kNsPerS);
    if (r.split_transfer() >= 0) part_transfer_.add(static_cast<double>(r.split_transfer()) / kNsPerS);
    if (r.split_first_decode() >= 0) part_first_decode_.add(static_cast<double>(r.split_first_decode()) / kNsPerS);
  }
  ttft_.add(static_cast<double>(r.ttft()) / kNsPerS);
  queue_.add(static_cast<double>(r.queueing()) / kNsPerS);
  e2e_.add(static_cast<double>(r.e2e()) / kNsPerS);
  if (r.output_tokens > 1) tpot_.add(r.tpot() / kNsPerS);
  if (first_arrival_ < 0 || r.arrival < first_arrival_) first_arrival_ = r.arrival;
  last_finish_ = std::max(last_finish_, r.finish);
  last_arrival_ = std::max(last_arrival_, r.arrival);
  queried_blocks_ += static_cast<uint64_t>((r.prompt_tokens + block_size_ - 1) / block_size_);
  hit_blocks_ += static_cast<uint64_t>(r.hit_tokens / block_size_);
  SeriesRow& at_admission = row_at(static_cast<double>(r.first_scheduled) / kNsPerS);
  at_admission.queried_tokens += static_cast<uint64_t>(r.prompt_tokens);
  at_admission.hit_tokens += static_cast<uint64_t>(r.hit_tokens);
  at_admission.tier_hit_tokens += static_cast<uint64_t>(r.tier_hit_tokens);
  if (!replicas_.empty()) {
    at_admission.replicas[r.replica].queried_tokens += static_cast<uint64_t>(r.prompt_tokens);
    at_admission.replicas[r.replica].hit_tokens += static_cast<uint64_t>(r.hit_tokens);
    ReplicaAcc& a = replicas_[r.replica];
    a.ttft.add(static_cast<double>(r.ttft()) / kNsPerS);
    if (!group_of_.empty()) group_ttft_[group_of_[r.replica]].add(static_cast<double>(r.ttft()) / kNsPerS);
    ++a.finished;
    a.prompt += static_cast<uint64_t>(r.prompt_tokens);
    a.hit += static_cast<uint64_t>(r.hit_tokens);
  }
  row_at(static_cast<double>(r.finish) / kNsPerS).finished += 1;
  ++finished_;
}

void ReplayCollector::on_step(const StepRecord& s) {
  throw_if_interrupted();
  if (steps_ && (s.index - 1) % steps_every_ == 0) steps_->add(s.index, s.plan->batch);
  if (s.replica < check_pools_.size()) {
    const std::string broken = check_pools_[s.replica]->check_invariants();
    if (!broken.empty())
      throw InternalError("block pool invariant violated after step " + std::to_string(s.index) +
                          (replicas_.empty() ? "" : " of replica " + std::to_string(s.replica)) + ": " + broken);
  }
  const double end_s = static_cast<double>(s.start + s.duration) / kNsPerS;
  SeriesRow& row = row_at(end_s);
  if (replicas_.empty()) {
    row.kv_usage = s.kv_usage;
    row.waiting = s.waiting;
    row.running = s.running;
  } else {  // the fleet's state: every replica's latest, summed (usage: their mean)
    ReplicaAcc& a = replicas_[s.replica];
    const int64_t used = s.num_usable_blocks - s.num_free_blocks;
    used_sum_ += used - a.used_blocks;
    a.used_blocks = used;
    waiting_sum_ += s.waiting - a.now.waiting;  // unsigned wrap-around cancels out in the sum
    running_sum_ += s.running - a.now.running;
    a.now.kv_usage = s.kv_usage;
    a.now.waiting = s.waiting;
    a.now.running = s.running;
    a.usage_time += s.kv_usage * static_cast<double>(s.duration);
    a.busy_time += static_cast<double>(s.duration);
    a.usage_max = std::max(a.usage_max, s.kv_usage);
    ReplicaSample& mine = row.replicas[s.replica];
    mine.kv_usage = s.kv_usage;
    mine.waiting = s.waiting;
    mine.running = s.running;
    row.waiting = waiting_sum_;
    row.running = running_sum_;
    row.kv_usage = static_cast<double>(used_sum_) / static_cast<double>(usable_sum_);
  }
  row.preemptions += static_cast<uint64_t>(s.preempted);
  const size_t i = static_cast<size_t>(end_s / interval_s_);
  row_prompt_tokens_[i] += static_cast<double>(s.prefill_tokens);
  row_output_tokens_[i] += static_cast<double>(s.decode_tokens);
  const double d = static_cast<double>(s.duration);
  usage_time_ += s.kv_usage * d;
  busy_time_ += d;
  usage_max_ = std::max(usage_max_, s.kv_usage);
  if (progress_.due()) progress(s);
}

void ReplayCollector::on_request_refused(const Request& r, const std::string& reason) {
  if (refused_++ == 0) first_refusal_ = "request " + r.id + ": " + reason;
}

void ReplayCollector::progress(const StepRecord& s) {
  char text[160];
  std::snprintf(text, sizeof text, "replay: %llu requests finished, simulated %.1f s, %zu waiting, %zu running",
                static_cast<unsigned long long>(finished_), static_cast<double>(s.start) / kNsPerS, s.waiting,
                s.running);
  progress_.draw(text);
}

void ReplayCollector::fill(RunReport& report, const EngineResult& engine) const {
  const EngineResult res = counted_.counted(engine);  // warm-up requests left out
  progress_.clear();
  TimedResults t;
  t.latency_ms.ttft = ttft_.summary_ms();
  t.latency_ms.queue = queue_.summary_ms();
  t.latency_ms.e2e = e2e_.summary_ms();
  t.latency_ms.tpot = tpot_.summary_ms();
  if (tiers_) {
    t.latency_ms.has_load = true;
    t.latency_ms.load = load_.summary_ms();
    t.latency_ms.prefill = prefill_.summary_ms();
  }
  t.ttft_s = ttft_.prom_histogram();
  t.queue_s = queue_.prom_histogram();
  t.e2e_s = e2e_.prom_histogram();
  t.tpot_s = tpot_.prom_histogram();
  t.ttft_cdf_ms = ttft_.cdf_ms();
  t.duration_s = first_arrival_ < 0 ? 0 : static_cast<double>(last_finish_ - first_arrival_) / kNsPerS;
  t.load.requests = res.finished;
  t.load.arrival_span_s = first_arrival_ < 0 ? 0 : static_cast<double>(last_arrival_ - first_arrival_) / kNsPerS;
  t.load.replicas = std::max<uint64_t>(1, replicas_.size());
  t.load.derive(t.duration_s);
  if (t.duration_s > 0) {
    t.throughput.requests_per_s = static_cast<double>(res.finished) / t.duration_s;
    t.throughput.prompt_tokens_per_s = static_cast<double>(res.prompt_tokens) / t.duration_s;
    t.throughput.output_tokens_per_s = static_cast<double>(res.output_tokens) / t.duration_s;
  }
  t.engine.steps = res.steps;
  t.engine.preemptions = res.preemptions;
  t.engine.kv_usage_mean = busy_time_ > 0 ? usage_time_ / busy_time_ : 0;
  t.engine.kv_usage_max = usage_max_;
  report.timed = std::move(t);

  auto& pc = report.prefix_cache;
  pc.queried_tokens = res.admitted_prompt_tokens;
  pc.hit_tokens = res.admitted_hit_tokens;
  pc.hit_rate = pc.queried_tokens ? static_cast<double>(pc.hit_tokens) / static_cast<double>(pc.queried_tokens)
                                  : kNotAvailable;
  pc.block_hit_rate =
      queried_blocks_ ? static_cast<double>(hit_blocks_) / static_cast<double>(queried_blocks_) : kNotAvailable;
  pc.lookups = {res.prefix_cache.requests,           res.prefix_cache.queries,
                res.prefix_cache.hits,               res.prefix_cache.preempted_requests,
                res.prefix_cache.preempted_queries,  res.prefix_cache.preempted_hits};
  if (tiers_) {
    pc.tier_hit_tokens = res.admitted_tier_hit_tokens;
    pc.hit_rate_with_tiers = hit_rate_with_tiers(static_cast<int64_t>(pc.hit_tokens),
                                                 static_cast<int64_t>(pc.tier_hit_tokens),
                                                 static_cast<int64_t>(pc.queried_tokens));
    const PrefixCacheStats& e = res.tier_cache;
    pc.tier_lookups = {e.requests, e.queries, e.hits, e.preempted_requests, e.preempted_queries, e.preempted_hits};
  }

  report.series_axis = "time_s";
  report.series = rows_;
  for (size_t i = 0; i < report.series.size(); ++i) {
    report.series[i].prompt_tokens_per_s = row_prompt_tokens_[i] / interval_s_;
    report.series[i].output_tokens_per_s = row_output_tokens_[i] / interval_s_;
  }
}

void ReplayCollector::fill_fleet(RunReport& report, const std::vector<EngineResult>& results,
                                 const std::vector<uint64_t>& evictions) const {
  if (replicas_.empty()) return;
  report.replicas.clear();
  std::vector<uint64_t> requests, prompt;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const ReplicaAcc& a = replicas_[i];
    ReplicaReport r;
    r.requests = a.finished;
    r.refused = results[i].refused;
    r.prompt_tokens = a.prompt;
    r.hit_tokens = a.hit;
    r.hit_rate = a.prompt ? static_cast<double>(a.hit) / static_cast<double>(a.prompt) : kNotAvailable;
    r.ttft_ms = a.ttft.summary_ms();
    r.kv_usage_mean = a.busy_time > 0 ? a.usage_time / a.busy_time : 0;
    r.kv_usage_max = a.usage_max;
    r.steps = results[i].steps;
    r.preemptions = results[i].preemptions;
    r.evictions = evictions[i];
    r.lookup_queries = results[i].prefix_cache.queries;
    r.lookup_hits = results[i].prefix_cache.hits;
    report.replicas.push_back(r);
    requests.push_back(a.finished);
    prompt.push_back(a.prompt);
  }
  report.imbalance.requests = max_over_mean(requests);
  report.imbalance.prompt_tokens = max_over_mean(prompt);
}

void ReplayCollector::fill_disagg(RunReport& report, const std::vector<EngineResult>& results,
                                  uint32_t num_prefill) const {
  if (!report.disagg) return;
  DisaggReport& d = *report.disagg;
  // The hit rate is the client's: what its prompt found where it was
  // prefilled (a decode instance's hits only spare the transfer).
  PrefixCacheReport& pc = report.prefix_cache;
  pc.queried_tokens = client_prompt_;
  pc.hit_tokens = client_hit_;
  pc.hit_rate = client_prompt_ ? static_cast<double>(client_hit_) / static_cast<double>(client_prompt_) : kNotAvailable;
  for (size_t k = 0; k < d.pools.size(); ++k)
    fill_pool(d.pools[k], results, k == 0 ? 0 : num_prefill, k == 0 ? num_prefill : results.size());
  d.queue_ms = part_queue_.summary_ms();
  d.prefill_ms = part_prefill_.summary_ms();
  d.transfer_ms = part_transfer_.summary_ms();
  d.first_decode_ms = part_first_decode_.summary_ms();
}

void ReplayCollector::fill_pool(PoolReport& p, const std::vector<EngineResult>& results, size_t from,
                                size_t to) const {
  uint64_t prompt = 0, hit = 0;
  double busy = 0, usage = 0;
  for (size_t i = from; i < to; ++i) {
    const EngineResult& e = results[i];
    p.arrived += e.arrived;
    p.finished += e.finished;
    p.refused += e.refused;
    p.steps += e.steps;
    p.preemptions += e.preemptions;
    prompt += e.admitted_prompt_tokens;
    hit += e.admitted_hit_tokens;
    if (i < replicas_.size()) {
      busy += replicas_[i].busy_time;
      usage += replicas_[i].usage_time;
      p.kv_usage_max = std::max(p.kv_usage_max, replicas_[i].usage_max);
    }
  }
  p.hit_rate = prompt ? static_cast<double>(hit) / static_cast<double>(prompt) : kNotAvailable;
  p.busy_share = busy / (static_cast<double>(span()) * static_cast<double>(to - from));
  p.kv_usage_mean = busy > 0 ? usage / busy : 0;
}

void ReplayCollector::set_groups(const std::vector<uint32_t>& ends) {
  group_ends_ = ends;
  group_of_.assign(replicas_.size(), 0);
  group_ttft_.clear();
  uint32_t from = 0;
  for (size_t k = 0; k < ends.size(); ++k) {
    for (uint32_t i = from; i < ends[k] && i < group_of_.size(); ++i) group_of_[i] = static_cast<uint32_t>(k);
    group_ttft_.emplace_back(vllm_ttft_buckets(), kExactSamples);
    from = ends[k];
  }
}

void ReplayCollector::fill_groups(RunReport& report, const std::vector<EngineResult>& results) const {
  uint32_t from = 0;
  for (size_t k = 0; k < group_ends_.size() && k < report.groups.size(); ++k) {
    PoolReport& g = report.groups[k];
    fill_pool(g, results, from, group_ends_[k]);
    // The finished requests' tokens, as the replicas' rows count them (the
    // fleet's hit rate is over the same requests).
    for (uint32_t i = from; i < group_ends_[k] && i < replicas_.size(); ++i) {
      g.requests += replicas_[i].finished;
      g.prompt_tokens += replicas_[i].prompt;
      g.hit_tokens += replicas_[i].hit;
    }
    g.hit_rate = g.prompt_tokens ? static_cast<double>(g.hit_tokens) / static_cast<double>(g.prompt_tokens) : kNotAvailable;
    g.ttft_ms = group_ttft_[k].summary_ms();
    from = group_ends_[k];
  }
}

bool CacheSeriesCollector::after_request(const CacheReplayer& rep) {
  if (!rep.counting()) return !interrupt_requested();  // a warm-up request: not in the series
  const CacheReplayResult& t = rep.totals();
  const uint64_t index = last_.requests + last_.refused_requests;  // of this request, from 0
  size_t i = static_cast<size_t>(index / interval_);
  if (i >= kMaxRows) {  // coarsen: merge neighbours, double the interval
    coarsen_series(rows_);
    interval_ *= 2;
    i = static_cast<size_t>(index / interval_);
  }
  while (rows_.size() <= i) {
    SeriesRow r;
    r.start = static_cast<double>(rows_.size() * interval_);
    rows_.push_back(r);
  }
  SeriesRow& row = rows_[i];
  row.queried_tokens += static_cast<uint64_t>(t.prompt_tokens - last_.prompt_tokens);
  row.hit_tokens += static_cast<uint64_t>(t.hit_tokens - last_.hit_tokens);
  row.tier_hit_tokens += static_cast<uint64_t>(t.tier_hit_tokens - last_.tier_hit_tokens);
  row.finished += t.requests - last_.requests;
  last_ = t;
  if (progress_.due()) {
    const double hit = t.prompt_tokens ? static_cast<double>(t.hit_tokens) / static_cast<double>(t.prompt_tokens) : 0;
    char buf[160];
    std::snprintf(buf, sizeof buf, "replay (cache mode): %llu requests, hit rate %.2f %%",
                  static_cast<unsigned long long>(index + 1), 100.0 * hit);
    progress_.draw(buf);
  }
  return !interrupt_requested();
}

void CacheSeriesCollector::fill(RunReport& report) const {
  progress_.clear();
  report.series = rows_;
}

}  // namespace prefixsim
