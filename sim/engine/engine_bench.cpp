#include "sim/engine/engine_bench.h"

#include <chrono>
#include <cmath>
#include <string>

#include "sim/engine/engine.h"
#include "sim/kv/kv_cache_manager.h"

namespace prefixsim {
namespace {

// Step time = fixed overhead + a cost per new token + a cost per sequence:
// enough shape for the scheduler to see realistic batches, cheap enough that
// the benchmark measures the engine and not the executor.
class LinearExecutor final : public Executor {
 public:
  TimeNs step_time(const Batch& b) override {
    return 2'000'000 + 40'000 * static_cast<TimeNs>(b.seqs.size()) + 60 * b.total_new_tokens();
  }
};

// Deterministic synthetic stream, generated on the fly (nothing stored):
// 8 system prompts of 512 tokens with Zipf-like popularity, a 32-543 token
// user part, 16-271 output tokens, exponential gaps at `rate` requests/s.
class SyntheticSource final : public RequestSource {
 public:
  SyntheticSource(uint64_t n, double rate) : n_(n), mean_gap_ns_(1e9 / rate) {}
  bool next(Request& out) override {
    if (i_ == n_) return false;
    out.clear();
    out.id = std::to_string(i_);  // (not "r" + ...: GCC 12 warns falsely on that)
    const double u = (static_cast<double>(rnd() >> 11) + 0.5) / 9007199254740992.0;
    t_ += static_cast<TimeNs>(-std::log(u) * mean_gap_ns_);
    out.arrival = t_;
    const uint64_t r = rnd();
    const int sys = static_cast<int>(__builtin_ctzll(r | (1ULL << 7)));  // 0..7, halving popularity
    out.tokens.reserve(512 + 544);  // the engine moves each request away, so its buffer is new each time
    for (int k = 0; k < 512; ++k) out.tokens.push_back(sys * 1000 + k);
    const int user = 32 + static_cast<int>(rnd() % 512);
    for (int k = 0; k < user; ++k) out.tokens.push_back(static_cast<int32_t>(rnd() & 0x7fffffff));
    out.prompt_len = static_cast<int64_t>(out.tokens.size());
    out.output_len = 16 + static_cast<int64_t>(rnd() % 256);
    ++i_;
    return true;
  }
  std::string format() const override { return "synthetic"; }
  std::string origin() const override { return "engine_bench"; }

 private:
  uint64_t rnd() {
    x_ ^= x_ << 13;
    x_ ^= x_ >> 7;
    x_ ^= x_ << 17;
    return x_;
  }
  uint64_t n_, i_ = 0;
  double mean_gap_ns_;
  TimeNs t_ = 0;
  uint64_t x_ = 0x2545f4914f6cdd1dULL;
};

std::vector<BenchMetric> bench_engine_replay(const BenchOptions& o,
                                             const std::function<std::unique_ptr<EvictionPolicy>()>& mk) {
  const uint64_t n = o.quick ? 20'000 : 200'000;
  SyntheticSource src(n, 40.0);
  BlockPool pool(16'384, true, mk());
  KvCacheManager kv(16, pool);
  LinearExecutor exec;
  SchedulerConfig cfg;  // vLLM defaults: 256 seqs, 8192 tokens, chunked prefill
  Engine engine(cfg, kv, exec);
  const auto start = std::chrono::steady_clock::now();
  const EngineResult r = engine.run(src);
  const double wall = seconds_since(start);
  const double hit_rate = r.admitted_prompt_tokens
                              ? static_cast<double>(r.admitted_hit_tokens) / static_cast<double>(r.admitted_prompt_tokens)
                              : 0.0;
  return {
      {"requests_per_s", static_cast<double>(r.finished) / wall, "requests/s"},
      {"steps_per_s", static_cast<double>(r.steps) / wall, "steps/s"},
      {"sim_time_per_wall", static_cast<double>(r.end_time) / 1e9 / wall, "x"},
      {"requests", static_cast<double>(r.finished), "requests"},
      {"steps", static_cast<double>(r.steps), "steps"},
      {"preemptions", static_cast<double>(r.preemptions), "preemptions"},
      {"hit_rate", hit_rate, "ratio"},
  };
}

}  // namespace

std::vector<BenchCase> engine_bench_cases(std::function<std::unique_ptr<EvictionPolicy>()> make_policy) {
  return {
      {"engine_replay",
       "time-driven engine on a synthetic stream (8 shared 512-token system prompts, 40 req/s, linear-cost executor): "
       "simulated requests per wall second",
       [mk = std::move(make_policy)](const BenchOptions& o) { return bench_engine_replay(o, mk); }},
  };
}

}  // namespace prefixsim
