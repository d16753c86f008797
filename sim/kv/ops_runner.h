// `prefixsim ops`: runs a block-manager operation script (the format of
// test/data/golden/vllm-v1/README.md) through KvCacheManager and writes one
// compact JSON line per op, then the summary line, as vLLM's own manager did.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "sim/kv/eviction_policy.h"

namespace prefixsim {

struct OpsOptions {
  bool check_invariants = false;  // verify the pool after every op
  std::function<std::unique_ptr<EvictionPolicy>()> make_policy;
};

struct OpsResult {
  uint64_t ops = 0;  // op lines run (config included)
};

// Reads the whole script from `in` (named `file` in messages), writes to
// `out`. Throws InputError("FILE:LINE: ...") on bad input before writing
// anything for that line; InternalError on an invariant violation.
OpsResult run_ops(std::istream& in, const std::string& file, std::ostream& out, const OpsOptions& opts);

}  // namespace prefixsim
