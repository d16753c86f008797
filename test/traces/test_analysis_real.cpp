// The ideal (unbounded-cache) hit rates of the Mooncake traces, with vLLM's
// semantics, at block size 512 (one engine block per hash id) and 16 (each
// 512-token id expanded into 32 engine blocks, the last one partial).
// Skipped when ../shared is absent.
#include <catch2/catch.hpp>

#include "test/support.h"
#include "traces/analysis.h"
#include "traces/trace_reader.h"

using namespace prefixsim;

namespace {
double ideal_percent(const std::string& path, int32_t block_size) {
  auto src = open_trace(path, TraceOptions{});
  AnalysisOptions o;
  o.block_size = block_size;
  const TraceAnalysis a = analyze_trace(*src, o);
  return 100.0 * a.ideal_hit_rate;
}
}  // namespace

TEST_CASE("Mooncake conversation trace: ideal hit rate 37.34 % at B=512 and 37.36 % at B=16", "[analysis][real]") {
  const auto p = test::shared_path("traces/mooncake/conversation_trace.jsonl");
  if (!p) PREFIXSIM_SKIP("../shared/traces/mooncake is absent");
  CHECK(ideal_percent(*p, 512) == Approx(37.34).margin(0.01));
  CHECK(ideal_percent(*p, 16) == Approx(37.36).margin(0.01));
}

TEST_CASE("Mooncake synthetic trace: ideal hit rate 65.04 % at B=512 and 65.12 % at B=16", "[analysis][real]") {
  const auto p = test::shared_path("traces/mooncake/synthetic_trace.jsonl");
  if (!p) PREFIXSIM_SKIP("../shared/traces/mooncake is absent");
  CHECK(ideal_percent(*p, 512) == Approx(65.04).margin(0.01));
  CHECK(ideal_percent(*p, 16) == Approx(65.12).margin(0.01));
}
