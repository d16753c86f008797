#include "sim/fleet/fleet.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "sim/base/error.h"
#include "sim/fleet/engine_view.h"
#include "sim/kv/block_pool.h"

namespace prefixsim {
namespace {

// The lagging indices listen to the pools for one run, then hand each pool
// its earlier listener back.
class LaggedIndices {
 public:
  LaggedIndices(std::span<Engine* const> replicas, const EventLoop& loop, TimeNs lag) {
    if (lag <= 0) return;
    for (Engine* e : replicas) {
      BlockPool& pool = e->kv().pool();
      indices_.push_back(std::make_unique<LaggedCacheIndex>(loop, lag, pool.listener()));
      pools_.push_back(&pool);
      pool.set_listener(indices_.back().get());
    }
  }
  ~LaggedIndices() {
    for (size_t i = 0; i < pools_.size(); ++i) pools_[i]->set_listener(indices_[i]->next());
  }
  LaggedIndices(const LaggedIndices&) = delete;
  LaggedIndices& operator=(const LaggedIndices&) = delete;
  std::span<const std::unique_ptr<LaggedCacheIndex>> get() const { return indices_; }

 private:
  std::vector<std::unique_ptr<LaggedCacheIndex>> indices_;
  std::vector<BlockPool*> pools_;
};

}  // namespace

FleetResult run_fleet(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas, Router& router,
                      int32_t block_size, TimeNs kv_lag, RouterViewStats* stats, TimeNs scrape,
                      const AdmissionConfig& admission) {
  if (scrape < 0) throw InternalError("fleet: negative load sample period");
  LaggedIndices lagged(replicas, loop, kv_lag);
  const bool sampled = scrape > 0 && router.reads_scraped_load();
  EngineFleetView view(replicas, loop, lagged.get(), sampled);
  const bool wants_blocks = router.needs_prompt_blocks();
  const bool tally = stats && wants_blocks && kv_lag > 0;
  const bool tally_load = stats && sampled;
  // The sample at each multiple of `scrape`: taken before the first event
  // at or after it, when the replicas are as they were at that instant.
  TimeNs next_sample = 0;
  BeforeEventFn before_event;
  if (sampled)
    before_event = [&](TimeNs t) {
      if (t < next_sample) return;
      view.sample();
      next_sample = (t / scrape + 1) * scrape;
    };
  const RouteFn route = [&](Request& r) {
    RouteQuery q;
    q.request = &r;
    q.block_size = block_size;
    if (wants_blocks) q.prompt_blocks = r.ensure_prompt_chain(block_size).hashes();
    const uint32_t choice = router.route(q, view);
    if (tally || tally_load) ++stats->decisions;
    if (tally_load) {
      const size_t believed = view.load(choice), actual = view.live_load(choice);
      stats->stale_load += believed != actual;
      stats->believed_load += believed;
      stats->actual_load += actual;
    }
    if (tally) {
      const size_t predicted = view.cached_prefix_blocks(choice, q.prompt_blocks);
      const size_t actual = view.truly_cached(choice, q.prompt_blocks);
      size_t oracle = 0;
      for (uint32_t i = 0; i < view.size(); ++i) oracle = std::max(oracle, view.truly_cached(i, q.prompt_blocks));
      stats->mispredicted += predicted != actual;
      stats->predicted_blocks += predicted;
      stats->actual_blocks += actual;
      stats->oracle_blocks += oracle;
    }
    return choice;
  };
  AdmissionGate gate;
  if (admission.enabled) {
    gate.queue = static_cast<size_t>(admission.queue);
    gate.saturated = [&] { return fleet_saturated(view, admission); };
    // Sampled load shows room only at the next sample.
    if (sampled) gate.recheck_at = [scrape](TimeNs t) { return (t / scrape + 1) * scrape; };
  }
  return drive_replicas(loop, source, replicas, route, before_event, admission.enabled ? &gate : nullptr);
}

double max_over_mean(std::span<const uint64_t> per_replica) {
  uint64_t sum = 0, most = 0;
  for (uint64_t v : per_replica) {
    sum += v;
    most = std::max(most, v);
  }
  return sum ? static_cast<double>(most) * static_cast<double>(per_replica.size()) / static_cast<double>(sum) : 0.0;
}

}  // namespace prefixsim
