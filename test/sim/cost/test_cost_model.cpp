// The roofline cost model against hand calculations, its monotonicity (what
// the engine's TTFT invariant relies on) and profiles replacing it.
#include <catch2/catch.hpp>
#include <random>

#include "sim/cost/cost_model.h"
#include "sim/base/error.h"

using namespace prefixsim;
using Catch::Matchers::Contains;

namespace {

Batch batch_of(std::initializer_list<std::pair<int64_t, int64_t>> seqs) {  // (new, cached)
  Batch b;
  for (auto [n, c] : seqs) b.seqs.push_back(ScheduledSeq{n, c, {}});
  return b;
}

Profile sample_profile() {
  Profile p;
  p.gpu = {"NVIDIA H100 80GB HBM3", "h100-sxm-80gb", 132, 1980, 2619, "550.54.15", "12.4"};
  p.model = "llama-3.1-8b";
  p.tp = 1;
  p.date = "2026-11-22T04:00:00Z";
  p.coefficients = {2e-3, 3e-5, 7e-3, 1e-9, 5e-8, 2e-6, 0};
  p.fit = {"test", 100, 25, 0.02, 0.03, 0.09};
  return p;
}

}  // namespace

TEST_CASE("one prefill step of llama-3.1-8b on an H100 matches the roofline by hand", "[cost_model]") {
  // One sequence, 1024 new tokens, nothing cached; default efficiencies
  // (matmul 0.6, attention 0.45, bandwidth 0.8), overhead 1 ms.
  //  matmul params  = 8,030,261,248 - 2 * 128,256 * 4,096 = 6,979,588,096
  //  linear         = 1024 * 2 * 6,979,588,096 / (989.4e12 * 0.6)
  //  weight floor   = (6,979,588,096 + 525,336,576 lm_head) * 2 B / (3.35e12 * 0.8) = 5.60 ms (< linear 24.1 ms)
  //  logits         = 1 * 2 * 128,256 * 4,096 / (989.4e12 * 0.6)
  //  attention      = 4 * 128 * 32 heads * 32 layers * 1024 * (0 + 1024/2) / (989.4e12 * 0.45)
  //  KV read        = 1024 tokens * (2 * 8 * 128 * 2 B * 32) / (3.35e12 * 0.8)
  const double flops = 989.4e12 * 0.6, attn_flops = 989.4e12 * 0.45, bw = 3.35e12 * 0.8;
  const double linear = 1024 * 2 * 6979588096.0 / flops;
  const double logits = 2.0 * 128256 * 4096 / flops;
  const double attn = 4.0 * 128 * 32 * 32 * (1024 * 512.0) / attn_flops;
  const double kv = 1024 * 131072.0 / bw;
  const double want = 1e-3 + linear + logits + attn + kv;
  CHECK(want == Approx(0.025748).epsilon(1e-4));  // 25.75 ms

  ModeledExecutor ex(find_model("llama-3.1-8b"), find_gpu("h100-sxm-80gb"), 1, std::nullopt);
  const TimeNs got = ex.step_time(batch_of({{1024, 0}}));
  CHECK(std::abs(static_cast<double>(got) - want * 1e9) <= 2);
  CHECK(ex.prefill_time(1024, 0) == got);
  CHECK(!ex.calibrated());
}

