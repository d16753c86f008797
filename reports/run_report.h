// Everything one replay reports, as plain data. The engine (or cache-mode
// replay) fills a RunReport; reports/ turns it into report.json, series.csv,
// summary.md, metrics.prom and report.html (write_run_outputs, outputs.h).
//
// Conventions:
//  - A double that is not available is NaN; it is written as null in JSON and
//    left empty in CSV (for example ideal_hit_rate when not computed, or the
//    hit rate of an interval in which nothing was queried).
//  - mode "engine": the discrete-event simulation; `timed` is set.
//    mode "cache": each request alone, no time; `timed` is empty and report.json
//    has "latency_ms": null, "throughput": null, "engine": null. The keys stay
//    present so scripts can tell "not measured in this mode" (null) from a
//    broken report (key missing). metrics.prom then holds only the counters
//    that cache mode measures.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reports/latency.h"

namespace prefixsim {

inline constexpr const char* kReportSchema = "prefixsim.report/1";
inline constexpr double kNotAvailable = std::numeric_limits<double>::quiet_NaN();

// The hit rate of the GPU pool and the KV tiers together (what a planner
// sizing CPU memory reads): tokens hit in either over tokens queried;
// kNotAvailable when nothing was queried. The one place it is computed.
inline double hit_rate_with_tiers(int64_t hit_tokens, int64_t tier_hit_tokens, int64_t queried_tokens) {
  return queried_tokens ? static_cast<double>(hit_tokens + tier_hit_tokens) / static_cast<double>(queried_tokens)
                        : kNotAvailable;
}

struct TraceInfo {
  std::string path;    // as given; "" for the built-in workload
  std::string format;  // "native", "mooncake", "workload:chatbot", ...
  uint64_t requests = 0;
  uint64_t prompt_tokens = 0;
  uint64_t output_tokens = 0;
  std::string checksum;  // traces/trace_checksum.h; "" for a workload or stdin
};

struct KvCacheInfo {
  uint64_t block_size = 0;
  uint64_t num_blocks = 0;
  uint64_t bytes_per_block = 0;  // 0 when the pool was sized in blocks/tokens without a model
  uint64_t capacity_tokens = 0;  // block_size * num_blocks
};

// Prefix-cache lookups counted exactly as vLLM v1's PrefixCacheStats does it:
// every lookup (get_computed_blocks), including lookups of requests that are
// then refused for lack of blocks and looked up again; lookups of requests
// that were preempted before count separately. These feed
// vllm:prefix_cache_queries / vllm:prefix_cache_hits, so the simulation can be
// held against a vLLM Grafana.
struct PrefixCacheLookups {
  uint64_t requests = 0, queries = 0, hits = 0;  // queries and hits in tokens
  uint64_t preempted_requests = 0, preempted_queries = 0, preempted_hits = 0;
};

struct PrefixCacheReport {  // (sim/kv/kv_cache_manager.h has vLLM's PrefixCacheStats)
  // Counted once per request at admission (DESIGN.md's hit_rate).
  uint64_t queried_tokens = 0;
  uint64_t hit_tokens = 0;
  double hit_rate = kNotAvailable;        // hit_tokens / queried_tokens
  double block_hit_rate = kNotAvailable;  // hit full blocks / queried full blocks
  double ideal_hit_rate = kNotAvailable;  // with an infinite cache (every repeat hits)
  uint64_t evictions = 0;
  PrefixCacheLookups lookups;
  // With KV tiers below the GPU (RunReport::tiers non-empty): prompt tokens
  // found there after the GPU prefix and loaded, counted at admission as
  // hit_tokens are; hit_rate stays the GPU's (vLLM's prefix_cache_hits).
  uint64_t tier_hit_tokens = 0;
  double hit_rate_with_tiers = kNotAvailable;  // (hit_tokens + tier_hit_tokens) / queried_tokens
  PrefixCacheLookups tier_lookups;             // vLLM's external_prefix_cache counters (engine mode)
};

// One KV tier below the GPU pool (report.json's `tiers`): a CPU tier per
// replica, or a store shared by the fleet.
struct TierReport {
  std::string name, store, policy;
  bool shared = false;
  uint64_t instances = 1;                    // replicas, or 1 when shared
  double size_gib = kNotAvailable;           // per instance; NaN (null) when unbounded
  int64_t capacity_blocks = 0, capacity_tokens = 0;  // per instance; -1 when unbounded
  double read_gb_s = 0, write_gb_s = 0, latency_us = 0;
  uint64_t hit_tokens = 0, hit_blocks = 0;   // found here and loaded (over every instance)
  uint64_t stored_blocks = 0, evicted_blocks = 0;
  uint64_t bytes_read = 0, bytes_written = 0;  // blocks x bytes per block
  int64_t max_occupancy_blocks = 0;          // the fullest instance at its fullest
};

struct LatencyReport {  // all in milliseconds
  LatencySummary ttft, queue, e2e, tpot;
  // With KV tiers: TTFT = queue + load + prefill per request (RequestRecord).
  bool has_load = false;
  LatencySummary load, prefill;
};

struct Throughput {
  double requests_per_s = 0, prompt_tokens_per_s = 0, output_tokens_per_s = 0;
};

struct EngineStats {
  uint64_t steps = 0;
  uint64_t preemptions = 0;
  double kv_usage_mean = 0, kv_usage_max = 0;  // fraction of blocks in use, 0..1
};

// The offered load against what the simulated server served. A server that
// keeps up finishes soon after the last arrival (drain_ratio near 1); one
// that does not finishes drain_ratio times later than the arrivals span, and
// would need about that many replicas to keep up.
struct LoadReport {
  uint64_t requests = 0;
  double arrival_span_s = 0;           // first to last arrival
  double offered_requests_per_s = 0;   // (requests - 1) / arrival_span_s
  double served_requests_per_s = 0;    // requests / (first arrival to last finish)
  double drain_ratio = 0;              // (first arrival to last finish) / arrival_span_s
  double time_scale = 1;               // the factor applied to the trace's gaps (--rate, --time-scale)
  bool saturated = false;              // drain_ratio >= kSaturatedDrainRatio
  uint64_t replicas = 1;               // replicas that served it (a fleet's size)
  uint64_t replicas_needed = 1;        // about ceil(drain_ratio * replicas) when saturated
  static constexpr double kSaturatedDrainRatio = 1.25;
  // Fills the derived fields from the raw ones.
  void derive(double last_finish_s);
  // "saturated: arrivals exceed service by N x; about K replicas would be needed", or "".
  std::string saturation_line() const;
};

// Results that exist only when time is simulated (engine mode).
struct TimedResults {
  LatencyReport latency_ms;
  Throughput throughput;
  EngineStats engine;
  double duration_s = 0;  // simulated time from the first arrival to the last finish
  LoadReport load;
  // vLLM-bucketed histograms in seconds, for metrics.prom
  // (LatencyAccumulator::prom_histogram gives them).
  Histogram ttft_s{vllm_ttft_buckets()};
  Histogram queue_s{vllm_request_latency_buckets()};
  Histogram e2e_s{vllm_request_latency_buckets()};
  Histogram tpot_s{vllm_tpot_buckets()};
  std::vector<CdfPoint> ttft_cdf_ms;  // LatencyAccumulator::cdf_ms
};

// One replica's state in one interval of the series (fleets only).
struct ReplicaSample {
  double kv_usage = 0;          // at the end of the interval
  uint64_t waiting = 0, running = 0;
  uint64_t queried_tokens = 0, hit_tokens = 0;  // admitted in the interval
};

// One interval of the time series (series.csv and the charts). In engine mode
// an interval is a span of simulated time; in cache mode (no time) a span of
// requests in arrival order; RunReport::series_axis says which.
struct SeriesRow {
  double start = 0;             // seconds, or index of the first request
  uint64_t queried_tokens = 0;  // admitted prompt tokens in the interval
  uint64_t hit_tokens = 0;      // of which prefix-cache hits
  uint64_t tier_hit_tokens = 0; // ...and loaded from KV tiers
  double kv_usage = 0;          // fraction of blocks in use at the end of the interval
  uint64_t waiting = 0;         // queue length at the end of the interval
  uint64_t running = 0;         // running requests at the end of the interval
  uint64_t preemptions = 0;     // in the interval
  uint64_t finished = 0;        // requests finished in the interval
  double prompt_tokens_per_s = 0, output_tokens_per_s = 0;  // computed prompt tokens / produced tokens
  std::vector<ReplicaSample> replicas;  // by replica; empty unless a fleet (then the row's state sums them,
                                        // kv_usage is their mean)
};

// One replica of a fleet (report.json's `replicas`).
struct ReplicaReport {
  uint64_t requests = 0;        // finished (counted) requests
  uint64_t refused = 0;
  uint64_t prompt_tokens = 0;   // of those requests (admission-based, like the fleet's hit rate)
  uint64_t hit_tokens = 0;
  double hit_rate = kNotAvailable;
  LatencySummary ttft_ms;
  double kv_usage_mean = 0, kv_usage_max = 0;
  uint64_t steps = 0, preemptions = 0, evictions = 0;
  uint64_t lookup_queries = 0, lookup_hits = 0;  // vLLM-counted lookups (PrefixCacheLookups)
};

// How a fleet shared its load: max over mean of each replica's count (1 is
// perfectly even; N means one replica took everything).
struct FleetImbalance {
  double requests = 0;
  double prompt_tokens = 0;
};

// A prefix-aware router whose view of the caches lags (--router-kv-lag-ms):
// over its decisions, the leading prompt blocks it believed the chosen
// replica held, what that replica held, and what the best replica held.
struct RouterViewReport {
  double kv_lag_ms = 0;  // 0: the KV figures below are not kept
  double scrape_ms = 0;  // 0: the load figures below are not kept
  uint64_t decisions = 0;
  uint64_t mispredicted = 0;
  uint64_t predicted_blocks = 0;
  uint64_t actual_blocks = 0;
  uint64_t oracle_blocks = 0;
  uint64_t stale_load = 0;  // decisions where the sampled load of the chosen replica was not its load
  uint64_t believed_load = 0, actual_load = 0;  // the chosen replica's requests, summed over decisions
};

// Admission at the router (--admission): report.json's `admission`. Every
// latency figure is over the requests served; these are the others.
struct AdmissionReport {
  std::string spec;             // with every parameter
  uint64_t offered = 0;         // requests that reached the router (served or refused)
  uint64_t held = 0;            // waited in the router's queue, then went on
  uint64_t max_queue = 0;
  uint64_t refused_saturated = 0;   // refused at once (no queue)
  uint64_t refused_queue_full = 0;  // refused: the queue was full
  double refusal_rate = 0;          // refused / offered
};

// A pool of like instances in a fleet: a disaggregated fleet's prefill or
// decode pool (report.json's disagg.pools), or a mixed fleet's group
// (fleet.groups, which also carry their requests' tokens and TTFT: the
// groups' requests and tokens add up to the fleet's).
struct PoolReport {
  std::string name;  // "prefill" | "decode" | a group's "GPU tp N"
  uint32_t instances = 0;
  std::string gpu;
  int tp = 1;
  int64_t num_blocks = 0;  // per instance
  uint64_t arrived = 0, finished = 0, refused = 0;  // legs (and whole requests prefilled locally)
  uint64_t steps = 0, preemptions = 0;
  double hit_rate = kNotAvailable;  // its own lookups, at admission
  double busy_share = 0;            // step time over instances x the run's span
  double kv_usage_mean = 0, kv_usage_max = 0;
  // Groups only: their finished requests (warm-up ones left out, as the
  // replicas' rows count them), those requests' prompt and hit tokens (the
  // group's hit_rate is over these) and TTFT.
  uint64_t requests = 0, prompt_tokens = 0, hit_tokens = 0;
  LatencySummary ttft_ms;
};
// Disaggregated prefill and decode (--prefill-replicas): report.json's
// `disagg`. The run's TTFT is the client's; here it is split into its parts.
struct DisaggLinkReport {
  std::string name;  // "prefill-0 tx", "decode-1 rx", "fabric"
  uint64_t transfers = 0, bytes = 0;
  double busy_share = 0;  // time crossed by a transfer over the run's span
  uint32_t max_concurrent = 0;
};
struct DisaggReport {
  std::string design;  // the spec with every parameter
  double link_gbps_per_gpu = 0, fabric_gbps = 0, latency_us = 0;
  std::vector<PoolReport> pools;
  uint64_t split = 0, local = 0, prefill_only = 0;
  uint64_t transfers = 0, transfer_blocks = 0, transfer_bytes = 0, decode_hit_blocks = 0;
  uint64_t streamed_bytes = 0;     // of transfer_bytes: during the prefill (overlap=layerwise)
  double transfer_ms_mean = 0;     // blocks allocated -> KV read
  double line_ms_mean = 0;         // the same transfers alone on idle links
  uint64_t blocked = 0;            // decode legs not scheduled at once on hand-off: the decode
                                   // instance's step under way, or no room (back-pressure)
  double blocked_ms_mean = 0;      // over those
  // The client's TTFT in parts (split requests): queue and prefill on the
  // prefill pool; transfer = prefill's end -> KV read on the decode instance
  // (hand-off, back-pressure, links); first decode = KV read -> first token
  // (first_token=decode only).
  LatencySummary queue_ms, prefill_ms, transfer_ms, first_decode_ms;
  std::vector<DisaggLinkReport> links;  // those that carried bytes
};

// The real backend mode (replay --backend): what ran every step, the
// caching check, and (--shadow) the cost model held against the measured
// steps. report.json's `backend`.
struct BackendStepReport {
  uint32_t replica = 0;
  uint64_t step = 0;
  int64_t seqs = 0, new_tokens = 0, context_tokens = 0;
  double modeled_ms = 0, measured_ms = 0;
};
struct BackendReport {
  std::string kind;   // "cpu" | "gpu"
  std::string shape;  // model shape name, its dimensions below
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  uint64_t seed = 0;
  bool measured_time = false;  // the measured forward drove the clock
  uint64_t steps = 0;
  int64_t tokens = 0;
  double measured_ms = 0;  // summed forward time (gpu)
  struct Check {
    int64_t asked = 0, requests = 0, rows = 0;
    double tolerance = 0, max_rel_error = 0;
    std::string failure;  // "" when passed
  };
  std::optional<Check> check;
  struct Shadow {
    uint64_t steps = 0;
    double mape = 0;      // mean |modeled - measured| / measured, %
    double bias = 0;      // mean (modeled - measured) / measured, %
    double modeled_ms = 0, measured_ms = 0;  // summed
    double p50_abs_error = 0, p90_abs_error = 0;  // of |modeled - measured| / measured, %
    std::vector<BackendStepReport> worst;  // largest |error| first
    // report.html's chart: every timed step, or kMaxShadowPoints of them
    // evenly spaced (reports/backend_shadow.h); not in report.json.
    std::vector<BackendStepReport> points;
    // TTFT of this (measured-clock) run and of the same scenario replayed
    // with the cost model alone, ms.
    double ttft_measured_p50 = 0, ttft_measured_p99 = 0, ttft_modeled_p50 = 0, ttft_modeled_p99 = 0;
  };
  std::optional<Shadow> shadow;
  // KV tiers, mirrored: copies into a tier, loads out of one into a GPU
  // block, and loads the tier had no data for (each fails the check).
  struct Tiers {
    uint64_t stores = 0, loads = 0, missing = 0;
  };
  std::optional<Tiers> tiers;
};

// What the run itself found that is neither configuration nor a metric
// section: report.json's `run` (results never go into `scenario`).
struct RunFacts {
  uint64_t refused_requests = 0;             // can never fit the pool; not replayed
  std::optional<uint64_t> warmup_requests;   // --warmup: replayed, left out of every figure
  std::optional<uint64_t> event_fingerprint;  // engine mode: the processed event stream's (EventLoop)
  std::vector<std::string> notes;            // e.g. why the ideal hit rate is not computed
};

struct RunReport {
  std::string mode = "engine";  // "engine" or "cache"
  std::string tool_name = "prefixsim";
  std::string tool_version;
  nlohmann::json scenario = nlohmann::json::object();  // the resolved configuration, in full
  TraceInfo trace;
  KvCacheInfo kv_cache;
  PrefixCacheReport prefix_cache;
  std::optional<TimedResults> timed;  // engine mode only
  RunFacts run;
  std::string series_axis = "time_s";  // "time_s" or "request"
  std::vector<SeriesRow> series;
  // A fleet (more than one replica): per replica, and the load imbalance.
  std::vector<ReplicaReport> replicas;
  std::vector<PoolReport> groups;               // a mixed fleet's (--replica-groups); empty otherwise
  FleetImbalance imbalance;
  std::optional<RouterViewReport> router_view;  // only with a lag
  std::optional<AdmissionReport> admission;     // only with --admission
  std::optional<DisaggReport> disagg;           // only with --prefill-replicas
  std::vector<TierReport> tiers;  // KV tiers below the GPU; empty: none
  std::optional<BackendReport> backend;  // replay --backend only
};

}  // namespace prefixsim
