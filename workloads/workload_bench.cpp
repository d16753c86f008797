#include "workloads/workload_bench.h"

#include <sstream>

#include "traces/native_writer.h"
#include "workloads/workload.h"

namespace prefixsim {
namespace {

// Generating alone (requests/s, prompt tokens/s), the preset with the
// longest prompts and the most state (multi-turn histories).
std::vector<BenchMetric> bench_generate(const BenchOptions& o) {
  WorkloadOverrides w;
  w.requests = o.quick ? 500 : 4000;
  auto src = make_workload("multi-turn", w);
  Request r;
  uint64_t n = 0;
  int64_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  while (src->next(r)) {
    ++n;
    tokens += r.prompt_len;
  }
  const double s = seconds_since(start);
  return {{"requests_per_s", static_cast<double>(n) / s, "requests/s"},
          {"prompt_tokens_per_s", static_cast<double>(tokens) / s, "tokens/s"}};
}

// Generating and writing native JSONL, as `prefixsim generate` does.
std::vector<BenchMetric> bench_generate_write(const BenchOptions& o) {
  WorkloadOverrides w;
  w.requests = o.quick ? 500 : 4000;
  auto src = make_workload("rag", w);
  std::ostringstream out;
  const auto start = std::chrono::steady_clock::now();
  const uint64_t n = write_native_jsonl(*src, out);
  const double s = seconds_since(start);
  return {{"requests_per_s", static_cast<double>(n) / s, "requests/s"},
          {"mb_per_s", static_cast<double>(out.str().size()) / s / 1e6, "MB/s"}};
}

}  // namespace

std::vector<BenchCase> workload_bench_cases() {
  return {
      {"workload_generate", "generate the multi-turn preset (requests and prompt tokens per second)", bench_generate},
      {"workload_generate_write", "generate the rag preset and write it as native JSONL", bench_generate_write},
  };
}

}  // namespace prefixsim
