// The Mooncake readers over the real FAST'25 traces in ../shared (suite
// real; exit 77 when they are absent).
#include <catch2/catch.hpp>

#include "test/support.h"
#include "traces/trace_reader.h"

using namespace prefixsim;
using prefixsim::test::shared_path;

TEST_CASE("the real Mooncake traces read in full", "[traces][real]") {
  const auto conv = shared_path("traces/mooncake/conversation_trace.jsonl");
  const auto synth = shared_path("traces/mooncake/synthetic_trace.jsonl");
  if (!conv || !synth) PREFIXSIM_SKIP("../shared/traces/mooncake is absent");
  for (const auto& [path, want] : {std::pair{*conv, 12031}, std::pair{*synth, 3993}}) {
    auto src = open_trace(path, {});
    CHECK(src->format() == "mooncake");
    Request r;
    int n = 0;
    int64_t prompt = 0;
    TimeNs last = 0;
    while (src->next(r)) {
      ++n;
      prompt += r.prompt_len;
      CHECK(r.arrival >= last);
      last = r.arrival;
    }
    CHECK(n == want);
    CHECK(prompt / n > 10000);  // README: average input 12,035 and 15,325 tokens
  }
}
