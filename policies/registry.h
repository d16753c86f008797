// The one table that names every eviction policy. The CLI, the YAML scenario
// loader and the tests all go through make_policy(); nothing else lists
// policies.
//
// Spec syntax: "name" or "name:key=value,key=value" (e.g. "lfu:aging=0.5").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/spec_params.h"
#include "sim/kv/eviction_policy.h"

namespace prefixsim {

class BlockFuture;

// Parameters given after the colon (sim/base/spec_params.h).
using PolicyParams = SpecParams;

// What a policy may need beyond its parameters. Offline and cost-aware
// policies get their extra knowledge here.
struct PolicyContext {
  int32_t block_size = 16;
  // The trace's future (which request looks up which block key), for the
  // offline policy `belady`; built by a pre-pass over an interned trace
  // (PreparedTrace::lookup_keys). Null when the caller has no trace ahead of time.
  std::shared_ptr<const BlockFuture> future;
};

struct PolicyInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::string summary;  // one line for --help and reports
  std::function<std::unique_ptr<EvictionPolicy>(PolicyParams&, const PolicyContext&)> make;
};

const std::vector<PolicyInfo>& policy_registry();
const PolicyInfo* find_policy(std::string_view name);
// Parses a spec and builds the policy; throws InputError on an unknown name
// or a bad parameter.
std::unique_ptr<EvictionPolicy> make_policy(std::string_view spec, const PolicyContext& ctx = {});
// Canonical name of a spec ("vllm" -> "lru"), for reports.
std::string canonical_policy_name(std::string_view spec);

}  // namespace prefixsim
