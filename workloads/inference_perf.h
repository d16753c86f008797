// kubernetes-sigs/inference-perf's `shared_prefix` data with a `constant`
// load, as the inference-perf build behind the BLIS runs
// (../shared/validation/README.md, "What actually ran") sent it:
//  - it pre-generates num_groups x num_prompts_per_group prompts (its parsed
//    configuration shows 10 x 10 whatever the spec's
//    num_unique_system_prompts / num_users_per_system_prompt say): each group
//    one system prompt of system_prompt_len random tokens, each prompt that
//    system prompt followed by its own question_len random tokens;
//  - shuffles them once and sends prompt n mod (groups x prompts) as the n-th
//    request, with no multi-turn history;
//  - a constant stage of rate r for d seconds sends r x d requests evenly
//    spaced 1/r apart, stages back to back;
//  - with ignore_eos every request generates exactly output_len tokens.
// A workload is held in memory: at most 10^6 requests and 10^8 prompt tokens.
// Token ids are random draws (seeded): only which prompts share which tokens
// matters to the prefix cache.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/request.h"

namespace prefixsim {

struct SharedPrefixSpec {
  int64_t groups = 10;
  int64_t prompts_per_group = 10;
  int64_t system_prompt_len = 0;
  int64_t question_len = 0;
  int64_t output_len = 0;
  int32_t vocab = 32000;
  uint64_t seed = 0;
};

struct ConstantStage {
  double rate = 0;        // requests per second
  double duration_s = 0;
};

std::vector<Request> shared_prefix_requests(const SharedPrefixSpec& spec, const std::vector<ConstantStage>& stages);

}  // namespace prefixsim
