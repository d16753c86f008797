#include "policies/policy_bench.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <time.h>

#include "policies/block_future.h"
#include "policies/registry.h"
#include "sim/engine/cache_replay.h"
#include "sim/base/parallel_for.h"

namespace prefixsim {
namespace {

constexpr int32_t kBlockSize = 16;

// CPU seconds of the calling thread: per-access costs stay meaningful on a
// machine shared with other work (wall time would count waiting).
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The Mooncake conversation trace as requests. The benchmark reads the
// JSONL itself (the traces room builds after this one); fields as in
// ../shared/traces/README.md.
std::vector<Request> load_mooncake(const std::string& path, size_t limit) {
  std::vector<Request> out;
  std::ifstream in(path);
  std::string line;
  while (out.size() < limit && std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    Request r;
    r.id = "m" + std::to_string(out.size());
    r.prompt_len = j.at("input_length").get<int64_t>();
    r.output_len = j.at("output_length").get<int64_t>();
    r.hash_ids = j.at("hash_ids").get<std::vector<uint64_t>>();
    r.trace_block_size = 512;
    out.push_back(std::move(r));
  }
  return out;
}

std::string trace_path(const BenchOptions& o) {
  return o.shared_dir + "/traces/mooncake/conversation_trace.jsonl";
}

PolicyContext context_for(const PreparedTrace& t) {
  PolicyContext ctx;
  ctx.block_size = t.block_size;
  ctx.future = BlockFuture::build(t.num_keys(), t.size(), [&](size_t i) { return t.lookup_keys(i); });
  return ctx;
}

std::vector<BenchMetric> bench_compare_all(const BenchOptions& o) {
  if (!std::filesystem::exists(trace_path(o))) return {};
  const auto start = std::chrono::steady_clock::now();
  const auto requests = load_mooncake(trace_path(o), o.quick ? 1500 : SIZE_MAX);
  const PreparedTrace t = prepare_trace(requests, kBlockSize);
  const PolicyContext ctx = context_for(t);
  const double prepare_s = seconds_since(start);

  const int64_t tokens[8] = {250000, 500000, 1000000, 2000000, 3000000, 5000000, 10000000, 30000000};
  std::vector<std::pair<std::string, int64_t>> pairs;
  for (int64_t tok : tokens)
    for (const PolicyInfo& p : policy_registry()) pairs.emplace_back(p.name, tok / kBlockSize + 1);
  const auto replay_start = std::chrono::steady_clock::now();
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  const auto order = heaviest_first(pairs.size(), [&](size_t i) { return pairs[i].second; });  // as compare does
  parallel_for(order.size(), static_cast<int>(n), [&](size_t k) {
    const auto& [name, blocks] = pairs[order[k]];
    run_cache_replay(t, blocks, make_policy(name, ctx));
  });
  const double replay_s = seconds_since(replay_start);
  return {{"total_s", prepare_s + replay_s, "s"},
          {"prepare_s", prepare_s, "s"},
          {"replays_s", replay_s, "s"},
          {"runs", static_cast<double>(pairs.size()), "replays"},
          {"threads", static_cast<double>(n), "threads"}};
}

std::vector<BenchMetric> bench_access_cost(const BenchOptions& o) {
  if (!std::filesystem::exists(trace_path(o))) return {};
  const auto requests = load_mooncake(trace_path(o), o.quick ? 1500 : SIZE_MAX);
  const PreparedTrace t = prepare_trace(requests, kBlockSize);
  const PolicyContext ctx = context_for(t);
  const int64_t num_blocks = 3000000 / kBlockSize + 1;  // ~14 % hit rate: evictions all along
  std::vector<BenchMetric> out;
  double lru_ns = 0;
  for (const PolicyInfo& p : policy_registry()) {
    auto policy = make_policy(p.name, ctx);
    const double start = thread_cpu_s();
    const CacheReplayResult r = run_cache_replay(t, num_blocks, std::move(policy));
    const double secs = thread_cpu_s() - start;
    // Block accesses: every block looked up and hit, plus every block handed out.
    const double accesses = static_cast<double>(r.hit_blocks + r.allocated_blocks);
    const double ns = secs * 1e9 / accesses;
    if (p.name == "lru") lru_ns = ns;
    out.push_back({p.name + "_ns_per_block", ns, "ns/block"});
    if (lru_ns > 0) out.push_back({p.name + "_vs_lru", ns / lru_ns, "x"});
  }
  return out;
}

}  // namespace

std::vector<BenchCase> policy_bench_cases() {
  return {
      {"compare_all", "every policy x 8 pool sizes, cache mode, Mooncake conversation, B=16, one thread per core",
       bench_compare_all},
      {"policy_access_cost", "ns per block access of each policy (cache mode, Mooncake conversation, 3M tokens)",
       bench_access_cost},
  };
}

}  // namespace prefixsim
