// A real replica (LRU pool of 16-token blocks, vLLM's scheduler with 16
// sequences and a 512-token budget) priced by a linear step model: 2 ms +
// 2 us per new token, so that timelines can be computed by hand. The fleet
// and disaggregation tests build their replicas from it.
#pragma once

#include "policies/registry.h"
#include "sim/engine/engine.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/kv_cache_manager.h"

namespace prefixsim::fleet_test {

class LinearExecutor final : public Executor {
 public:
  TimeNs step_time(const Batch& b) override { return 2'000'000 + 2'000 * b.total_new_tokens(); }
};

// On its own loop (`loop` null), or replica `index` of a fleet on `loop`.
struct LinearReplica {
  LinearReplica(int32_t blocks, EventLoop* loop, uint32_t index)
      : pool(blocks, true, make_policy("lru")),
        kv(16, pool),
        engine(loop ? Engine(cfg(), kv, exec, *loop, index) : Engine(cfg(), kv, exec)) {}
  static SchedulerConfig cfg() {
    SchedulerConfig c;
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 512;
    return c;
  }
  BlockPool pool;
  KvCacheManager kv;
  LinearExecutor exec;
  Engine engine;
};

}  // namespace prefixsim::fleet_test
