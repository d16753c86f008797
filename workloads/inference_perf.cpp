#include "workloads/inference_perf.h"

#include <cmath>
#include <numeric>
#include <string>

#include "sim/base/error.h"
#include "workloads/rng.h"

namespace prefixsim {

std::vector<Request> shared_prefix_requests(const SharedPrefixSpec& spec, const std::vector<ConstantStage>& stages) {
  if (spec.groups < 1 || spec.prompts_per_group < 1 || spec.system_prompt_len < 0 || spec.question_len < 0 ||
      spec.system_prompt_len + spec.question_len < 1 || spec.output_len < 1 || spec.vocab < 2)
    throw InputError("shared_prefix: groups, prompts per group, output length and prompt length must be positive");
  if (static_cast<double>(spec.groups) * static_cast<double>(spec.prompts_per_group) *
          static_cast<double>(spec.system_prompt_len + spec.question_len) > 1e8)
    throw InputError("shared_prefix: groups x prompts x prompt length past 10^8 tokens");
  workloads::Rng tokens(workloads::derive_seed(spec.seed, 1));
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t g = 0; g < spec.groups; ++g) {
    std::vector<int32_t> system(static_cast<size_t>(spec.system_prompt_len));
    for (int32_t& t : system) t = static_cast<int32_t>(tokens.below(static_cast<uint64_t>(spec.vocab)));
    for (int64_t p = 0; p < spec.prompts_per_group; ++p) {
      std::vector<int32_t> prompt = system;
      for (int64_t q = 0; q < spec.question_len; ++q)
        prompt.push_back(static_cast<int32_t>(tokens.below(static_cast<uint64_t>(spec.vocab))));
      prompts.push_back(std::move(prompt));
    }
  }
  // One shuffle (Fisher-Yates), then prompt n mod count.
  std::vector<size_t> order(prompts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  workloads::Rng shuffle(workloads::derive_seed(spec.seed, 2));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[shuffle.below(i)]);

  // Bounds on what one replay holds: requests, prompt tokens in all, and
  // arrivals within the nanosecond clock.
  constexpr double kMaxRequests = 1e6, kMaxTokens = 1e8, kMaxSeconds = 9e9;
  double requests = 0, seconds = 0;
  for (const ConstantStage& st : stages) {
    if (!(st.rate > 0 && st.duration_s > 0 && std::isfinite(st.rate * st.duration_s)))
      throw InputError("shared_prefix: a stage needs a positive rate and duration");
    requests += st.rate * st.duration_s;
    seconds += st.duration_s;
  }
  const double prompt = static_cast<double>(spec.system_prompt_len + spec.question_len);
  if (!(requests <= kMaxRequests && requests * prompt <= kMaxTokens && seconds <= kMaxSeconds))
    throw InputError("shared_prefix: the stages ask for " + std::to_string(requests) +
                     " requests over " + std::to_string(seconds) +
                     " s; a replay holds at most 10^6 requests, 10^8 prompt tokens and 9 x 10^9 s");
  std::vector<Request> out;
  double stage_start = 0;
  for (const ConstantStage& st : stages) {
    const auto n = static_cast<int64_t>(std::llround(st.rate * st.duration_s));
    for (int64_t i = 0; i < n; ++i) {
      Request r;
      r.id = "r" + std::to_string(out.size());
      r.arrival = static_cast<TimeNs>(std::llround((stage_start + static_cast<double>(i) / st.rate) * 1e9));
      r.tokens = prompts[order[out.size() % order.size()]];
      r.prompt_len = static_cast<int64_t>(r.tokens.size());
      r.output_len = spec.output_len;
      out.push_back(std::move(r));
    }
    stage_start += st.duration_s;
  }
  return out;
}

}  // namespace prefixsim
