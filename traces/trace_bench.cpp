#include "traces/trace_bench.h"

#include <filesystem>

#include "traces/trace_reader.h"

namespace prefixsim {
namespace {

std::vector<BenchMetric> bench_trace_read(const BenchOptions& o) {
  const std::string path = o.shared_dir + "/traces/mooncake/conversation_trace.jsonl";
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) return {};  // no shared traces here: nothing to measure
  // The file is small (3 MB): several passes per run keep the timer honest.
  // Each pass opens the file afresh, as a replay does (page-cached after the
  // first pass, so this measures parsing, not the disk).
  const int passes = o.quick ? 2 : 10;
  uint64_t requests = 0;
  Request r;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < passes; ++i) {
    auto src = open_trace(path, {});
    while (src->next(r)) ++requests;
  }
  const double s = seconds_since(start);
  return {
      {"mb_per_s", static_cast<double>(bytes) * passes / s / 1e6, "MB/s"},
      {"requests_per_s", static_cast<double>(requests) / s, "requests/s"},
  };
}

}  // namespace

std::vector<BenchCase> trace_bench_cases() {
  return {{"trace_read", "read the Mooncake conversation trace (JSONL, simdjson) into requests", bench_trace_read}};
}

}  // namespace prefixsim
