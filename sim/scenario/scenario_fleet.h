// The one core under replay and compare: a Scenario resolved once (catalog
// entries, profile, scheduler settings, the input with its slice and load),
// and one replica built from it. `replay` runs one; `compare --mode engine`
// runs one per (policy, size) pair, so a pair equals the replay with the same
// flags by construction (test_scenario_core checks it).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "sim/scenario/kv_tiers.h"
#include "sim/scenario/scenario.h"
#include "sim/cost/catalog.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/kv_sizing.h"
#include "sim/cost/profile.h"
#include "sim/cost/step_model.h"
#include "policies/registry.h"
#include "sim/engine/arrivals.h"
#include "sim/engine/engine.h"
#include "sim/fleet/admission.h"
#include "sim/fleet/disagg.h"
#include "sim/fleet/kv_link.h"
#include "sim/fleet/router.h"
#include "sim/fleet/router_view.h"
#include "sim/engine/request_source.h"
#include "sim/engine/source_filters.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/kv_cache_manager.h"

namespace prefixsim {

struct ResolvedScenario {
  const ModelSpec* model = nullptr;
  const GpuSpec* gpu = nullptr;
  std::optional<Profile> profile;      // --profile FILE|builtin: a per-GPU profile
  std::optional<StepModel> step_model; // the fitted step model (default, or --profile FILE of one);
                                       // neither: --profile roofline
  // The factor every gap between a trace's arrivals is multiplied by
  // (--time-scale, or what --rate asks of the trace's own rate); 1 otherwise.
  double time_scale = 1.0;
  double trace_rate = 0;  // the trace's own mean arrival rate, when --rate measured it (req/s)
};

// User catalogs, model, GPU, profile and load; every refusal (exit 2) before
// the run starts. --rate with a trace reads the trace once to measure its rate.
ResolvedScenario resolve_scenario(const Scenario& s);
// The pool-sizing input of `s`, its size settings included.
KvSizingInput kv_sizing_input(const Scenario& s, const ResolvedScenario& r);
SchedulerConfig scheduler_config(const Scenario& s);
// The vLLM server timing the scenario asks for (CUDA graphs, host and request
// overheads: the flags', else the cost model's).
VllmTiming vllm_timing(const Scenario& s, const ResolvedScenario& r);
// The cost model of one replica: the step model, a profile or the roofline.
ModeledExecutor make_executor(const Scenario& s, const ResolvedScenario& r);
// `--profile roofline`: the datasheet roofline with assumed efficiencies.
inline constexpr const char* kRooflineProfile = "roofline";
// The workload or the trace, sliced by --requests, rescaled to the load, and
// its first part marked as warm-up (--warmup; `warmup`, when given, is set
// to the marker so the caller can report what it marked).
std::unique_ptr<RequestSource> open_scenario_input(const Scenario& s, const ResolvedScenario& r,
                                                   const WarmupSource** warmup = nullptr);

// Puts another executor in front of a replica's cost model: the real backend
// mode (gpu/backend.h) runs every step on a model and keeps or replaces the
// modeled price. Called with the cost model, the replica's block pool (the
// backend's KV pool has its block ids, and mirrors its tiers' copies) and
// block size, and the replica's index.
using ExecutorWrap =
    std::function<std::unique_ptr<Executor>(Executor& modeled, BlockPool& pool, int32_t block_size, uint32_t replica)>;

// One vLLM replica as the scenario describes it: its pool of `num_blocks`
// under `policy`, the block manager, the cost model and the scheduler. On
// its own event loop, or, given `loop`, replica `index` of a fleet on it.
struct Replica {
  Replica(const Scenario& s, const ResolvedScenario& r, int64_t num_blocks, std::unique_ptr<EvictionPolicy> policy,
          EventLoop* loop = nullptr, uint32_t index = 0, const ExecutorWrap* wrap = nullptr);
  BlockPool pool;
  KvCacheManager kv;
  ModeledExecutor exec;
  std::unique_ptr<Executor> backend;  // `wrap`'s executor, in front of exec, if any
  Engine engine;

