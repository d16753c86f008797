#include "sim/study/compare_run.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <span>

#include "policies/registry.h"
#include "sim/base/error.h"
#include "sim/base/json_out.h"
#include "sim/base/parallel_for.h"
#include "sim/base/progress_line.h"
#include "sim/cost/kv_sizing.h"
#include "sim/engine/cache_replay.h"
#include "traces/prefix_reuse.h"
#include "sim/fleet/router.h"
#include "sim/kv/block_pool.h"
#include "sim/scenario/kv_tiers.h"
#include "sim/scenario/offline_future.h"
#include "sim/scenario/point_run.h"
#include "sim/scenario/scenario_fleet.h"

namespace prefixsim {
namespace {

// How many of the hottest prefixes compare explains (prefix_reuse.h).
constexpr size_t kHotPrefixes = 5;
constexpr int64_t kMaxReplicas = 4096;

// The axes of the comparison, validated before the trace is read.
struct Axes {
  std::vector<std::string> specs, names;
  bool need_future = false;  // a policy reads the future (belady)
  std::vector<std::string> routers;
  std::vector<int64_t> fleet_sizes;
  bool fleets = false;
  std::vector<double> offloads;
  bool offloading = false;
  std::vector<KvSizing> sizes;
};

// One run: an index into each axis.
struct Pair {
  size_t policy = 0, size = 0, router = 0, fleet = 0, offload = 0;
};

// The trace, parsed and hashed once for every pair.
struct TraceInput {
  std::vector<Request> requests;  // engine mode only
  PreparedTrace trace;
  PolicyContext ctx;
  std::string format;
};

void policy_axis(const CompareOptions& o, Axes& a) {
  if (o.policies.empty()) throw InputError("--policies: nothing given");
  a.specs = o.policies;
  for (const std::string& s : a.specs) {
    a.names.push_back(canonical_policy_name(s));
    a.need_future = a.need_future || needs_future(s);
  }
  PolicyContext probe;
  probe.block_size = o.scenario.block_size;
  probe.future = no_future();
  for (const std::string& s : a.specs) make_policy(s, probe);
}

void fleet_axes(const CompareOptions& o, Axes& a) {
  a.fleets = !o.routers.empty() || !o.replicas.empty();
  a.routers = o.routers.empty() ? std::vector<std::string>{o.scenario.router} : o.routers;
  a.fleet_sizes = o.replicas.empty() ? std::vector<int64_t>{1} : o.replicas;
  if (!a.fleets) return;
  if (o.scenario.mode != "engine")
    throw InputError("--routers/--replicas: fleets run in engine mode (add --mode engine)");
  for (int64_t n : a.fleet_sizes) {
    if (n < 1) throw InputError("--replicas: " + std::to_string(n) + " is not a positive number");
    if (n > kMaxReplicas) throw InputError("--replicas: " + std::to_string(n) + " is more than 4096");
  }
  for (const std::string& r : a.routers) make_router(r, RouterContext{});
}

// The pool sizes, through the same sizing as replay; every offloading size
// builds its tiers once, so a bad tier is exit 2 before the trace is read.
void size_axis(const CompareOptions& o, const ResolvedScenario& resolved, Axes& a) {
  const Scenario& scen = o.scenario;
  for (double gib : a.offloads) {
    Scenario probe = scen;
    if (a.offloading) probe.kv_offloading_size = gib;
    scenario_tiers(probe, *resolved.model);
  }
  auto size_one = [&](auto set) {
    KvSizingInput in = kv_sizing_input(scen, resolved);
    set(in);
    a.sizes.push_back(size_kv_pool(in));
  };
  for (int64_t n : o.kv_blocks) size_one([n](KvSizingInput& in) { in.kv_blocks = n; });
  for (int64_t n : o.kv_tokens) size_one([n](KvSizingInput& in) { in.kv_tokens = n; });
  for (double g : o.kv_gb) size_one([g](KvSizingInput& in) { in.kv_gb = g; });
  for (const KvSizing& k : a.sizes)
    if (k.num_blocks < 2) throw InputError("compare: a pool needs at least 2 blocks (block 0 is the null block)");
}

// The policies, fleets and offloading sizes, checked before the scenario is
// resolved (an unknown policy is named before a slow catalog).
Axes named_axes(const CompareOptions& o) {
  Axes a;
  policy_axis(o, a);
  fleet_axes(o, a);
  a.offloading = !o.offloading_gib.empty();
  a.offloads = a.offloading ? o.offloading_gib : std::vector<double>{0};
  for (double gib : a.offloads)
    if (!(gib >= 0)) throw InputError("--kv-offloading-size: a size must be 0 (none), positive or inf");
  return a;
}

TraceInput read_trace(const Scenario& scen, const ResolvedScenario& resolved, bool need_future) {
  TraceInput in;
  in.ctx.block_size = scen.block_size;
  auto src = open_scenario_input(scen, resolved);
  in.format = src->format();
  if (scen.mode == "engine") {
    if (need_future) refuse_future_in_engine_mode("--policies");
    Request r;
    while (src->next(r)) in.requests.push_back(r);
    in.trace = prepare_trace(std::span<const Request>(in.requests), scen.block_size);
  } else {
    in.trace = prepass(*src, scen.block_size, need_future, in.ctx);
  }
  if (in.trace.size() == 0) throw InputError(scen.trace + ": the trace has no requests");
  if (in.trace.warmup == in.trace.size())
    throw InputError(std::string(scen.warmup ? "--warmup" : "--warmup-seconds") + ": the warm-up covers all " +
                     std::to_string(in.trace.size()) + " requests of the trace; none is left to count");
  return in;
}

// Size-major, then policy, router, fleet size and offloading size: the
// order of the report's rows.
std::vector<Pair> make_pairs(const Axes& a) {
  std::vector<Pair> pairs;
  for (size_t z = 0; z < a.sizes.size(); ++z)
    for (size_t p = 0; p < a.specs.size(); ++p)
      for (size_t rt = 0; rt < a.routers.size(); ++rt)
        for (size_t f = 0; f < a.fleet_sizes.size(); ++f)
          for (size_t o = 0; o < a.offloads.size(); ++o) pairs.push_back({p, z, rt, f, o});
  return pairs;
}

// A pair's scenario: the compare's, with its router, fleet size and offloading.
Scenario pair_scenario(const Scenario& scen, const Axes& a, const Pair& pr) {
  Scenario ps = scen;
  ps.router = a.routers[pr.router];
  ps.replicas = static_cast<int32_t>(a.fleet_sizes[pr.fleet]);
  if (a.offloading) ps.kv_offloading_size = a.offloads[pr.offload];
  return ps;
}

std::vector<PointResult> run_pairs(const CompareOptions& o, const ResolvedScenario& resolved, const Axes& a,
                                   const TraceInput& in, const std::vector<Pair>& pairs) {
  const PointInput input{&in.requests, &in.trace, in.format, o.scenario.mode == "cache"};
  const int threads = std::min<int>(std::max(1, o.threads), static_cast<int>(pairs.size()));
  std::vector<PointResult> results(pairs.size());
  // Bigger pools replay slower: they go first.
  const auto order = heaviest_first(pairs.size(), [&](size_t i) {
    return a.sizes[pairs[i].size].num_blocks * a.fleet_sizes[pairs[i].fleet] +
           (a.offloads[pairs[i].offload] > 0 ? 1 : 0);
  });
  // Pairs done so far, on a terminal (a whole archive can take minutes).
  ProgressLine progress(o.progress);
  std::mutex progress_mu;
  size_t done = 0;
  parallel_for(order.size(), threads, [&](size_t k) {
    const size_t i = order[k];
    const Pair& pr = pairs[i];
    results[i] = run_point(input, pair_scenario(o.scenario, a, pr), resolved, a.specs[pr.policy], in.ctx,
                           a.sizes[pr.size].num_blocks);
    const std::lock_guard<std::mutex> lock(progress_mu);
    ++done;
    if (progress.due())
      progress.draw("compare: " + std::to_string(done) + " of " + std::to_string(pairs.size()) + " pairs done (last: " +
                    a.names[pr.policy] + " at " + std::to_string(a.sizes[pr.size].num_blocks) + " blocks)");
  });
  progress.clear();
  for (const PointResult& r : results)
    if (r.error) std::rethrow_exception(r.error);
  return results;
}

CompareRow report_row(const Pair& pr, const PointResult& res, int64_t ghost_blocks) {
  const CacheReplayResult& c = res.counts;
  CompareRow row;
  row.policy = pr.policy, row.size = pr.size, row.router = pr.router, row.fleet = pr.fleet, row.offload = pr.offload;
  row.requests = c.requests;
  row.prompt_tokens = c.prompt_tokens, row.hit_tokens = c.hit_tokens, row.tier_hit_tokens = c.tier_hit_tokens;
  row.hit_rate = c.hit_rate;
  row.queried_blocks = c.queried_blocks, row.hit_blocks = c.hit_blocks;
  row.block_hit_rate = c.block_hit_rate;
  row.evictions = c.evictions, row.refused_requests = c.refused_requests;
  row.ghost_blocks = ghost_blocks;
  if (res.retention) {
    row.retention = true;
    row.evicted_after_hit = res.retention->evicted_after_hit;
    row.hits_on_recomputed = res.retention->hits_on_recomputed;
  }
  row.ttft_p50_ms = res.ttft.p50, row.ttft_p99_ms = res.ttft.p99;
  row.imbalance = res.imbalance;
  return row;
}

// A pool of the pair's size sizes the policy's ghost list.
int64_t ghost_blocks(const std::string& spec, const PolicyContext& ctx, int64_t num_blocks) {
  return BlockPool(static_cast<int32_t>(num_blocks), true, make_policy(spec, ctx)).policy().ghost_capacity();
}

// The hot-prefix explanation: the hottest shared prefixes' reuse distances,
// which the documents hold against each pair's usable blocks and ghost list.
std::vector<CompareHotPrefix> hot_prefixes(const PreparedTrace& trace) {
  std::vector<CompareHotPrefix> out;
  for (const PrefixReuse& h : hot_prefix_reuse(trace, kHotPrefixes))
    out.push_back({to_hex(h.last), h.blocks, h.reuses, h.tokens_saved, h.distances, h.median_distance});
  return out;
}

void report_axes(const CompareOptions& o, const ResolvedScenario& resolved, const Axes& a, const TraceInput& in,
                 CompareReport& rep) {
  const Scenario& scen = o.scenario;
  rep.mode = scen.mode;
  rep.trace_path = scen.trace, rep.trace_format = in.format;
  rep.requests = in.trace.size();
  rep.prompt_tokens = in.trace.prompt_tokens, rep.output_tokens = in.trace.output_tokens;
  rep.block_size = scen.block_size;
  if (scen.mode == "engine") {
    rep.cost_model = Replica(scen, resolved, 2, make_policy("lru", in.ctx)).exec.to_json();
    rep.model = resolved.model->name, rep.gpu = resolved.gpu->name, rep.tp = scen.tp;
  }
  rep.specs = a.specs, rep.policy_names = a.names;
  rep.routers = a.routers, rep.replicas = a.fleet_sizes, rep.fleets = a.fleets;
  rep.offloading_gib = a.offloads, rep.offloading = a.offloading;
  rep.tiered = a.offloading || !scen.kv_tiers.empty();
  rep.offline_policy = a.need_future;
  for (const KvSizing& k : a.sizes)
    rep.sizes.push_back({k.num_blocks, k.capacity_tokens, k.bytes_per_block, k.source});
}

CompareReport make_report(const CompareOptions& o, const ResolvedScenario& resolved, const Axes& a,
                          const TraceInput& in, const std::vector<Pair>& pairs,
                          const std::vector<PointResult>& results) {
  CompareReport rep;
  report_axes(o, resolved, a, in, rep);
  rep.belady_hit_rate.assign(a.sizes.size(), NAN);  // belady's hit rate at each size, for the gaps
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& pr = pairs[i];
    const int64_t ghosts = ghost_blocks(a.specs[pr.policy], in.ctx, a.sizes[pr.size].num_blocks);
    rep.rows.push_back(report_row(pr, results[i], ghosts));
    if (a.names[pr.policy] == "belady") rep.belady_hit_rate[pr.size] = results[i].counts.hit_rate;
  }
  rep.hot_prefixes = hot_prefixes(in.trace);
  return rep;
}

}  // namespace

CompareReport run_compare(const CompareOptions& options) {
  const Scenario& scen = options.scenario;
  if (!valid_utf8(scen.trace)) throw InputError("compare: TRACE: must be valid UTF-8 (it goes into compare.json)");
  validate(scen);
  const int lists = static_cast<int>(!options.kv_blocks.empty()) + static_cast<int>(!options.kv_tokens.empty()) +
                    static_cast<int>(!options.kv_gb.empty());
  if (lists != 1) throw InputError("compare: give exactly one of --kv-blocks, --kv-tokens, --kv-gb");
  Axes axes = named_axes(options);
  if (scen.mode != "engine" && !scen.profile.empty())
    throw InputError("--profile: only engine mode has a cost model (add --mode engine)");
  const ResolvedScenario resolved = resolve_scenario(scen);
  size_axis(options, resolved, axes);
  const TraceInput input = read_trace(scen, resolved, axes.need_future);
  const std::vector<Pair> pairs = make_pairs(axes);
  const std::vector<PointResult> results = run_pairs(options, resolved, axes, input, pairs);
  return make_report(options, resolved, axes, input, pairs, results);
}

}  // namespace prefixsim
