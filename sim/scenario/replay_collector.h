// Turns the engine's per-request and per-step records into a RunReport:
// latency accumulators (bounded memory), the admission-based hit rate, KV
// usage, and a time series whose interval doubles whenever it would exceed
// kMaxRows, so memory stays bounded however long the trace.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "reports/run_report.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/engine.h"
#include "sim/base/interrupt.h"
#include "sim/base/progress_line.h"
#include "sim/cost/steps_file.h"
#include "sim/scenario/counted_requests.h"

namespace prefixsim {

// Ctrl-C: the collector stops the run at the next step or request by
// throwing Interrupted (sim/base/interrupt.h).

class ReplayCollector final : public EngineObserver {
 public:
  // `replicas` > 1: a fleet's collector, which also keeps per-replica figures.
  // `pool_blocks`: each replica's usable blocks (one entry: a lone
  // replica); a fleet's KV usage is their blocks in use over their sum
  // (a disaggregated fleet's pools may differ in size).
  ReplayCollector(int32_t block_size, double interval_s, bool progress, const std::vector<int64_t>& pool_blocks);

  void on_request_finished(const RequestRecord& r) override;
  void on_step(const StepRecord& s) override;
  void on_request_refused(const Request& r, const std::string& reason) override;

  // Fills the timed sections, the admission-based prefix figures and the series.
  void fill(RunReport& report, const EngineResult& res) const;
  // A fleet's per-replica figures and imbalance (results by replica, from
  // drive_replicas; evictions by replica).
  void fill_fleet(RunReport& report, const std::vector<EngineResult>& results,
                  const std::vector<uint64_t>& evictions) const;
  // The span the run's throughput and busy shares are over: first arrival
  // to last finish of the counted requests (1 ns at least).
  TimeNs span() const { return std::max<TimeNs>(last_finish_ - std::max<TimeNs>(first_arrival_, 0), 1); }
  // Disaggregated serving: the pools' figures (replicas [0, num_prefill)
  // are the prefill pool) and the TTFT's parts, into report.disagg (whose
  // design, pools' names, GPUs, TPs and sizes the caller set).
  void fill_disagg(RunReport& report, const std::vector<EngineResult>& results, uint32_t num_prefill) const;
  // A mixed fleet: group k is replicas [ends[k - 1], ends[k]) (from 0).
  // Call before the run: it keeps each group's TTFT.
  void set_groups(const std::vector<uint32_t>& ends);
  // Their figures into report.groups (whose names, GPUs, TPs and sizes the
  // caller set, one per group).
  void fill_groups(RunReport& report, const std::vector<EngineResult>& results) const;
  // Verify every replica's pool (by replica index) after each of its steps
  // (--check-invariants); InternalError on a violation.
  void check_pools(std::vector<const BlockPool*> pools) { check_pools_ = std::move(pools); }
  // --steps-out: every `every`-th step's batch (steps 1, 1 + every, ...) goes to `w`.
  void record_steps(StepsWriter* w, uint64_t every) {
    steps_ = w;
    steps_every_ = every;
  }
  // The run has KV tiers: TTFT is also split into queue, load and prefill.
  void set_tiers(bool on) { tiers_ = on; }
  uint64_t refused() const { return refused_; }
  uint64_t counted_output_tokens() const { return counted_.output_tokens; }  // of requests that are not warm-up
  const std::string& first_refusal() const { return first_refusal_; }

 private:
  static constexpr size_t kMaxRows = 1000;
  SeriesRow& row_at(double t_s);
  void progress(const StepRecord& s);

  int32_t block_size_;
  double interval_s_;
  std::vector<SeriesRow> rows_;
  std::vector<double> row_prompt_tokens_, row_output_tokens_;  // computed/produced, per row

  // Exact percentiles for the first 2^20 requests, then a log-linear
  // histogram within 0.3 % (reports/latency.h): 8 MiB each at most.
  static constexpr size_t kExactSamples = size_t{1} << 20;
  LatencyAccumulator ttft_{vllm_ttft_buckets(), kExactSamples};
  LatencyAccumulator queue_{vllm_request_latency_buckets(), kExactSamples};
  LatencyAccumulator e2e_{vllm_request_latency_buckets(), kExactSamples};
  LatencyAccumulator tpot_{vllm_tpot_buckets(), kExactSamples};
  bool tiers_ = false;
  LatencyAccumulator load_{vllm_request_latency_buckets(), kExactSamples};
  LatencyAccumulator prefill_{vllm_request_latency_buckets(), kExactSamples};
  // Disaggregated: the TTFT's parts of split requests.
  LatencyAccumulator part_queue_{vllm_request_latency_buckets(), kExactSamples};
  LatencyAccumulator part_prefill_{vllm_request_latency_buckets(), kExactSamples};
  LatencyAccumulator part_transfer_{vllm_request_latency_buckets(), kExactSamples};
  LatencyAccumulator part_first_decode_{vllm_request_latency_buckets(), kExactSamples};
  uint64_t client_prompt_ = 0, client_hit_ = 0;  // per client request (a split one's prefill hit)

  uint64_t queried_blocks_ = 0, hit_blocks_ = 0;
  double usage_time_ = 0, busy_time_ = 0, usage_max_ = 0;
  TimeNs first_arrival_ = -1, last_arrival_ = 0, last_finish_ = 0;
  CountedRequests counted_;  // the requests that are not warm-up ones
  uint64_t refused_ = 0;
  std::string first_refusal_;
  StepsWriter* steps_ = nullptr;
  uint64_t steps_every_ = 1;

  // Per replica (fleets): what the fleet report and the series' columns need.
  struct ReplicaAcc {
    LatencyAccumulator ttft{vllm_ttft_buckets()};
    uint64_t finished = 0, prompt = 0, hit = 0;
    double usage_time = 0, busy_time = 0, usage_max = 0;
    ReplicaSample now;  // the latest state
    int64_t used_blocks = 0;
  };
  std::vector<ReplicaAcc> replicas_;  // empty for one replica
  // A mixed fleet's groups: their replicas' ranges and TTFT.
  std::vector<uint32_t> group_ends_, group_of_;  // group_of_: by replica
  std::vector<LatencyAccumulator> group_ttft_;
  // Pool figures of replicas [from, to) (a disaggregated pool, a group).
  void fill_pool(PoolReport& p, const std::vector<EngineResult>& results, size_t from, size_t to) const;
  // The fleet's state: sums of every replica's latest, in integers (exact),
  // updated as each step changes one replica rather than re-added over the
  // fleet per step. Its usage is the blocks in use over every pool's blocks.
  int64_t used_sum_ = 0;
  int64_t usable_sum_ = 0;
  uint64_t waiting_sum_ = 0, running_sum_ = 0;
  std::vector<const BlockPool*> check_pools_;
  ProgressLine progress_;
  uint64_t finished_ = 0;
};

// Cache mode's collector: the series, one row per `interval` requests in
// arrival order (100 to start, doubled whenever the rows would pass
// kMaxRows, so memory stays bounded), the progress line, and Ctrl-C, seen
// after every request.
class CacheSeriesCollector {
 public:
  explicit CacheSeriesCollector(bool progress) : progress_(progress) {}
  // The replay's hook: false stops it (the user pressed Ctrl-C).
  bool after_request(const CacheReplayer& rep);
  void fill(RunReport& report) const;

 private:
  static constexpr size_t kMaxRows = 1000;
  uint64_t interval_ = 100;
  std::vector<SeriesRow> rows_;
  CacheReplayResult last_;  // the replayer's totals at the previous request
  ProgressLine progress_;
};

}  // namespace prefixsim
