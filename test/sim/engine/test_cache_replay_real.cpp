// Cache-mode lru on the real Mooncake traces reproduces an independent
// computation of the same semantics (each request alone: lookup, prompt and
// output allocated, output blocks unique, freed in reverse order). In the
// `real` suite: skipped when ../shared is absent, and left out of the
// sanitized CI stage, which would take minutes over these traces.
#include <catch2/catch.hpp>

#include "sim/engine/cache_replay.h"
#include "test/policies/policy_test_util.h"
#include "test/support.h"
#include "traces/trace_reader.h"

using namespace prefixsim;

namespace {

std::vector<Request> read_mooncake(const std::string& path) {
  auto src = open_trace(path, TraceOptions{});
  std::vector<Request> out;
  Request r;
  while (src->next(r)) out.push_back(r);
  return out;
}

}  // namespace

TEST_CASE("cache-mode lru on the Mooncake traces matches an independent computation within 0.3 points",
          "[cache-replay][real-data]") {
  struct Case {
    const char* file;
    int32_t block_size;
    double want[4];  // % at 1M, 3M, 10M, 30M tokens of usable blocks
  };
  const Case cases[] = {
      {"conversation_trace.jsonl", 16, {5.42, 13.76, 28.99, 36.51}},
      {"conversation_trace.jsonl", 512, {5.39, 13.51, 28.82, 36.46}},
      {"synthetic_trace.jsonl", 16, {14.69, 31.59, 58.14, 65.12}},
      {"synthetic_trace.jsonl", 512, {14.43, 31.43, 57.30, 65.04}},
  };
  const int64_t capacities[4] = {1000000, 3000000, 10000000, 30000000};
  for (const Case& c : cases) {
    const auto path = test::shared_path(std::string("traces/mooncake/") + c.file);
    if (!path) PREFIXSIM_SKIP("../shared/traces/mooncake is absent");
    const auto trace = read_mooncake(*path);
    const PreparedTrace t = prepare_trace(trace, c.block_size);
    for (int k = 0; k < 4; ++k) {
      const auto r = run_cache_replay(t, capacities[k] / c.block_size + 1, test::any_policy("lru", c.block_size));
      INFO(c.file << " B=" << c.block_size << " capacity " << capacities[k]);
      CHECK(r.refused_requests == 0);
      CHECK(100.0 * r.hit_rate == Approx(c.want[k]).margin(0.3));
    }
  }
}
