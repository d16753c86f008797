// The memory one run needs to simulate its KV blocks, checked before
// anything is allocated: every replica's GPU pool and every tier below it
// (one instance per replica, or one for the fleet when shared), at no less
// than kMinPoolBytesPerBlock a block (sim/kv/block_pool.h). Each pool alone
// passes check_pool_fits_memory when it is sized; a fleet of them together
// can still need more than the machine has, and would grow until it died
// out of memory. replay checks its run, sweep each point, plan the largest
// fleet its search may reach.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cost/kv_sizing.h"
#include "sim/kv/block_pool.h"
#include "sim/scenario/kv_tiers.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_fleet.h"

namespace prefixsim {

struct RunBlocks {
  struct Part {
    int64_t instances = 0;  // replicas (1 for a shared tier)
    int64_t blocks = 0;     // in each instance
    std::string what;       // "GPU pool", "tier cpu"
    std::string flag;       // the flag that sizes it: "--kv-blocks", "--kv-offloading-size", ...
  };
  int64_t replicas = 1;
  std::vector<Part> parts;  // the GPU pool first, then the tiers in lookup order
  double total() const;     // blocks over every instance of every part
};

// The blocks of `s` (its replicas) with each GPU pool sized by `pool` and
// the tiers `tiers` (resolved: sizes in blocks). An unbounded tier counts
// nothing: it holds only what the trace brings.
RunBlocks run_blocks(const Scenario& s, const KvSizing& pool, const std::vector<TierSpec>& tiers);
// A fleet of pools (disaggregated, or a mixed fleet's groups): each pool's
// replicas and tiers, together.
RunBlocks run_blocks(const std::vector<FleetPool>& pools, const std::vector<TierSpec>& tiers);
// The flag that sets a fleet's size: --replicas, --replica-groups, or the
// disaggregated pools' counts.
std::string fleet_size_flag(const Scenario& s);

// InputError when simulating `b` needs more than limit_bytes: it starts with
// replicas_flag (for a fleet; else the flag of the largest part), gives the
// sum and the figure in GiB, and names the flags to lower.
void check_run_fits_memory(const RunBlocks& b, const std::string& replicas_flag,
                           double limit_bytes = pool_memory_limit_bytes());

}  // namespace prefixsim