TEST_CASE("one decode step of 64 sequences hits the weight-bandwidth floor, by hand", "[cost_model]") {
  // 64 sequences, each 1 new token after 2047 cached.
  //  linear 64 * 23.5 us = 1.5 ms < weight floor 15,009,849,344 B / 2.68e12 B/s = 5.60 ms -> floor
  //  attention units = 64 * 1 * (2047 + 1/2) = 131,040; context tokens = 64 * 2048 = 131,072
  const double flops = 989.4e12 * 0.6, attn_flops = 989.4e12 * 0.45, bw = 3.35e12 * 0.8;
  const double floor = 15009849344.0 / bw;
  const double logits = 64 * 2.0 * 128256 * 4096 / flops;
  const double attn = 4.0 * 128 * 32 * 32 * 131040 / attn_flops;
  const double kv = 131072 * 131072.0 / bw;
  const double want = 1e-3 + floor + logits + attn + kv;
  CHECK(want == Approx(0.013279).epsilon(1e-4));  // 13.28 ms

  Batch b;
  for (int i = 0; i < 64; ++i) b.seqs.push_back(ScheduledSeq{1, 2047, {}});
  ModeledExecutor ex(find_model("llama-3.1-8b"), find_gpu("h100-sxm-80gb"), 1, std::nullopt);
  CHECK(std::abs(static_cast<double>(ex.step_time(b)) - want * 1e9) <= 2);
  CHECK(ex.coefficients().weight_floor_s == Approx(floor));
}

TEST_CASE("tensor parallelism divides the work and adds two ring all-reduces per layer", "[cost_model]") {
  const ModelSpec& m = find_model("llama-3.1-70b");
  const GpuSpec& g = find_gpu("h100-sxm-80gb");
  const CostCoefficients one = roofline_coefficients(m, g, 1);
  const CostCoefficients four = roofline_coefficients(m, g, 4);
  CHECK(four.linear_s_per_token == Approx(one.linear_s_per_token / 4));
  CHECK(four.weight_floor_s == Approx(one.weight_floor_s / 4));
  CHECK(four.attn_s_per_unit == Approx(one.attn_s_per_unit / 4));
  CHECK(four.kv_read_s_per_token == Approx(one.kv_read_s_per_token / 4));
  CHECK(one.allreduce_s_per_token == 0);
  // 2 all-reduces * 80 layers * 2*(4-1)/4 * 8192 hidden * 2 B / (450e9 B/s * 0.75)
  CHECK(four.allreduce_s_per_token == Approx(2 * 80 * 1.5 * 8192 * 2 / (450e9 * 0.75)));
  // ...each paying the link latency: 160 * 8 us on top of the 1 ms step overhead.
  CHECK(four.overhead_s == Approx(1e-3 + 160 * 8e-6));
  CHECK_THROWS_WITH(roofline_coefficients(m, g, 3), Contains("--tp"));
}

TEST_CASE("expert parallelism over D engines splits the routed experts whole and gathers the group's tokens",
          "[cost_model][moe]") {
  const ModelSpec& m = find_model("qwen3-30b-a3b");  // 48 layers, hidden 2048, 128 experts, 8 per token
  const GpuSpec& g = find_gpu("h100-sxm-80gb");
  REQUIRE(m.has_routing());
  const double routed = m.routed_expert_bytes(), miss = 1.0 - 8.0 / 128;
  const double dense = static_cast<double>(m.weight_bytes_read_per_step()) - routed * 8 / 128;

  // D = 1 is the TP split every weight gets.
  const ExpertShard one = expert_shard(m, 1, 1);
  CHECK(one.weight_bytes == static_cast<double>(m.weight_bytes_read_per_step()));
  CHECK(one.expert_bytes == routed);
  CHECK(one.token_scale == 1);
  CHECK(one.dispatch_bytes_per_token == 0);

  // D = 2: each rank holds half the experts, one token's share of them, and
  // its experts serve both engines' tokens.
  const ExpertShard two = expert_shard(m, 1, 2);
  CHECK(two.expert_bytes == Approx(routed / 2));
  CHECK(two.weight_bytes == Approx(dense + routed * 8 / 128 / 2));
  CHECK(two.token_scale == 2);
  // all-gather + reduce-scatter per layer: 2 x 48 x (2 - 1) x 2048 x 2 B per token
  CHECK(two.dispatch_bytes_per_token == Approx(2.0 * 48 * 2048 * 2));
  CHECK(two.dispatch_messages == 96);

  CostModelOptions o;
  o.expert_dp = 2;
  const CostCoefficients c1 = roofline_coefficients(m, g, 1), c2 = roofline_coefficients(m, g, 1, o);
  const double bw = g.hbm_bandwidth * CostModelOptions{}.bw_efficiency;
  // A large batch touches every expert: the whole model at D = 1, the dense
  // weights and half the experts at D = 2.
  CHECK(weight_floor_seconds(c1, 4096) == Approx((dense + routed) / bw));
  CHECK(weight_floor_seconds(c2, 4096) == Approx((dense + routed / 2) / bw));
  // One token per engine: the rank's experts see two tokens, 1 - miss^2 of its experts.
  CHECK(weight_floor_seconds(c2, 1) == Approx((dense + routed / 2 * (1 - miss * miss)) / bw));
  CHECK(c2.allreduce_s_per_token == Approx(2.0 * 48 * 2048 * 2 / (g.interconnect_bandwidth * 0.75)));
  CHECK(c2.overhead_s == Approx(c1.overhead_s + 96 * g.allreduce_latency_s));

  // A dense model has no experts to split.
  const ExpertShard dense_two = expert_shard(find_model("llama-3.1-8b"), 1, 2);
  CHECK(dense_two.expert_bytes == 0);
  CHECK(dense_two.token_scale == 1);
}

