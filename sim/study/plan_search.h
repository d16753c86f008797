// The search under `prefixsim plan`: the SLO it must meet, and the fewest
// replicas of one fleet shape (TP, offload) that meet it, found by doubling
// then bisection rather than by trying every count.
//
// Bisection assumes "meets the SLO" is monotone in replicas: once N meet it,
// N + 1 do too. For latency it nearly is (more replicas, less load on each),
// but not exactly: a router's split of sessions or of bursts can change with
// N, so TTFT p99 can step back up by a little. For hit rate it is the other
// way round: a prefix-blind router spreads a conversation over more caches as
// N grows, so the hit rate falls with N, and "hit_rate >= X" may hold for
// small fleets only. The guard: the answer N and N - 1 are both run (the
// bisection ends on them), every run is kept, and any pair of runs where
// more replicas failed while fewer met is reported as a monotonicity
// violation beside the answer. Since the doubling and the bisection never
// run a count above one that met, the search also runs N + 1 (the probe): a
// fleet one larger than the answer failing means the answer sits on an
// unstable edge, and says so.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace prefixsim {

struct StopBound;  // sim/scenario/point_run.h

struct SloTerm {
  std::string text;    // as written, "ttft_p99<=2s"
  std::string metric;  // a sweep column: ttft_p99_ms, hit_rate, ...
  bool at_most = true; // value <= limit (latency); false: value >= limit (hit rate)
  double limit = 0;    // in the column's unit (ms, or a fraction)
  bool meets(double v) const;
  // How far inside the limit v is, as a fraction of the limit (negative: outside).
  double margin(double v) const;
};

// "ttft_p99=2s,hit_rate>=0.5": latencies (ttft_mean, ttft_p50, ttft_p90,
// ttft_p99, queue_p99, e2e_p99, tpot_p50, tpot_p99) take "=" or "<=" and a value in s or ms;
// hit_rate and block_hit_rate take "=" or ">=" and a fraction (or "50%").
// InputError naming --slo and the term.
std::vector<SloTerm> parse_slo(const std::string& text);

// One run's verdict, from its figures (a sweep row: column -> value).
bool meets_slo(const std::vector<SloTerm>& slo, const std::map<std::string, double>& figures);

// The SLO's latency terms as bounds a run may stop at (sim/scenario/
// point_run.h): every term but the hit and refusal rates, which only the
// whole run settles.
std::vector<StopBound> stop_bounds_of(const std::vector<SloTerm>& slo);

struct SearchStep {
  int64_t replicas = 0;
  bool meets = false;
};

struct SearchResult {
  int64_t answer = 0;               // fewest replicas found meeting the SLO; 0 = none up to max
  std::vector<SearchStep> steps;    // every run, in the order run
  std::vector<std::string> violations;  // "4 met but 5 did not"
};

// The count the doubling runs after n failed (1, 2, 4, ... then
// max_replicas itself); 0 after max_replicas. `plan` runs these ahead on
// threads that have no shape of their own left to search.
int64_t doubling_next(int64_t n, int64_t max_replicas);

// Doubling from 1 (1, 2, 4, ... up to max_replicas) until a count meets,
// then bisection between the last that failed and the first that met, then
// the probe of answer + 1 (when within max_replicas).
// `meets(n)` runs the fleet of n replicas; each n is run at most once.
SearchResult search_replicas(int64_t max_replicas, const std::function<bool(int64_t)>& meets);

// A disaggregated fleet: P prefill and D decode instances. "Meets" is taken
// as monotone in each pool (more of either never breaks the SLO), so the
// fleets meeting it form a staircase: the fewest decode instances D(P) a
// prefill pool of P needs falls as P grows. The search:
//   1. doubling at 1:1 (1:1, 2:2, 4:4, ... up to max_per_pool) until K:K meets;
//   2. the fewest prefill instances P* with K decode (bisection on [1, K]),
//      then the fewest decode instances D* with P* (bisection on [1, K]);
//   3. more prefill: for P = P* + 1, P* + 2, ..., the fewest D below the
//      last (bisection), while P prefill and one decode instance could
//      still cost less than the best found;
//   4. fewer prefill: for P = P* - 1, P* - 2, ..., which need more than K
//      decode instances, while a fleet of them could still cost less: one
//      run at the most decode instances that would, then bisection;
// then the probe (P + 1):(D + 1) of the answer. Under monotonicity the
// answer is the cheapest fleet of at most max_per_pool in each pool (ties:
// fewer instances, then fewer prefill); with equal prices per instance
// step 4 runs nothing. Any run contradicting monotonicity is reported.
struct SplitStep {
  int64_t prefill = 0, decode = 0;
  bool meets = false;
};
struct SplitSearchResult {
  int64_t prefill = 0, decode = 0;     // the answer; 0:0 = none up to max_per_pool
  std::vector<SplitStep> steps;        // every run, in the order run
  std::vector<std::string> violations; // "4:2 met but 4:3 did not"
};
// `meets(p, d)` runs the fleet, each (p, d) at most once; `cost(p, d)` prices it.
SplitSearchResult search_split(int64_t max_per_pool, const std::function<double(int64_t, int64_t)>& cost,
                               const std::function<bool(int64_t, int64_t)>& meets);

}  // namespace prefixsim