 private:
  Executor& stepper() { return backend ? *backend : static_cast<Executor&>(exec); }
};

// One pool of a disaggregated fleet: its scenario (pool_scenario), resolved
// and sized.
struct FleetPool {
  Scenario scenario;
  ResolvedScenario resolved;
  KvSizing kv;
};
// A pool's resolution from the whole scenario's: its GPU (and a per-GPU
// profile for it); the model, the step model and the load are the same.
ResolvedScenario resolve_pool(const Scenario& pool, const ResolvedScenario& whole);
// A disaggregated scenario's pools (prefill, decode), resolved and sized.
std::vector<FleetPool> disagg_pools(const Scenario& s, const ResolvedScenario& whole);
// A mixed fleet's groups (--replica-groups), each resolved (its GPU) and
// sized (its GPU and TP), in the spec's order.
std::vector<FleetPool> group_pools(const Scenario& s, const ResolvedScenario& whole);
// The pools of `s`: disaggregated, mixed, or none (a uniform fleet).
std::vector<FleetPool> fleet_pools(const Scenario& s, const ResolvedScenario& whole);

// s.replicas replicas, each with its own `policy` (a spec) and pool of
// `num_blocks`, behind s.router, on one event loop. One replica runs
// exactly as a lone Replica does (the same events, the same fingerprint).
struct Fleet {
  Fleet(const Scenario& s, const ResolvedScenario& r, int64_t num_blocks, const std::string& policy,
        const PolicyContext& ctx, const ExecutorWrap* wrap = nullptr);
  // Disaggregated (sim/fleet/disagg.h): the prefill pool's replicas, then
  // the decode pool's, as `pools` (prefill, decode) describe them; `s`
  // gives the design and the links. Mixed (--replica-groups): each group's
  // replicas in turn, as `pools` describe them, behind s.router, which
  // knows each replica's pool (RouterContext::replica_blocks).
  Fleet(const Scenario& s, const std::vector<FleetPool>& pools, const std::string& policy, const PolicyContext& ctx,
        const ExecutorWrap* wrap = nullptr);
  // Every replica's observer.
  void set_observer(EngineObserver* obs);
  // KV tiers below every replica's pool (resolved: sizes in blocks).
  void add_tiers(const std::vector<TierSpec>& specs);
  FleetResult run(RequestSource& source);
  // report.json's fleet.router_view after run(): only for a fleet whose
  // prefix-aware router saw the caches with a lag, or whose router read
  // sampled load.
  std::optional<RouterViewReport> router_view_report() const;
  // report.json's admission after run(): only with --admission.
  std::optional<AdmissionReport> admission_report(const FleetResult& r) const;
  TimeNs router_kv_lag() const;  // router_kv_lag_ms on the loop's clock
  TimeNs router_scrape() const;  // router_scrape_ms on the loop's clock

  EventLoop loop;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::vector<Engine*> engines;
  std::unique_ptr<Router> router;
  int32_t block_size;
  double router_kv_lag_ms = 0;  // --router-kv-lag-ms
  double router_scrape_ms = 0;  // --router-scrape-ms
  AdmissionConfig admission;    // --admission
  RouterViewStats router_view;  // what a lagging prefix-aware router believed (run() fills it)
  FleetTiers tiers;

  // Mixed: group k is replicas [group_ends[k - 1], group_ends[k]) (from 0);
  // empty otherwise.
  std::vector<uint32_t> group_ends;

  // Disaggregated: the first num_prefill replicas are the prefill pool.
  uint32_t num_prefill = 0;  // 0: not disaggregated
  std::unique_ptr<Router> decode_router;
  DisaggConfig disagg;
  KvLinkConfig link;
  std::vector<double> nics;           // by replica, bytes/s
  int64_t transfer_bytes_per_block = 0;  // the decode instance's, over its TP ranks
  DisaggStats disagg_stats;           // run() fills these
  std::vector<KvLinkStats> link_stats;

 private:
  EngineObserver* observer_ = nullptr;
  void set_router_settings(const Scenario& s);
  void add_groups(const Scenario& s, const std::vector<FleetPool>& pools, const std::string& policy,
                  const PolicyContext& ctx, const ExecutorWrap* wrap);
  void add_disagg_pools(const Scenario& s, const std::vector<FleetPool>& pools, const std::string& policy,
                        const PolicyContext& ctx, const ExecutorWrap* wrap);
  void add_replicas(const Scenario& s, const ResolvedScenario& r, int64_t num_blocks, const std::string& policy,
                    const PolicyContext& ctx, const ExecutorWrap* wrap);
};

}  // namespace prefixsim