TEST_CASE("no split of a prefill into chunks or batch with others is faster than the prefill alone", "[cost_model]") {
  ModeledExecutor ex(find_model("qwen2.5-7b"), find_gpu("a100-80gb"), 1, std::nullopt);
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 20000), c = static_cast<int64_t>(rng() % 20000);
    const TimeNs alone = ex.prefill_time(n, c);
    // Chunked: consecutive steps, each chunk after the previous ones.
    TimeNs chunked = 0;
    for (int64_t done = 0; done < n;) {
      const int64_t chunk = std::min<int64_t>(n - done, 1 + static_cast<int64_t>(rng() % 4096));
      chunked += ex.step_time(batch_of({{chunk, c + done}}));
      done += chunk;
    }
    CHECK(chunked >= alone);
    // Batched with decodes: never cheaper.
    CHECK(ex.step_time(batch_of({{n, c}, {1, 500}, {1, 9000}})) >= alone);
    CHECK(ex.prefill_time(n + 1, c) >= alone);
  }
  CHECK(ex.step_time(Batch{}) == 0);
}

TEST_CASE("a calibrated profile replaces the roofline coefficients", "[cost_model][profile]") {
  const Profile p = sample_profile();
  ModeledExecutor ex(find_model("llama-3.1-8b"), find_gpu("h100-sxm-80gb"), 1, p);
  CHECK(ex.calibrated());
  CHECK(ex.coefficients() == p.coefficients);
  // 2 ms + 1 seq * 2 us + max(100 * 30 us, 7 ms) + 1e-9 * 100 * (0 + 50) + 5e-8 * 100 = 9.012 ms
  CHECK(std::abs(ex.prefill_time(100, 0) - 9012000) <= 1);
  const auto j = ex.to_json();
  CHECK(j["source"] == "profile");
  CHECK(j["profile"]["fit"]["mape_held_out"] == 0.03);
  CHECK(ModeledExecutor(find_model("llama-3.1-8b"), find_gpu("h100-sxm-80gb"), 1, std::nullopt).to_json()["source"] ==
        "roofline");
}

TEST_CASE("a profile for another model, GPU or TP is refused naming --profile", "[cost_model][profile]") {
  CHECK_THROWS_WITH(ModeledExecutor(find_model("mistral-7b"), find_gpu("h100-sxm-80gb"), 1, sample_profile()),
                    Contains("--profile") && Contains("llama-3.1-8b"));
  CHECK_THROWS_WITH(ModeledExecutor(find_model("llama-3.1-8b"), find_gpu("h200-141gb"), 1, sample_profile()),
                    Contains("--profile"));
  CHECK_THROWS_WITH(ModeledExecutor(find_model("llama-3.1-8b"), find_gpu("h100-sxm-80gb"), 2, sample_profile()),
                    Contains("--profile"));
}
