#include "test/reports/sample_report.h"

#include "reports/backend_shadow.h"

namespace prefixsim::test {

RunReport sample_run_report(bool engine) {
  RunReport r;
  r.mode = engine ? "engine" : "cache";
  r.tool_version = "0.1.0";
  r.scenario = {{"model", "llama-3.1-8b"}, {"gpu", "h100-sxm-80gb"}, {"policy", "lru"},
                {"block_size", 16},        {"kv_blocks", 4096},      {"notes", "a </script> in user data"}};
  r.trace = {"traces/sample.jsonl", "native", 50, 51200, 6400, "00112233445566778899aabbccddeeff"};
  r.kv_cache = {16, 4096, 131072, 65536};
  r.prefix_cache.queried_tokens = 51200;
  r.prefix_cache.hit_tokens = 30720;
  r.prefix_cache.hit_rate = 0.6;
  r.prefix_cache.block_hit_rate = 0.625;
  r.prefix_cache.ideal_hit_rate = 0.7;
  r.prefix_cache.evictions = 12;
  r.prefix_cache.lookups = {52, 53248, 30800, 2, 2048, 1024};
  if (engine) {
    TimedResults t;
    LatencyAccumulator ttft(vllm_ttft_buckets()), queue(vllm_request_latency_buckets()),
        e2e(vllm_request_latency_buckets()), tpot(vllm_tpot_buckets());
    for (int i = 0; i < 50; ++i) {
      const double tt = (i + 1) / 256.0;  // about 3.9 ms .. 195 ms, exact in binary
      ttft.add(tt);
      queue.add(tt / 2);
      e2e.add(tt + 1.0);
      tpot.add(0.02);
    }
    t.latency_ms = {ttft.summary_ms(), queue.summary_ms(), e2e.summary_ms(), tpot.summary_ms(), false, {}, {}};
    t.ttft_s = ttft.prom_histogram();
    t.queue_s = queue.prom_histogram();
    t.e2e_s = e2e.prom_histogram();
    t.tpot_s = tpot.prom_histogram();
    t.ttft_cdf_ms = ttft.cdf_ms(40);
    t.throughput = {5.0, 5120.0, 640.0};
    t.duration_s = 10.0;
    t.engine = {400, 3, 0.42, 0.97};
    r.timed = t;
  } else {
    r.series_axis = "request";
  }
  for (int i = 0; i < 20; ++i) {
    SeriesRow s;
    s.start = engine ? 0.5 * i : 2.5 * i;
    s.queried_tokens = 2560;
    s.hit_tokens = static_cast<uint64_t>(64 * (i + 10));
    s.kv_usage = 0.2 + 0.03 * i;
    s.waiting = static_cast<uint64_t>(20 - i);
    s.running = static_cast<uint64_t>(5 + i % 4);
    s.preemptions = i == 7 ? 3 : 0;
    s.finished = 2;
    s.prompt_tokens_per_s = 5120;
    s.output_tokens_per_s = 640;
    r.series.push_back(s);
  }
  r.series[3].queried_tokens = 0;  // an interval with nothing admitted: hit rate n/a
  r.series[3].hit_tokens = 0;
  return r;
}

RunReport sample_gpu_shadow_report() {
  RunReport r = sample_run_report(true);
  BackendReport b;
  b.kind = "gpu";
  b.shape = "llama-3.1-8b";
  b.layers = 32;
  b.hidden = 4096;
  b.measured_time = true;
  b.steps = 3000;
  b.tokens = 41000;
  b.check = BackendReport::Check{20, 20, 412, 1e-4, 3.2e-6, ""};
  std::vector<BackendStepReport> steps;
  for (uint64_t i = 0; i < 3000; ++i) {
    BackendStepReport s;
    s.replica = static_cast<uint32_t>(i % 2);
    s.step = i / 2 + 1;
    s.seqs = 1 + static_cast<int64_t>(i % 7);
    s.new_tokens = i % 97 == 0 ? 2048 : s.seqs;
    s.context_tokens = 1000 + static_cast<int64_t>(i);
    s.measured_ms = i % 97 == 0 ? 180.0 : 6.0 + 0.25 * static_cast<double>(i % 40);
    s.modeled_ms = s.measured_ms * (0.85 + 0.003 * static_cast<double>(i % 100));  // -15 % .. +14.7 %
    steps.push_back(s);
  }
  b.measured_ms = 0;
  for (const BackendStepReport& s : steps) b.measured_ms += s.measured_ms;
  BackendReport::Shadow sh = summarize_shadow(steps);
  sh.ttft_measured_p50 = 41.5;
  sh.ttft_measured_p99 = 390.25;
  sh.ttft_modeled_p50 = 38.0;
  sh.ttft_modeled_p99 = 351.5;
  b.shadow = sh;
  r.backend = b;
  return r;
}

}  // namespace prefixsim::test
