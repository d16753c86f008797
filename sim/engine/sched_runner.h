// `prefixsim sched`: runs a scheduler step script (the format of
// test/data/golden/vllm-v1-scheduler/README.md) through the Scheduler and the
// KV cache manager, steps instead of time, with the goldens' fake model, and
// writes one compact JSON line per step plus the summary line, as vLLM's own
// v1 Scheduler did.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "sim/kv/eviction_policy.h"

namespace prefixsim {

struct SchedOptions {
  bool check_invariants = false;  // verify the block pool after every step
  std::function<std::unique_ptr<EvictionPolicy>()> make_policy;
};

struct SchedResult {
  uint64_t steps = 0;
  uint64_t finished = 0;
  uint64_t unfinished = 0;
  uint64_t preemptions = 0;
};

// Reads the whole script from `in` (named `file` in messages) and writes to
// `out` only once the whole script has run: bad input throws
// InputError("FILE:LINE: ...") and writes nothing. InternalError on a broken
// pool invariant.
SchedResult run_sched(std::istream& in, const std::string& file, std::ostream& out, const SchedOptions& opts);

}  // namespace prefixsim
