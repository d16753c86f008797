// vLLM's server timing in the cost model: CUDA-graph padding to vLLM's
// capture sizes (sim/cost/cuda_graphs.h), the engine core's host time per
// step and per sequence, and the per-request latency outside the engine.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/base/error.h"
#include "sim/cost/catalog.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/cuda_graphs.h"
#include "test/support.h"

using namespace prefixsim;

namespace {
Batch decodes(int64_t n, int64_t context = 1000) {
  Batch b;
  for (int64_t i = 0; i < n; ++i) b.seqs.push_back(ScheduledSeq{1, context, {}});
  return b;
}
}  // namespace

TEST_CASE("vLLM's default capture sizes: 1, 2, 4, multiples of 8 to 248, of 16 to min(2 x max_num_seqs, 512)",
          "[cost_model][cuda_graphs]") {
  const CudaGraphs g = CudaGraphs::vllm_default(CudaGraphMode::full_and_piecewise, 256, 8192);
  REQUIRE(g.capture_sizes.size() == 3 + 31 + 17);
  CHECK(g.capture_sizes[0] == 1);
  CHECK(g.capture_sizes[2] == 4);
  CHECK(g.capture_sizes[3] == 8);
  CHECK(g.capture_sizes[33] == 248);
  CHECK(g.capture_sizes[34] == 256);
  CHECK(g.capture_sizes[35] == 272);
  CHECK(g.capture_sizes.back() == 512);
  // max_num_seqs 16: the cap is 32.
  CHECK(CudaGraphs::vllm_default(CudaGraphMode::full_and_piecewise, 16, 8192).capture_sizes ==
        std::vector<int64_t>{1, 2, 4, 8, 16, 24, 32});
  // A token budget below the cap caps it, and is captured itself (newer vLLM).
  const auto small = CudaGraphs::vllm_default(CudaGraphMode::full_and_piecewise, 64, 100).capture_sizes;
  CHECK(small.back() == 100);
  CHECK(small[small.size() - 2] == 96);
  CHECK(CudaGraphs::vllm_default(CudaGraphMode::none, 256, 8192).capture_sizes.empty());
}

TEST_CASE("a decode batch of 37 runs the graph of 40; above the largest capture size nothing is padded",
          "[cost_model][cuda_graphs]") {
  const CudaGraphs g = CudaGraphs::vllm_default(CudaGraphMode::full_and_piecewise, 256, 8192);
  CHECK(g.padded_tokens(37, true) == 40);
  CHECK(g.padded_tokens(1, true) == 1);
  CHECK(g.padded_tokens(3, true) == 4);
  CHECK(g.padded_tokens(5, true) == 8);
  CHECK(g.padded_tokens(249, true) == 256);
  CHECK(g.padded_tokens(257, true) == 272);
  CHECK(g.padded_tokens(512, false) == 512);
  CHECK(g.padded_tokens(513, false) == 513);
  CHECK(g.padded_tokens(4096, false) == 4096);
  // FULL_AND_PIECEWISE pads a mixed batch too (its piecewise graph).
  CHECK(g.padded_tokens(37, false) == 40);
  // FULL_DECODE_ONLY runs mixed batches eagerly; PIECEWISE pads both.
  const CudaGraphs fdo = CudaGraphs::vllm_default(CudaGraphMode::full_decode_only, 256, 8192);
  CHECK(fdo.padded_tokens(37, true) == 40);
  CHECK(fdo.padded_tokens(37, false) == 37);
  CHECK(CudaGraphs::vllm_default(CudaGraphMode::piecewise, 256, 8192).padded_tokens(37, true) == 40);
  CHECK(CudaGraphs::vllm_default(CudaGraphMode::none, 256, 8192).padded_tokens(37, true) == 37);
  // FULL decode graphs stop at max_num_seqs: a 20-sequence decode pads to 24
  // only through the piecewise graph.
  const CudaGraphs s20 = CudaGraphs::vllm_default(CudaGraphMode::full_and_piecewise, 20, 8192);
  CHECK(s20.padded_tokens(20, true) == 24);
  CHECK(CudaGraphs::vllm_default(CudaGraphMode::full_decode_only, 20, 8192).padded_tokens(20, true) == 20);
  CHECK_THROWS_AS(parse_cuda_graph_mode("full", "--cudagraph-mode"), InputError);
  CHECK(parse_cuda_graph_mode("full_decode_only", "--cudagraph-mode") == CudaGraphMode::full_decode_only);
}

TEST_CASE("graph padding prices the linear layers at the padded token count", "[cost_model][cuda_graphs]") {
  const ModelSpec& m = find_model("llama-3.1-8b");
  const GpuSpec& gpu = find_gpu("h100-sxm-80gb");
  VllmTiming t;
  t.graphs = CudaGraphs::vllm_default(CudaGraphMode::full_and_piecewise, 512, 8192);
  ModeledExecutor padded(m, gpu, 1, std::nullopt, {}, t), eager(m, gpu, 1, std::nullopt);
  const BatchSummary b = padded.padded_summary(decodes(37));
  CHECK(b.new_tokens == 37);
  CHECK(b.graph_tokens == 40);
  // Below the weight-read breakpoint (~220 tokens here) a GEMM costs the
  // weight read either way, so padding 37 to 40 changes nothing...
  CHECK(padded.step_time(decodes(37)) == eager.step_time(decodes(37)));
  // ...above it, a batch of 300 costs what 304 tokens of GEMM cost.
  const Batch b300 = decodes(300);
  const TimeNs with = padded.step_time(b300), without = eager.step_time(b300);
  const CostCoefficients& c = eager.coefficients();
  REQUIRE(c.linear_s_per_token * 300 > c.weight_floor_s);
  CHECK(static_cast<double>(with - without) == Approx(4 * c.linear_s_per_token * 1e9).margin(2));
  // The same batch on the calibrated profile path pads the same way.
  CHECK(padded.padded_summary(b300).graph_tokens == 304);
}

