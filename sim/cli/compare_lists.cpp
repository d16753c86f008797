#include "sim/cli/compare_lists.h"

#include "policies/registry.h"
#include "sim/cli/options.h"

namespace prefixsim::cli {

void read_compare_lists(const CompareListTexts& t, CompareOptions& o) {
  if (t.policies != "all") {
    o.policies = parse_spec_list("--policies", t.policies);
  } else {
    o.policies.clear();
    for (const PolicyInfo& p : policy_registry()) o.policies.push_back(p.name);
  }
  if (t.kv_blocks) o.kv_blocks = parse_positive_int_list("--kv-blocks", *t.kv_blocks);
  if (t.kv_tokens) o.kv_tokens = parse_positive_int_list("--kv-tokens", *t.kv_tokens);
  if (t.kv_gb) o.kv_gb = parse_positive_real_list("--kv-gb", *t.kv_gb);
  if (t.routers) o.routers = parse_spec_list("--routers", *t.routers);
  if (t.replicas) o.replicas = parse_positive_int_list("--replicas", *t.replicas);
  if (t.kv_offloading_size) o.offloading_gib = parse_gib_list("--kv-offloading-size", *t.kv_offloading_size);
}

}  // namespace prefixsim::cli
