// compare's list flags (--policies, --kv-blocks, ...) read into
// CompareOptions, each by the one comma-list parser of options.h: what
// `prefixsim compare` and the Python module's compare() both call, so the
// two read a list the same way and refuse it with the same message.
#pragma once

#include <optional>
#include <string>

#include "sim/study/compare_run.h"

namespace prefixsim::cli {

struct CompareListTexts {
  std::string policies = "all";  // 'all': every registered policy
  std::optional<std::string> kv_blocks, kv_tokens, kv_gb, routers, replicas, kv_offloading_size;
};

void read_compare_lists(const CompareListTexts& t, CompareOptions& o);

}  // namespace prefixsim::cli
