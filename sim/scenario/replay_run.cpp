#include "sim/scenario/replay_run.h"

#include <cstdio>
#include <filesystem>

#include "sim/base/error.h"
#include "sim/base/interrupt.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/ideal_hit.h"
#include "sim/scenario/offline_future.h"
#include "sim/scenario/replay_collector.h"
#include "sim/scenario/run_memory.h"
#include "traces/trace_checksum.h"

namespace prefixsim {
namespace {

// What every replay carries whatever its mode: the scenario as resolved, the
// trace and the pool.
RunReport report_head(const ReplaySetup& setup, const std::string& policy_name, const RequestSource& input) {
  const Scenario& s = setup.scenario;
  const KvSizing& kv = setup.kv;
  RunReport report;
  report.mode = s.mode;
  report.scenario = to_json(s);
  report.scenario["policy_resolved"] = policy_name;
  report.scenario["kv_sizing"] = to_json(kv);
  report.scenario["model_spec"] = to_json(*setup.resolved.model);
  report.scenario["gpu_spec"] = to_json(*setup.resolved.gpu);
  report.trace.path = s.trace;
  if (!s.trace.empty()) report.trace.checksum = trace_checksum(s.trace);
  report.trace.format = s.trace.empty() ? "workload:" + s.workload : input.format();
  report.kv_cache.block_size = static_cast<uint64_t>(kv.block_size);
  report.kv_cache.num_blocks = static_cast<uint64_t>(kv.num_blocks);
  report.kv_cache.bytes_per_block = static_cast<uint64_t>(kv.bytes_per_block);
  report.kv_cache.capacity_tokens = static_cast<uint64_t>(kv.capacity_tokens);
  return report;
}

// Cache mode's figures, from the replay's totals.
void fill_cache_figures(const CacheReplayResult& r, RunReport& report) {
  report.trace.requests = r.requests + r.refused_requests;
  report.trace.prompt_tokens = static_cast<uint64_t>(r.prompt_tokens + r.refused_prompt_tokens);
  report.trace.output_tokens = static_cast<uint64_t>(r.output_tokens);
  auto& pc = report.prefix_cache;
  pc.queried_tokens = static_cast<uint64_t>(r.prompt_tokens);
  pc.hit_tokens = static_cast<uint64_t>(r.hit_tokens);
  pc.hit_rate = r.prompt_tokens ? r.hit_rate : kNotAvailable;
  pc.block_hit_rate = r.queried_blocks ? r.block_hit_rate : kNotAvailable;
  pc.evictions = r.evictions;
  pc.lookups.requests = r.requests;
  pc.lookups.queries = static_cast<uint64_t>(r.prompt_tokens);
  pc.lookups.hits = static_cast<uint64_t>(r.hit_tokens);
  if (!report.tiers.empty()) {
    pc.tier_hit_tokens = static_cast<uint64_t>(r.tier_hit_tokens);
    pc.hit_rate_with_tiers = hit_rate_with_tiers(r.hit_tokens, r.tier_hit_tokens, r.prompt_tokens);
  }
  report.series_axis = "request";
}

// Cache mode: each request alone (lookup, allocate, free). belady reads the
// trace ahead (as compare does) and replays it from memory; the others stream.
// `policy` is the one run_replay checked the spec with (belady is made again
// once the pre-pass knows the future).
void run_cache_mode(const ReplaySetup& setup, PolicyContext& pctx, std::unique_ptr<EvictionPolicy> policy,
                    IdealHitSource& ideal, const ReplayRunOptions& o, ReplayRun& out) {
  const Scenario& s = setup.scenario;
  CacheSeriesCollector collector(o.progress);
  const CacheReplayHook hook = [&](const CacheReplayer& rep) { return collector.after_request(rep); };
  CacheReplayResult r;
  FleetTiers tiers;
  if (needs_future(s.policy)) {
    ideal.defer();  // counted on the prepared trace's keys: one table of distinct blocks, not two
    const PreparedTrace trace = prepass(ideal, s.block_size, true, pctx, &ideal);
    tiers = FleetTiers(setup.tiers, 1, std::max<uint32_t>(trace.num_keys(), 1), s.block_size);
    r = run_cache_replay(trace, setup.kv.num_blocks, make_policy(s.policy, pctx), s.check_invariants, hook,
                         tiers.stack(0));
  } else {
    tiers = FleetTiers(setup.tiers, 1, 0, s.block_size);
    ideal.defer();  // accounted after each lookup: the pool's hits are not probed again
    r = run_cache_replay(ideal, s.block_size, setup.kv.num_blocks, std::move(policy), s.check_invariants, hook,
                         tiers.stack(0), &ideal);
  }
  out.report.tiers = tiers.report();
  throw_if_interrupted();
  collector.fill(out.report);
  fill_cache_figures(r, out.report);
  out.refused = r.refused_requests;
  if (out.refused) out.first_refusal = "a request needs more blocks than the whole pool";
}

// --steps-out: the writer, its directory made now when it is --out itself
// (the report makes --out at the end).
std::unique_ptr<StepsWriter> open_steps(const ReplaySetup& setup, const std::string& policy_name,
                                        const ReplayRunOptions& o) {
  const Scenario& s = setup.scenario;
  const std::string source = "prefixsim replay " + (s.trace.empty() ? "workload " + s.workload : s.trace) +
                             ", policy " + policy_name + ", " + std::to_string(setup.kv.num_blocks) + " blocks, " +
                             setup.resolved.model->name + " on " + setup.resolved.gpu->name + " at TP " +
                             std::to_string(s.tp) + ", every " + std::to_string(o.steps_every) + " step(s)";
  const std::filesystem::path steps_dir = std::filesystem::path(o.steps_out).parent_path();
  if (!steps_dir.empty() && !std::filesystem::exists(steps_dir) && same_path(steps_dir.string(), s.out))
    std::filesystem::create_directories(steps_dir);
  return std::make_unique<StepsWriter>(o.steps_out, setup.resolved.model->name, s.tp, s.block_size, source);
}

// A pool's name, size and server; the collector adds its figures.
PoolReport pool_report_head(const FleetPool& pool, const std::string& name) {
  PoolReport p;
  p.name = name;
  p.instances = static_cast<uint32_t>(pool.scenario.replicas);
  p.gpu = pool.resolved.gpu->name;
  p.tp = pool.scenario.tp;
  p.num_blocks = pool.kv.num_blocks;
  return p;
}

// Disaggregated: what the fleet and the coordinator know (the collector adds
// the pools' figures and the TTFT's parts). `span`: the collector's.
DisaggReport disagg_report_head(const Fleet& fleet, const ReplaySetup& setup, TimeNs span) {
  const Scenario& s = setup.scenario;
  const DisaggStats& st = fleet.disagg_stats;
  DisaggReport d;
  d.design = disagg_text(fleet.disagg);
  d.link_gbps_per_gpu = s.kv_link_gbps;
  d.fabric_gbps = s.kv_fabric_gbps;
  d.latency_us = s.kv_link_latency_us;
  for (size_t k = 0; k < setup.pools.size(); ++k)
    d.pools.push_back(pool_report_head(setup.pools[k], k == 0 ? "prefill" : "decode"));
  d.split = st.split;
  d.local = st.local;
  d.prefill_only = st.prefill_only;
  d.transfers = st.transfers;
  d.transfer_blocks = st.transfer_blocks;
  d.transfer_bytes = st.transfer_bytes;
  d.decode_hit_blocks = st.decode_hit_blocks;
  d.streamed_bytes = st.streamed_bytes;
  const double n = static_cast<double>(std::max<uint64_t>(st.transfers, 1));
  d.transfer_ms_mean = static_cast<double>(st.transfer_time) / 1e6 / n;
  d.line_ms_mean = static_cast<double>(st.line_time) / 1e6 / n;
  d.blocked = st.blocked;
  d.blocked_ms_mean = static_cast<double>(st.blocked_time) / 1e6 / static_cast<double>(std::max<uint64_t>(st.blocked, 1));
  const size_t instances = fleet.engines.size();
  for (size_t k = 0; k < fleet.link_stats.size(); ++k) {
    const KvLinkStats& l = fleet.link_stats[k];
    if (l.bytes == 0) continue;
    DisaggLinkReport r;
    if (k == 2 * instances) {
      r.name = "fabric";
    } else {
      const size_t i = k / 2;
      r.name = (i < fleet.num_prefill ? "prefill-" + std::to_string(i) : "decode-" + std::to_string(i - fleet.num_prefill)) +
               (k % 2 == 0 ? " tx" : " rx");
    }
    r.transfers = l.transfers;
    r.bytes = l.bytes;
    r.busy_share = static_cast<double>(l.busy) / static_cast<double>(span);
    r.max_concurrent = l.max_concurrent;
    d.links.push_back(r);
  }
  return d;
}

// Engine mode's figures once the fleet has run.
void fill_engine_figures(const Fleet& fleet, const FleetResult& fres, const IdealHitSource& ideal,
                         const WarmupSource* warmup, ReplayCollector& collector, RunReport& report) {
  const EngineResult& res = fres.total;
  collector.fill(report, res);
  // With a warm-up, the trace section describes the counted requests
  // (run.warmup_requests says how many more were replayed first).
  // A split request arrives twice (its prefill and decode legs).
  report.trace.requests = res.arrived - fleet.disagg_stats.split - (warmup ? warmup->marked() : 0);
  report.trace.prompt_tokens = static_cast<uint64_t>(ideal.prompt_tokens());
  report.trace.output_tokens =
      warmup || fleet.num_prefill > 0 ? collector.counted_output_tokens() : res.output_tokens;
  std::vector<uint64_t> evictions;
  for (const auto& r : fleet.replicas) evictions.push_back(r->pool.evictions());
  report.prefix_cache.evictions = 0;
  for (uint64_t e : evictions) report.prefix_cache.evictions += e;
  collector.fill_fleet(report, fres.replicas, evictions);
  report.router_view = fleet.router_view_report();
  report.admission = fleet.admission_report(fres);
  report.tiers = fleet.tiers.report();
  report.run.event_fingerprint = res.event_fingerprint;
}

// Engine mode: a vLLM server (or a fleet of them on one clock).
void run_engine_mode(const ReplaySetup& setup, const PolicyContext& pctx, IdealHitSource& ideal,
                     const WarmupSource* warmup, const ReplayRunOptions& o, const std::string& policy_name,
                     ReplayRun& out) {
  const Scenario& s = setup.scenario;
  const ExecutorWrap wrap = o.backend ? o.backend->wrap() : ExecutorWrap{};
  const ExecutorWrap* w = o.backend ? &wrap : nullptr;
  Fleet fleet = setup.pools.empty() ? Fleet(s, setup.resolved, setup.kv.num_blocks, s.policy, pctx, w)
                                    : Fleet(s, setup.pools, s.policy, pctx, w);
  out.report.scenario["cost_model"] = fleet.replicas[0]->exec.to_json();
  std::vector<int64_t> usable;  // each replica's pool
  for (const auto& r : fleet.replicas) usable.push_back(r->pool.num_usable());
  ReplayCollector collector(s.block_size, s.series_interval_s, o.progress, usable);
  if (!fleet.group_ends.empty()) collector.set_groups(fleet.group_ends);
  fleet.set_observer(&collector);
  fleet.add_tiers(setup.tiers);
  if (o.backend) o.backend->attach(fleet);
  collector.set_tiers(!setup.tiers.empty());
  if (!o.steps_out.empty()) {
    out.steps = open_steps(setup, policy_name, o);
    collector.record_steps(out.steps.get(), o.steps_every);
  }
  if (s.check_invariants) {
    std::vector<const BlockPool*> pools;
    for (const auto& r : fleet.replicas) pools.push_back(&r->pool);
    collector.check_pools(std::move(pools));
  }
  const FleetResult fres = fleet.run(ideal);
  if (out.steps) out.steps->file().finish();
  fill_engine_figures(fleet, fres, ideal, warmup, collector, out.report);
  if (fleet.num_prefill > 0) {
    out.report.disagg = disagg_report_head(fleet, setup, collector.span());
    collector.fill_disagg(out.report, fres.replicas, fleet.num_prefill);
  }
  if (!fleet.group_ends.empty()) {
    for (const FleetPool& g : setup.pools)
      out.report.groups.push_back(pool_report_head(g, g.resolved.gpu->name + " tp" + std::to_string(g.scenario.tp)));
    collector.fill_groups(out.report, fres.replicas);
  }
  out.report.timed->load.time_scale = setup.resolved.time_scale;
  if (s.check_invariants) {
    const std::string broken = fleet.tiers.check_invariants();
    if (!broken.empty()) throw InternalError("kv tier invariant violated: " + broken);
  }
  if (o.backend) o.backend->finish(pctx, out.report);
  out.refused = fres.total.refused;
  out.first_refusal = collector.first_refusal();
}

// The run's notes and the figures known only at its end.
void finish_report(const IdealHitSource& ideal, const WarmupSource* warmup, ReplayRun& out) {
  RunReport& report = out.report;
  report.prefix_cache.ideal_hit_rate = ideal.valid() ? ideal.hit_rate() : kNotAvailable;
  if (!ideal.valid() && ideal.prompt_tokens() > 0)
    report.run.notes.push_back("ideal hit rate not computed: the trace has more than " +
                               std::to_string(IdealHitSource::kMaxDistinctBlocks) +
                               " distinct blocks (bounded memory); prefixsim analyze computes it");
  report.run.refused_requests = out.refused;
  if (warmup) {
    report.run.warmup_requests = warmup->marked();
    char span[64];
    std::snprintf(span, sizeof span, "%.3f", warmup->marked_span_s());
    report.run.notes.push_back("warm-up: the first " + std::to_string(warmup->marked()) +
                               " requests (arrivals up to " + span +
                               " s after the first) warmed the cache and are left out of every figure");
  }
}

}  // namespace

ReplaySetup prepare_replay(const Scenario& s) {
  validate(s);
  ReplaySetup setup{s, resolve_scenario(s), {}, {}, {}};
  setup.tiers = scenario_tiers(s, *setup.resolved.model);
  setup.pools = fleet_pools(s, setup.resolved);
  if (setup.pools.empty()) {
    setup.kv = size_kv_pool(kv_sizing_input(s, setup.resolved));
    check_run_fits_memory(run_blocks(s, setup.kv, setup.tiers), "--replicas");
    return setup;
  }
  setup.kv = setup.pools[0].kv;
  check_run_fits_memory(run_blocks(setup.pools, setup.tiers), fleet_size_flag(s));
  return setup;
}

ReplayRun run_replay(const ReplaySetup& setup, const ReplayRunOptions& o) {
  const Scenario& s = setup.scenario;
  PolicyContext pctx;
  pctx.block_size = s.block_size;
  // belady: checked now against an empty future, made after the pre-pass.
  const bool offline = needs_future(s.policy);
  if (offline && s.mode != "cache") refuse_future_in_engine_mode("--policy");
  if (offline) pctx.future = no_future();
  auto policy = make_policy(s.policy, pctx);
  const std::string policy_name = canonical_policy_name(s.policy);

  const WarmupSource* warmup = nullptr;
  auto input = open_scenario_input(s, setup.resolved, &warmup);
  IdealHitSource ideal(*input, s.block_size, s.mode == "cache");
  ReplayRun out;
  out.report = report_head(setup, policy_name, *input);
  if (s.mode == "cache") run_cache_mode(setup, pctx, std::move(policy), ideal, o, out);
  else run_engine_mode(setup, pctx, ideal, warmup, o, policy_name, out);
  throw_if_interrupted();
  finish_report(ideal, warmup, out);
  return out;
}

}  // namespace prefixsim
