// `compare`: the researcher's bench. One trace, parsed and hashed once,
// replayed under every (policy, pool size) pair on the very same block
// manager, and, in engine mode, on fleets of each size behind each router;
// with CPU offloading sizes, every pair once with each. The pairs run as
// points (point_run.h) spread over threads, heaviest first; each lands in its
// own slot, so the report does not depend on the thread count.
//
// Modes: `cache` (each request alone, no time) replays the prepared hashes;
// `engine` runs every pair through the discrete-event engine (the replay
// scheduler and cost model) and adds TTFT p50/p99. Engine mode keeps the
// parsed requests in memory (the prepared hashes are not enough to schedule
// them), and refuses belady, whose future is indexed by request while the
// engine looks requests up again after refusals and preemptions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/compare_text.h"
#include "sim/scenario/scenario.h"

namespace prefixsim {

struct CompareOptions {
  // Every pair's settings (mode, trace, block size, model, GPU, scheduler,
  // tiers, ...): a pair is the replay of this scenario with its policy, pool
  // size, router, fleet size and offloading size.
  Scenario scenario;
  std::vector<std::string> policies;  // specs, name[:key=value,...]
  // Pool sizes: exactly one of the three lists, through replay's sizing.
  std::vector<int64_t> kv_blocks, kv_tokens;
  std::vector<double> kv_gb;
  // Fleets (engine mode): either list given makes the fleet axes, the
  // other defaulting to the scenario's router or one replica.
  std::vector<std::string> routers;
  std::vector<int64_t> replicas;
  std::vector<double> offloading_gib;  // empty: no offloading axis; 0 none, inf unbounded
  int threads = 1;
  bool progress = false;  // a progress line on stderr (the caller knows it is a terminal)
};

// Validates everything before the trace is read (InputError, exit 2: an
// unknown policy or router, a fleet in cache mode, a pool under 2 blocks,
// a bad tier), then runs every pair. Throws the first error a pair threw.
CompareReport run_compare(const CompareOptions& options);

}  // namespace prefixsim
