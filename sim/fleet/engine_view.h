// The router's view of real replicas (FleetView over Engines): their load
// live, or as last sampled, and their caches as they are or through lagging
// KV-event indices (router_view.h). Shared by the fleet run and the
// disaggregated one's pools.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/event_loop.h"
#include "sim/fleet/router.h"
#include "sim/fleet/router_view.h"
#include "sim/kv/block_pool.h"

namespace prefixsim {

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
  int64_t capacity_blocks(uint32_t i) const override { return replicas_[i]->kv().pool().num_usable(); }
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
  void cached_prefix_blocks_all(std::span<const BlockHash> prompt, std::span<size_t> out) const override;
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
  mutable std::vector<uint32_t> walking_;  // cached_prefix_blocks_all's replicas still matching
};

}  // namespace prefixsim
