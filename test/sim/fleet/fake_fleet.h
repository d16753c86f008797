// A fleet the router tests set by hand: each replica's load, queue, KV
// usage and how many leading prompt blocks it caches; prompts of full
// 16-token blocks; a router built for n replicas with a 1000-block pool.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/fleet/router.h"

namespace prefixsim::fleet_test {

struct FakeReplica {
  size_t load = 0;
  int64_t queued = 0;
  int64_t active = 0;
  size_t cached = 0;  // leading prompt blocks cached
  size_t waiting = 0;
  size_t running = 0;
  double kv_usage = 0;
  int64_t capacity = 1000;  // KV blocks (the routers' pool below)
};

class FakeFleet final : public FleetView {
 public:
  explicit FakeFleet(std::vector<FakeReplica> r) : r_(std::move(r)) {}
  uint32_t size() const override { return static_cast<uint32_t>(r_.size()); }
  size_t load(uint32_t i) const override { return r_[i].load; }
  size_t waiting(uint32_t i) const override { return r_[i].waiting; }
  size_t running(uint32_t i) const override { return r_[i].running; }
  double kv_usage(uint32_t i) const override { return r_[i].kv_usage; }
  int64_t queued_prompt_tokens(uint32_t i) const override { return r_[i].queued; }
  int64_t active_blocks(uint32_t i) const override { return r_[i].active; }
  int64_t capacity_blocks(uint32_t i) const override { return r_[i].capacity; }
  size_t cached_prefix_blocks(uint32_t i, std::span<const BlockHash> p) const override {
    return std::min(r_[i].cached, p.size());
  }
  TimeNs now() const override { return 0; }
  std::vector<FakeReplica> r_;
};

struct Prompt {
  Request req;
  std::vector<BlockHash> blocks;
  RouteQuery query() const {
    RouteQuery q;
    q.request = &req;
    q.prompt_blocks = blocks;
    q.block_size = 16;
    return q;
  }
};

// A prompt of `n` full 16-token blocks; `family` decides its hashes (equal
// families share every block), `id`/`session` name it.
inline Prompt prompt(uint64_t family, size_t n, const std::string& id = "r", const std::string& session = "") {
  Prompt p;
  p.req.id = id;
  p.req.session = session;
  p.req.prompt_len = static_cast<int64_t>(n) * 16;
  for (size_t i = 0; i < n; ++i) p.blocks.push_back(BlockHash{family * 1000 + i + 1, family});
  return p;
}

// A prompt of the given block hashes (any hash may be shared with another).
inline Prompt prompt_of(std::vector<BlockHash> blocks, const std::string& session = "") {
  Prompt p;
  p.req.id = "r";
  p.req.session = session;
  p.req.prompt_len = static_cast<int64_t>(blocks.size()) * 16;
  p.blocks = std::move(blocks);
  return p;
}

inline std::unique_ptr<Router> make(const std::string& spec, uint32_t n = 3, int64_t pool_blocks = 1000) {
  RouterContext c;
  c.replicas = n;
  c.pool_blocks = pool_blocks;
  return make_router(spec, c);
}

}  // namespace prefixsim::fleet_test
