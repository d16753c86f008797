// One point of a grid: a Scenario run on a trace already parsed into memory,
// reduced to the headline figures. `compare` runs one per (policy, size,
// router, replicas) pair, `sweep` one per grid point, `plan` one per fleet it
// tries; all three share this, so a point equals the replay with the same
// settings (test_scenario_core_cli checks compare's pairs against replay).
//
// Engine mode runs the scenario's fleet (one replica is a lone engine) over
// the parsed requests; cache mode replays the prepared hashes.
#pragma once

#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "policies/retention_probe.h"
#include "reports/latency.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_fleet.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/request.h"

namespace prefixsim {

// A latency bound an engine-mode point may stop at, once no request still
// to come can bring the figure back within it (plan's SLO terms: a fleet
// that fails need not be run to the end to know it fails). Percentiles are
// nearest-rank over the run's requests, warm-up left out (LatencySummary):
// with N requests at most, the q-th percentile is above the limit once
// N - rank(q, N) + 1 of them are, whatever the rest; the mean once the
// values so far add up past limit x N. Values are compared in ms as the
// summary gives them (seconds x 1000).
struct StopBound {
  enum class Figure { kTtft, kQueue, kE2e, kTpot };  // in this order: point_run.cpp indexes by it
  Figure figure = Figure::kTtft;
  double percentile = 99;  // 0: the mean
  double limit_ms = 0;
  std::string text;  // names it, "ttft_p99<=2s"
};

// The input every point of a run shares: the parsed requests (engine mode)
// and the same trace prepared into block hashes (cache mode).
struct PointInput {
  const std::vector<Request>* requests = nullptr;
  const PreparedTrace* prepared = nullptr;
  std::string format;
  // Cache mode: count what each policy kept (RetentionProbe) into
  // PointResult::retention. compare reports it; it changes no decision.
  bool probe_retention = false;
  // Engine mode: stop the run once one of these can no longer hold
  // (PointResult::stopped); empty: run to the end.
  std::vector<StopBound> stop_bounds = {};
};

// Where a point stopped at a StopBound: its figures are not measured.
struct PointStopped {
  std::string bound;        // the bound's text
  uint64_t finished = 0;    // requests finished by then (warm-up left out)
  uint64_t above = 0;       // of them over the limit (a bound on the mean: 0)
  uint64_t requests = 0;    // the most the run could finish (N above)
};

struct PointResult {
  // Requests, tokens, hits and evictions (CacheReplayResult's counts): a
  // cache-mode replay's, or in engine mode the same figures counted at
  // admission.
  CacheReplayResult counts;
  std::optional<RetentionFigures> retention;  // cache mode with PointInput::probe_retention
  // Engine mode only (NaN in cache mode), in ms.
  LatencySummary ttft{NAN, NAN, NAN, NAN, NAN, NAN, 0};
  LatencySummary queue{NAN, NAN, NAN, NAN, NAN, NAN, 0};
  LatencySummary e2e{NAN, NAN, NAN, NAN, NAN, NAN, 0};
  LatencySummary tpot{NAN, NAN, NAN, NAN, NAN, NAN, 0};  // requests with more than one output token
  // Disaggregated only (NaN otherwise): the mean TTFT of a split request in
  // its parts, ms: queued before its prefill, prefill (to the prefill leg's
  // first token), KV transfer (hand-off to KV read, back-pressure
  // included), and the decode instance's step that gives the client's first
  // token. The report's ttft_parts_ms in full (replay).
  struct TtftParts {
    double queue = NAN, prefill = NAN, transfer = NAN, first_decode = NAN;
  } ttft_parts;
  double requests_per_s = NAN, output_tokens_per_s = NAN;  // finished over first arrival .. last finish
  uint64_t preemptions = 0, steps = 0;
  double imbalance = NAN;   // a fleet's max / mean requests per replica
  // Set when the run stopped at a StopBound: it fails that bound, and no
  // figure above was measured (counts zero, latencies NaN).
  std::optional<PointStopped> stopped;
  std::exception_ptr error;  // what the run threw, if it did (the caller rethrows)
};

// Runs `scenario` (its mode, fleet, router, scheduler and cost model) with
// every replica's pool of `num_blocks` under `policy_spec`. Never throws:
// an error is returned in `error`, so a pool of threads can run points.
PointResult run_point(const PointInput& input, const Scenario& scenario, const ResolvedScenario& resolved,
                      const std::string& policy_spec, const PolicyContext& ctx, int64_t num_blocks);

// The scenario's own input (open_scenario_input: slice, load, warm-up) read
// into memory and run as one point under its policy: what `replay` would
// report, reduced to the headline figures. Rethrows the run's error.
PointResult run_scenario_point(const Scenario& scenario, const ResolvedScenario& resolved, const PolicyContext& ctx,
                               int64_t num_blocks);

// A point's headline figures, in point_figure_names()'s order (sweep.csv's
// columns after the parameters; plan's runs): NaN as null, the engine's
// figures null in cache mode.
nlohmann::ordered_json point_figures(const PointResult& r, const Scenario& s, int64_t num_blocks,
                                     int64_t capacity_tokens);
const std::vector<std::string>& point_figure_names();

}  // namespace prefixsim
