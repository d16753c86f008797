#include "workloads/stream_bench.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "sim/base/bench.h"
#include "sim/kv/block_hash.h"
#include "sim/engine/cache_replay.h"
#include "sim/base/error.h"
#include "workloads/workload.h"

namespace prefixsim {
namespace {

// Restarts the peak resident set that peak_rss_mib() reads (Linux
// /proc/self/clear_refs "5"); false where it cannot.
bool reset_peak() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

// Generates `n` chatbot requests and replays them one at a time through an
// LRU cache of 65,536 blocks, holding one request at a time.
void stream(int64_t n, const std::function<std::unique_ptr<EvictionPolicy>()>& make_policy) {
  WorkloadOverrides w;
  w.requests = n;
  auto src = make_workload("chatbot", w);
  CacheReplayer replay(16, 65'536, make_policy());
  BlockHashChain chain;
  Request r;
  int64_t seen = 0;
  while (src->next(r)) {
    chain.reset(16, &r.extras);
    r.append_prompt_to(chain);
    replay.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
    ++seen;
  }
  if (seen != n) throw InternalError("stream_memory: generated " + std::to_string(seen) + " of " + std::to_string(n));
}

std::vector<BenchMetric> bench_stream_memory(const BenchOptions& o,
                                             const std::function<std::unique_ptr<EvictionPolicy>()>& make_policy) {
  std::vector<BenchMetric> out;
  const std::vector<int64_t> sizes = o.quick ? std::vector<int64_t>{10'000, 100'000}
                                             : std::vector<int64_t>{100'000, 1'000'000, 10'000'000};
  for (const int64_t n : sizes) {
    const bool resettable = reset_peak();
    const auto start = std::chrono::steady_clock::now();
    stream(n, make_policy);
    const double s = seconds_since(start);
    const std::string tag = "1e" + std::to_string(std::to_string(n).size() - 1);
    out.push_back({"peak_rss_" + tag, peak_rss_mib(), resettable ? "MiB" : "MiB (lifetime max)"});
    out.push_back({"requests_per_s_" + tag, static_cast<double>(n) / s, "requests/s"});
  }
  return out;
}

}  // namespace

std::vector<BenchCase> stream_bench_cases(std::function<std::unique_ptr<EvictionPolicy>()> make_policy) {
  return {{"stream_memory",
           "chatbot traces of 1e5, 1e6, 1e7 requests streamed through a cache replay: peak RSS (VmHWM) per size, "
           "which must stay flat",
           [make_policy](const BenchOptions& o) { return bench_stream_memory(o, make_policy); }}};
}

}  // namespace prefixsim
