// The router's view of the replicas' caches when their KV events reach it
// late, as they do in llm-d (ZMQ KV events from each vLLM pod into the
// EPP's index) and Dynamo (KV events over NATS): a block stored or removed
// at time t is known to the router only from t + lag. With lag 0 the
// router reads the pools themselves (router.h), byte for byte today's run.
//
// LaggedCacheIndex listens to one replica's pool (forwarding every event to
// the pool's earlier listener, the KV tiers, unchanged) and keeps the
// events in arrival order; a query first applies those delivered by now.
// A hash is held while its stores outnumber its removals (two blocks can
// carry one hash).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>

#include "sim/base/types.h"
#include "sim/engine/event_loop.h"
#include "sim/kv/block_pool.h"

namespace prefixsim {

// What a lagging router believed, against the truth, over its decisions:
// blocks of the prompt's leading run on the chosen replica (predicted: by
// the router's view; actual: in the pool at that moment), and on the
// replica that really held the longest run (oracle).
// With load metrics sampled periodically (fleet.h, `scrape`): the chosen
// replica's requests, waiting and running, as the router read them at the
// last sample and as they were at the decision.
struct RouterViewStats {
  uint64_t decisions = 0;
  uint64_t mispredicted = 0;  // predicted != actual on the chosen replica
  uint64_t predicted_blocks = 0;
  uint64_t actual_blocks = 0;
  uint64_t oracle_blocks = 0;
  uint64_t stale_load = 0;  // decisions where the sampled load was not the load
  uint64_t believed_load = 0;
  uint64_t actual_load = 0;
};

class LaggedCacheIndex final : public PoolListener {
 public:
  LaggedCacheIndex(const EventLoop& loop, TimeNs lag, PoolListener* next) : loop_(loop), lag_(lag), next_(next) {}
  void on_pool_cached(const BlockHash& h, uint32_t key) override;
  void on_pool_evicted(const BlockHash& h, uint32_t key) override;
  // Leading hashes of `prompt` the router believes cached at `now`.
  size_t leading(std::span<const BlockHash> prompt, TimeNs now);
  PoolListener* next() const { return next_; }

 private:
  struct Event {
    TimeNs at;
    BlockHash hash;
    bool stored;
  };
  void deliver(TimeNs now);

  const EventLoop& loop_;
  TimeNs lag_;
  PoolListener* next_;
  std::deque<Event> pending_;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> held_;
};

}  // namespace prefixsim
