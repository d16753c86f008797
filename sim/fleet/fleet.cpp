#include "sim/fleet/fleet.h"

#include <algorithm>

#include "sim/kv/block_pool.h"

namespace prefixsim {
namespace {

// The router's view of real replicas.
class EngineFleetView final : public FleetView {
 public:
  EngineFleetView(std::span<Engine* const> replicas, const EventLoop& loop) : replicas_(replicas), loop_(loop) {}
  uint32_t size() const override { return static_cast<uint32_t>(replicas_.size()); }
  size_t load(uint32_t i) const override { return replicas_[i]->num_requests(); }
  size_t waiting(uint32_t i) const override { return replicas_[i]->num_waiting(); }
  size_t running(uint32_t i) const override { return replicas_[i]->num_running(); }
  double kv_usage(uint32_t i) const override { return replicas_[i]->kv().pool().usage(); }
  int64_t queued_prompt_tokens(uint32_t i) const override { return replicas_[i]->queued_prompt_tokens(); }
  int64_t active_blocks(uint32_t i) const override {
    const BlockPool& pool = replicas_[i]->kv().pool();
    return pool.num_usable() - pool.num_free();
  }
  size_t cached_prefix_blocks(uint32_t i, std::span<const BlockHash> prompt) const override {
    const BlockPool& pool = replicas_[i]->kv().pool();
    if (!pool.caching_enabled()) return 0;
    size_t n = 0;
    while (n < prompt.size() && pool.find(prompt[n]) != kNoBlock) ++n;
    return n;
  }
  TimeNs now() const override { return loop_.now(); }

 private:
  std::span<Engine* const> replicas_;
  const EventLoop& loop_;
};

}  // namespace

FleetResult run_fleet(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas, Router& router,
                      int32_t block_size) {
  EngineFleetView view(replicas, loop);
  const bool wants_blocks = router.needs_prompt_blocks();
  return drive_replicas(loop, source, replicas, [&](Request& r) {
    RouteQuery q;
    q.request = &r;
    q.block_size = block_size;
    if (wants_blocks) q.prompt_blocks = r.ensure_prompt_chain(block_size).hashes();
    return router.route(q, view);
  });
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
