#include "sim/scenario/scenario_fleet.h"

#include <cmath>

#include "sim/fleet/fleet.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/cost/shipped_profiles.h"
#include "sim/engine/source_filters.h"
#include "traces/trace_reader.h"
#include "workloads/workload.h"

namespace prefixsim {
namespace {

constexpr int64_t kDefaultWorkloadRequests = 2000;

std::unique_ptr<RequestSource> open_raw_input(const Scenario& s) {
  if (s.trace.empty()) {
    WorkloadOverrides o;
    o.requests = s.requests.value_or(kDefaultWorkloadRequests);
    o.rate = s.rate;
    o.seed = s.seed;
    return make_workload(s.workload, o);
  }
  TraceOptions t;
  t.format = s.format;
  t.trace_block_size = s.trace_block_size;
  t.conversation_rate = s.conversation_rate;
  t.seed = s.seed;
  t.sort = s.sort;
  std::unique_ptr<RequestSource> src = open_trace(s.trace, t);
  if (s.requests) src = std::make_unique<LimitedSource>(std::move(src), *s.requests);
  return src;
}

// A trace's own mean arrival rate over the requests replayed: (n - 1)
// arrivals over the span from the first to the last.
double measure_trace_rate(const Scenario& s) {
  if (s.trace == "-")
    throw InputError("--rate: a trace read from stdin cannot be measured first; give --time-scale instead");
  auto src = open_raw_input(s);
  Request r;
  int64_t n = 0;
  TimeNs first = 0, last = 0;
  while (src->next(r)) {
    if (n++ == 0) first = r.arrival;
    last = r.arrival;
  }
  if (n < 2 || last <= first)
    throw InputError("--rate: the trace's requests all arrive at one instant, so it has no rate to rescale; "
                     "give --time-scale instead");
  return static_cast<double>(n - 1) / (static_cast<double>(last - first) / 1e9);
}

}  // namespace

namespace {
// Expert parallelism needs a MoE with routing figures (experts, top-k) and a
// cost model that knows the split: a per-GPU profile was timed on a shard
// holding every expert.
void check_expert_parallel(const Scenario& s, const ResolvedScenario& r) {
  if (!s.enable_expert_parallel) return;
  if (!r.model->has_routing())
    throw InputError("--enable-expert-parallel: " + r.model->name +
                     " has no routed experts (a MoE catalog entry with 'experts' and 'experts_per_token')");
  if (r.profile)
    throw InputError("--enable-expert-parallel: --profile " + s.profile +
                     " was timed on one shard holding every expert; use the default cost model, a step model or "
                     "--profile roofline");
}
}  // namespace

ResolvedScenario resolve_scenario(const Scenario& s) {
  if (!s.model_file.empty()) add_user_models(s.model_file);
  if (!s.gpu_file.empty()) add_user_gpus(s.gpu_file);
  ResolvedScenario r;
  r.model = &find_model(s.model);
  r.gpu = &find_gpu(s.gpu);
  if (s.profile.empty()) r.step_model = default_step_model();
  else if (s.profile == kRooflineProfile) {
  } else if (s.profile != kBuiltinProfile && is_step_model_text(read_whole_file(s.profile, "profile"))) {
    r.step_model = read_step_model(s.profile);
  } else {
    r.profile = resolve_profile(s.profile, r.model->name, r.gpu->name, s.tp);
  }
  check_expert_parallel(s, r);
  if (s.time_scale) r.time_scale = *s.time_scale;
  if (!s.trace.empty() && s.rate) {
    r.trace_rate = measure_trace_rate(s);
    r.time_scale = r.trace_rate / *s.rate;
  }
  return r;
}

KvSizingInput kv_sizing_input(const Scenario& s, const ResolvedScenario& r) {
  KvSizingInput kin;
  kin.model = r.model;
  kin.gpu = r.gpu;
  kin.tp = s.tp;
  kin.expert_dp = expert_dp(s);
  kin.block_size = s.block_size;
  kin.gpu_mem_util = s.gpu_mem_util;
  kin.max_num_batched_tokens = s.max_num_batched_tokens;
  kin.max_num_seqs = s.max_num_seqs;
  kin.kv_blocks = s.kv_blocks;
  kin.kv_tokens = s.kv_tokens;
  kin.kv_gb = s.kv_gb;
  kin.kv_dtype_bytes = kv_dtype_bytes(s);
  return kin;
}

SchedulerConfig scheduler_config(const Scenario& s) {
  SchedulerConfig sc;
  sc.max_num_seqs = s.max_num_seqs;
  sc.max_num_batched_tokens = s.max_num_batched_tokens;
  sc.enable_chunked_prefill = s.enable_chunked_prefill;
  sc.long_prefill_token_threshold = s.long_prefill_token_threshold;
  sc.async_scheduling = s.async_scheduling;
  return sc;
}

VllmTiming vllm_timing(const Scenario& s, const ResolvedScenario& r) {
  VllmTiming t;
  t.graphs = CudaGraphs::vllm_default(parse_cuda_graph_mode(s.cudagraph_mode, "--cudagraph-mode"), s.max_num_seqs,
                                      s.max_num_batched_tokens);
  apply_step_model_timing(r.step_model ? r.step_model->terms : roofline_terms(), t);
  // divisions: 10 us is 1e-05 exactly as the report prints it
  if (s.host_per_seq_us) t.host_per_seq_s = *s.host_per_seq_us / 1e6;
  if (s.request_overhead_ms) t.request_s = *s.request_overhead_ms / 1e3;
  if (s.tokenize_us_per_token) t.request_per_prompt_token_s = *s.tokenize_us_per_token / 1e6;
  return t;
}

std::unique_ptr<RequestSource> open_scenario_input(const Scenario& s, const ResolvedScenario& r,
                                                   const WarmupSource** warmup) {
  std::unique_ptr<RequestSource> src = open_raw_input(s);
  if (!s.trace.empty() && r.time_scale != 1.0)
    src = std::make_unique<RescaledSource>(std::move(src), r.time_scale, r.trace_rate > 0 ? "--rate" : "--time-scale");
  if (s.warmup || s.warmup_seconds) {
    auto w = std::make_unique<WarmupSource>(std::move(src), s.warmup.value_or(0), s.warmup_seconds.value_or(0));
    if (warmup) *warmup = w.get();
    src = std::move(w);
  }
  return src;
}

ModeledExecutor make_executor(const Scenario& s, const ResolvedScenario& r) {
  if (r.step_model) {
    const CostCoefficients c =
        step_model_coefficients(r.step_model->terms, step_basis(*r.model, *r.gpu, s.tp, kv_dtype_bytes(s), expert_dp(s)));
    return ModeledExecutor(*r.model, *r.gpu, s.tp, c, to_json(*r.step_model), vllm_timing(s, r));
  }
  CostModelOptions o;
  o.kv_dtype_bytes = kv_dtype_bytes(s);
  o.expert_dp = expert_dp(s);
  return ModeledExecutor(*r.model, *r.gpu, s.tp, r.profile, o, vllm_timing(s, r));
}

Replica::Replica(const Scenario& s, const ResolvedScenario& r, int64_t num_blocks,
                 std::unique_ptr<EvictionPolicy> policy, EventLoop* loop, uint32_t index, const ExecutorWrap* wrap)
    : pool(static_cast<int32_t>(num_blocks), true, std::move(policy)),
      kv(s.block_size, pool),
      exec(make_executor(s, r)),
      backend(wrap ? (*wrap)(exec, pool, s.block_size, index) : nullptr),
      engine(loop ? Engine(scheduler_config(s), kv, stepper(), *loop, index) : Engine(scheduler_config(s), kv, stepper())) {}

namespace {
// What a router of `replicas` replicas, each with a pool of `pool_blocks`, is told.
RouterContext router_context(int32_t replicas, int32_t block_size, int64_t pool_blocks) {
  RouterContext c;
  c.replicas = static_cast<uint32_t>(replicas);
  c.block_size = block_size;
  c.pool_blocks = pool_blocks;
  return c;
}
}  // namespace

void Fleet::set_router_settings(const Scenario& s) {
  router_kv_lag_ms = s.router_kv_lag_ms;
  router_scrape_ms = s.router_scrape_ms;
  admission = parse_admission(s.admission);
}

Fleet::Fleet(const Scenario& s, const ResolvedScenario& r, int64_t num_blocks, const std::string& policy,
             const PolicyContext& ctx, const ExecutorWrap* wrap)
    : block_size(s.block_size) {
  set_router_settings(s);
  router = make_router(s.router, router_context(s.replicas, s.block_size, num_blocks));
  add_replicas(s, r, num_blocks, policy, ctx, wrap);
}

Fleet::Fleet(const Scenario& s, const std::vector<FleetPool>& pools, const std::string& policy,
             const PolicyContext& ctx, const ExecutorWrap* wrap)
    : block_size(s.block_size) {
  if (disaggregated(s)) add_disagg_pools(s, pools, policy, ctx, wrap);
  else add_groups(s, pools, policy, ctx, wrap);
}

// Mixed: one router over every group's replicas, told each one's pool.
void Fleet::add_groups(const Scenario& s, const std::vector<FleetPool>& pools, const std::string& policy,
                       const PolicyContext& ctx, const ExecutorWrap* wrap) {
  set_router_settings(s);
  RouterContext rctx = router_context(0, s.block_size, pools.at(0).kv.num_blocks);
  for (const FleetPool& p : pools) rctx.replica_blocks.insert(rctx.replica_blocks.end(), p.scenario.replicas, p.kv.num_blocks);
  rctx.replicas = static_cast<uint32_t>(rctx.replica_blocks.size());
  router = make_router(s.router, rctx);
  for (const FleetPool& p : pools) {
    add_replicas(p.scenario, p.resolved, p.kv.num_blocks, policy, ctx, wrap);
    group_ends.push_back(static_cast<uint32_t>(replicas.size()));
  }
}

// Disaggregated: the prefill pool's replicas behind `router`, then the
// decode pool's behind `decode_router`; the design and the links.
void Fleet::add_disagg_pools(const Scenario& s, const std::vector<FleetPool>& pools, const std::string& policy,
                             const PolicyContext& ctx, const ExecutorWrap* wrap) {
  disagg = parse_disagg(s.disagg);
  if (pools.size() != 2) throw InternalError("fleet: a disaggregated fleet has two pools");
  disagg.layers = pools[0].resolved.model->layers;  // layer-wise streaming's last layer
  disagg.admission = admission = parse_admission(s.admission);
  for (size_t k = 0; k < 2; ++k) {
    const FleetPool& p = pools[k];
    (k == 0 ? router : decode_router) =
        make_router(p.scenario.router, router_context(p.scenario.replicas, s.block_size, p.kv.num_blocks));
    add_replicas(p.scenario, p.resolved, p.kv.num_blocks, policy, ctx, wrap);
    nics.insert(nics.end(), static_cast<size_t>(p.scenario.replicas), s.kv_link_gbps * 1e9 * p.scenario.tp);
  }
  num_prefill = static_cast<uint32_t>(pools[0].scenario.replicas);
  transfer_bytes_per_block = pools[1].kv.bytes_per_block * pools[1].scenario.tp;
  link.nic_bytes_per_s = s.kv_link_gbps * 1e9;
  link.fabric_bytes_per_s = s.kv_fabric_gbps * 1e9;
  link.latency = static_cast<TimeNs>(std::llround(s.kv_link_latency_us * 1e3));
}

void Fleet::add_replicas(const Scenario& s, const ResolvedScenario& r, int64_t num_blocks, const std::string& policy,
                         const PolicyContext& ctx, const ExecutorWrap* wrap) {
  for (int32_t i = 0; i < s.replicas; ++i) {
    const auto index = static_cast<uint32_t>(replicas.size());
    replicas.push_back(std::make_unique<Replica>(s, r, num_blocks, make_policy(policy, ctx), &loop, index, wrap));
    engines.push_back(&replicas.back()->engine);
  }
}

namespace {
// A pool's scenario, resolved on its GPU and sized by its GPU and TP.
FleetPool sized_pool(Scenario pool, const ResolvedScenario& whole) {
  FleetPool p{std::move(pool), {}, {}};
  p.resolved = resolve_pool(p.scenario, whole);
  p.kv = size_kv_pool(kv_sizing_input(p.scenario, p.resolved));
  return p;
}
}  // namespace

std::vector<FleetPool> disagg_pools(const Scenario& s, const ResolvedScenario& whole) {
  std::vector<FleetPool> pools;
  for (const bool prefill : {true, false}) pools.push_back(sized_pool(pool_scenario(s, prefill), whole));
  return pools;
}

std::vector<FleetPool> group_pools(const Scenario& s, const ResolvedScenario& whole) {
  std::vector<FleetPool> pools;
  for (Scenario& g : group_scenarios(s)) pools.push_back(sized_pool(std::move(g), whole));
  return pools;
}

std::vector<FleetPool> fleet_pools(const Scenario& s, const ResolvedScenario& whole) {
  if (disaggregated(s)) return disagg_pools(s, whole);
  if (mixed_fleet(s)) return group_pools(s, whole);
  return {};
}

ResolvedScenario resolve_pool(const Scenario& pool, const ResolvedScenario& whole) {
  ResolvedScenario r = whole;
  r.gpu = &find_gpu(pool.gpu);
  if (whole.profile) r.profile = resolve_profile(pool.profile, r.model->name, r.gpu->name, pool.tp);
  return r;
}

void Fleet::set_observer(EngineObserver* obs) {
  observer_ = obs;
  for (Engine* e : engines) e->set_observer(obs);
}

void Fleet::add_tiers(const std::vector<TierSpec>& specs) {
  if (specs.empty()) return;
  tiers = FleetTiers(specs, static_cast<int>(engines.size()), 0, block_size);
  for (size_t i = 0; i < engines.size(); ++i) engines[i]->set_tiers(tiers.stack(i));
}

FleetResult Fleet::run(RequestSource& source) {
  if (num_prefill > 0) {
    DisaggResult d = run_disagg(loop, source, engines, num_prefill, *router, *decode_router, block_size, disagg, link,
                                transfer_bytes_per_block, observer_, nics);
    disagg_stats = d.stats;
    link_stats = std::move(d.links);
    return std::move(d.fleet);
  }
  return run_fleet(loop, source, engines, *router, block_size, router_kv_lag(), &router_view, router_scrape(),
                   admission);
}

TimeNs Fleet::router_kv_lag() const { return static_cast<TimeNs>(std::llround(router_kv_lag_ms * 1e6)); }
TimeNs Fleet::router_scrape() const { return static_cast<TimeNs>(std::llround(router_scrape_ms * 1e6)); }

std::optional<AdmissionReport> Fleet::admission_report(const FleetResult& r) const {
  if (!admission.enabled) return std::nullopt;
  const AdmissionStats& a = r.admission;
  AdmissionReport out;
  out.spec = admission_text(admission);
  // Client requests: a split one arrives at both pools, but was offered once.
  out.offered = (num_prefill > 0 ? disagg_stats.routed : r.total.arrived) + a.refused();
  out.held = a.held;
  out.max_queue = a.max_queue;
  out.refused_saturated = a.refused_saturated;
  out.refused_queue_full = a.refused_queue_full;
  out.refusal_rate = out.offered ? static_cast<double>(a.refused()) / static_cast<double>(out.offered) : 0.0;
  return out;
}

std::optional<RouterViewReport> Fleet::router_view_report() const {
  const bool kv = router_kv_lag() > 0 && router->needs_prompt_blocks();
  const bool load = router_scrape() > 0 && router->reads_scraped_load();
  if (engines.size() < 2 || !(kv || load)) return std::nullopt;
  const RouterViewStats& v = router_view;
  RouterViewReport r;
  r.kv_lag_ms = kv ? router_kv_lag_ms : 0;
  r.scrape_ms = load ? router_scrape_ms : 0;
  r.decisions = v.decisions;
  r.mispredicted = v.mispredicted;
  r.predicted_blocks = v.predicted_blocks;
  r.actual_blocks = v.actual_blocks;
  r.oracle_blocks = v.oracle_blocks;
  r.stale_load = v.stale_load;
  r.believed_load = v.believed_load;
  r.actual_load = v.actual_load;
  return r;
}

}  // namespace prefixsim
