#include "sim/kv/block_bench.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/kv/kv_cache_manager.h"
#include "sim/kv/ops_runner.h"

namespace prefixsim {
namespace {

// Long prompts sharing prefixes: `prefixes` system prompts of `prefix_tokens`,
// each request = one of them + a unique suffix. Hashing happens outside the
// timed region; the loop measures lookup + allocate + free only.
struct SyntheticStream {
  std::vector<BlockHashChain> chains;
  std::vector<int64_t> lengths;
  HashExtras extras;
};

SyntheticStream make_stream(int requests, int prefixes, int prefix_tokens, int suffix_tokens, int32_t bs) {
  SyntheticStream s;
  s.chains.resize(static_cast<size_t>(requests));
  std::vector<int32_t> tokens;
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int r = 0; r < requests; ++r) {
    tokens.clear();
    const int p = static_cast<int>(rnd() % static_cast<uint64_t>(prefixes));
    for (int i = 0; i < prefix_tokens; ++i) tokens.push_back(p * 100000 + i);
    for (int i = 0; i < suffix_tokens; ++i) tokens.push_back(static_cast<int32_t>(rnd() & 0x7fffffff));
    s.chains[static_cast<size_t>(r)].reset(bs, &s.extras);
    s.chains[static_cast<size_t>(r)].append_tokens(tokens);
    s.lengths.push_back(static_cast<int64_t>(tokens.size()));
  }
  return s;
}

std::vector<BenchMetric> bench_lookup_allocate_free(const BenchOptions& o,
                                                    const std::function<std::unique_ptr<EvictionPolicy>()>& mk) {
  const int32_t bs = 16;
  const int requests = o.quick ? 500 : 4000;
  SyntheticStream s = make_stream(requests, 32, 4096, 4096, bs);
  BlockPool pool(200000, true, mk());
  KvCacheManager kv(bs, pool);
  KvSeq seq;
  seq.blocks.reserve(1024);
  const int rounds = o.quick ? 2 : 5;
  uint64_t blocks = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < rounds; ++round) {
    for (size_t r = 0; r < s.chains.size(); ++r) {
      const int64_t len = s.lengths[r];
      LookupResult hit = kv.lookup(s.chains[r], len, false);
      kv.allocate(seq, s.chains[r], len, 0, len - hit.hit_tokens, hit.blocks, hit.hit_tokens, true);
      blocks += seq.blocks.size();
      kv.free(seq);
    }
  }
  const double secs = seconds_since(start);
  const PrefixCacheStats& st = kv.stats();
  return {{"blocks_per_s", static_cast<double>(blocks) / secs, "blocks/s"},
          {"hit_rate", static_cast<double>(st.hits) / static_cast<double>(st.queries), "fraction"}};
}

std::vector<BenchMetric> bench_ops_script(const BenchOptions& o,
                                          const std::function<std::unique_ptr<EvictionPolicy>()>& mk) {
  const std::string path = o.shared_dir + "/golden/vllm-v1/stress8_b16_n256_concurrent.ops.jsonl";
  if (!std::filesystem::exists(path)) return {};
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  const std::string script = text.str();
  OpsOptions opts;
  opts.make_policy = mk;
  const auto start = std::chrono::steady_clock::now();
  std::istringstream in(script);
  std::ostringstream out;
  const OpsResult r = run_ops(in, path, out, opts);
  const double secs = seconds_since(start);
  return {{"ops_per_s", static_cast<double>(r.ops) / secs, "ops/s"},
          {"mb_per_s", static_cast<double>(script.size()) / secs / 1e6, "MB/s"}};
}

std::vector<BenchMetric> bench_metadata(const BenchOptions&, const std::function<std::unique_ptr<EvictionPolicy>()>& mk) {
  std::vector<BenchMetric> out;
  for (int32_t n : {1 << 16, 100000, 1 << 20}) {
    BlockPool pool(n, true, mk());
    out.push_back({"bytes_per_block_n" + std::to_string(n),
                   static_cast<double>(pool.metadata_bytes()) / static_cast<double>(n), "bytes/block"});
  }
  return out;
}

}  // namespace

std::vector<BenchCase> block_bench_cases(std::function<std::unique_ptr<EvictionPolicy>()> mk) {
  return {
      {"block_ops", "prefixsim ops on golden stress8_b16_n256_concurrent (parse + run + format)",
       [mk](const BenchOptions& o) { return bench_ops_script(o, mk); }},
      {"block_manager", "lookup + allocate + free, 4K-token shared prefixes + 4K unique, B=16, one core",
       [mk](const BenchOptions& o) { return bench_lookup_allocate_free(o, mk); }},
      {"block_metadata", "metadata bytes per block (ref counts, hashes, hash index, policy state)",
       [mk](const BenchOptions& o) { return bench_metadata(o, mk); }},
  };
}

}  // namespace prefixsim
