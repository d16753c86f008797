#include "sim/fleet/fleet.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "sim/base/error.h"
#include "sim/kv/block_pool.h"

namespace prefixsim {
namespace {

// The router's view of real replicas: their load live, or as last sampled.
class EngineFleetView final : public FleetView {
 public:
  EngineFleetView(std::span<Engine* const> replicas, const EventLoop& loop,
                  std::span<const std::unique_ptr<LaggedCacheIndex>> lagged, bool sampled)
      : replicas_(replicas), loop_(loop), lagged_(lagged) {
    if (sampled) samples_.resize(replicas.size());
  }
  uint32_t size() const override { return static_cast<uint32_t>(replicas_.size()); }
  size_t load(uint32_t i) const override { return samples_.empty() ? live_load(i) : samples_[i].load; }
  size_t waiting(uint32_t i) const override {
    return samples_.empty() ? replicas_[i]->num_waiting() : samples_[i].waiting;
  }
  size_t running(uint32_t i) const override {
    return samples_.empty() ? replicas_[i]->num_running() : samples_[i].running;
  }
  double kv_usage(uint32_t i) const override {
    return samples_.empty() ? replicas_[i]->kv().pool().usage() : samples_[i].kv_usage;
  }
  int64_t queued_prompt_tokens(uint32_t i) const override {
    return samples_.empty() ? replicas_[i]->queued_prompt_tokens() : samples_[i].queued_prompt_tokens;
  }
  int64_t active_blocks(uint32_t i) const override {
    return samples_.empty() ? live_active_blocks(i) : samples_[i].active_blocks;
  }
  // Takes the load sample the router reads until the next one.
  void sample() {
    for (uint32_t i = 0; i < samples_.size(); ++i) {
      const Engine& e = *replicas_[i];
      samples_[i] = {live_load(i),     e.num_waiting(), e.num_running(), e.kv().pool().usage(),
                     e.queued_prompt_tokens(), live_active_blocks(i)};
    }
  }
  size_t live_load(uint32_t i) const { return replicas_[i]->num_requests(); }
  size_t cached_prefix_blocks(uint32_t i, std::span<const BlockHash> prompt) const override {
    if (!lagged_.empty()) return lagged_[i]->leading(prompt, loop_.now());
    return truly_cached(i, prompt);
  }
  TimeNs now() const override { return loop_.now(); }
  // What replica i's pool holds right now, whatever the router's view.
  size_t truly_cached(uint32_t i, std::span<const BlockHash> prompt) const {
    const BlockPool& pool = replicas_[i]->kv().pool();
    if (!pool.caching_enabled()) return 0;
    size_t n = 0;
    while (n < prompt.size() && pool.find(prompt[n]) != kNoBlock) ++n;
    return n;
  }

 private:
  int64_t live_active_blocks(uint32_t i) const {
    const BlockPool& pool = replicas_[i]->kv().pool();
    return pool.num_usable() - pool.num_free();
  }
  struct Sample {
    size_t load = 0, waiting = 0, running = 0;
    double kv_usage = 0;
    int64_t queued_prompt_tokens = 0, active_blocks = 0;
  };

  std::span<Engine* const> replicas_;
  const EventLoop& loop_;
  std::span<const std::unique_ptr<LaggedCacheIndex>> lagged_;  // empty: no lag
  std::vector<Sample> samples_;                                // empty: live load
};

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
    gate.saturated = [&] {
      for (uint32_t i = 0; i < view.size(); ++i)
        if (static_cast<int64_t>(view.waiting(i)) <= admission.waiting && view.kv_usage(i) <= admission.kv) return false;
      return true;
    };
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