TEST_CASE("host time: overhead_s + host_per_seq_s per sequence; the device part is the rest",
          "[cost_model][overheads]") {
  const ModelSpec& m = find_model("llama-3.1-8b");
  const GpuSpec& gpu = find_gpu("h100-sxm-80gb");
  VllmTiming t;
  t.host_per_seq_s = 10e-6;
  t.request_s = 0.5e-3;
  t.request_per_prompt_token_s = 1e-6;
  ModeledExecutor exec(m, gpu, 1, std::nullopt, {}, t), bare(m, gpu, 1, std::nullopt);
  const Batch b = decodes(64);
  const StepCost cost = exec.step_cost(b);
  CHECK(cost.host == seconds_to_ns(1e-3 + 64 * 10e-6));
  CHECK(static_cast<double>(cost.host + cost.device) == Approx(static_cast<double>(exec.step_time(b))).margin(2));
  // The bare model's step is the device part plus its 1 ms overhead.
  CHECK(static_cast<double>(bare.step_time(b)) ==
        Approx(static_cast<double>(cost.device) + 1e6).margin(2));
  CHECK(exec.step_time(b) - bare.step_time(b) == Approx(640'000).margin(2));
  // Per request: 0.5 ms + 1 us per prompt token; none without the term.
  CHECK(exec.request_latency(2000) == 2'500'000);
  CHECK(bare.request_latency(2000) == 0);
  CHECK(exec.step_cost(Batch{}).host == 0);
  t.host_per_seq_s = -1;
  CHECK_THROWS_AS(ModeledExecutor(m, gpu, 1, std::nullopt, {}, t), InputError);
}

TEST_CASE("the report's cost model names the vLLM timing it applied", "[cost_model][overheads]") {
  const ModelSpec& m = find_model("llama-3.1-8b");
  const GpuSpec& gpu = find_gpu("h100-sxm-80gb");
  VllmTiming t;
  t.graphs = CudaGraphs::vllm_default(CudaGraphMode::full_and_piecewise, 256, 8192);
  t.host_per_seq_s = 10e-6;
  const auto j = ModeledExecutor(m, gpu, 1, std::nullopt, {}, t).to_json();
  CHECK(j["vllm_timing"]["cuda_graphs"] == "full_and_piecewise");
  CHECK(j["vllm_timing"]["max_capture_size"] == 512);
  CHECK(j["vllm_timing"]["host_per_seq_s"] == 10e-6);
  CHECK_FALSE(ModeledExecutor(m, gpu, 1, std::nullopt).to_json().contains("vllm_timing"));
}

TEST_CASE("replay runs vLLM's timing by default; --no-async-scheduling and the scenario key run the sync loop",
          "[cli][overheads]") {
  const std::string dir = test::temp_dir("vllm_timing_cli");
  const std::vector<std::string> base = {"replay", "--requests", "60", "--rate", "20"};
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--out", dir + "/" + name});
    const auto r = test::run_cli(args);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    return nlohmann::json::parse(test::read_file(dir + "/" + name + "/report.json"));
  };
  const auto def = run("default", {});
  CHECK(def["scenario"]["scheduler"]["async_scheduling"] == true);
  CHECK(def["scenario"]["cudagraph_mode"] == "full_and_piecewise");
  CHECK(def["scenario"]["cost_model"]["vllm_timing"]["max_capture_size"] == 512);
  const auto sync = run("sync", {"--no-async-scheduling"});
  CHECK(sync["scenario"]["scheduler"]["async_scheduling"] == false);
  CHECK(sync["latency_ms"]["tpot"]["mean"] != def["latency_ms"]["tpot"]["mean"]);
  const std::string yaml = test::write_text_file(dir, "sync.yaml", "scheduler:\n  async_scheduling: false\n");
  const auto from_yaml = run("yaml", {"--config", yaml});
  CHECK(from_yaml["latency_ms"] == sync["latency_ms"]);
  // The request terms move TTFT, not TPOT.
  const auto no_req = run("noreq", {"--request-overhead-ms", "0", "--tokenize-us-per-token", "0"});
  CHECK(no_req["latency_ms"]["ttft"]["mean"].get<double>() < def["latency_ms"]["ttft"]["mean"].get<double>());
  CHECK(no_req["latency_ms"]["tpot"]["mean"] == def["latency_ms"]["tpot"]["mean"]);
  // Bad values exit 2 naming the flag.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--cudagraph-mode", "full"},
                                              std::vector<std::string>{"--host-overhead-per-seq-us", "-1"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), bad.begin(), bad.end());
    args.insert(args.end(), {"--out", dir + "/bad"});
    const auto r = test::run_cli(args);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Matchers::Contains(bad[0]));
  }
}
