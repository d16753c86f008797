#include "traces/analysis_bench.h"

#include <filesystem>

#include "traces/analysis.h"
#include "traces/trace_reader.h"

namespace prefixsim {
namespace {

// The whole analysis (ideal hit rate, stack distances, working set, prefix
// forest, LRU curve) of the Mooncake conversation trace at block size 16:
// 12,031 requests expanding into ~9 M block accesses.
std::vector<BenchMetric> bench_analyze(const BenchOptions& o) {
  const std::string path = o.shared_dir + "/traces/mooncake/conversation_trace.jsonl";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};  // no shared traces here: nothing to measure
  auto src = open_trace(path, {});
  AnalysisOptions opts;
  opts.block_size = o.quick ? 512 : 16;
  const auto start = std::chrono::steady_clock::now();
  const TraceAnalysis a = analyze_trace(*src, opts);
  const double s = seconds_since(start);
  return {{"requests_per_s", static_cast<double>(a.requests) / s, "requests/s"},
          {"block_accesses_per_s", static_cast<double>(a.block_accesses) / s, "blocks/s"},
          {"unique_blocks", static_cast<double>(a.unique_blocks), "blocks"}};
}

}  // namespace

std::vector<BenchCase> analysis_bench_cases() {
  return {{"analyze_mooncake", "prefixsim analyze of the Mooncake conversation trace at block size 16", bench_analyze}};
}

}  // namespace prefixsim
