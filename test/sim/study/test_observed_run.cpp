// Observed-run readers on fixtures (test/data/observed), each field checked
// against the fixture's hand-computed values; bad runs name file and field.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "sim/base/error.h"
#include "sim/study/observed_run.h"
#include "test/support.h"
#include "workloads/inference_perf.h"

using namespace prefixsim;
using Catch::Matchers::Contains;

namespace {

std::string data(const std::string& rel) { return test::data_path("observed/" + rel); }

// A copy of the BLIS fixture with one edit, in a temporary file.
std::string blis_with(const std::string& from, const std::string& to) {
  std::ifstream in(data("blis-small.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return test::write_text_file(test::temp_dir("observed"), "run.json", text);
}

}  // namespace

TEST_CASE("a BLIS run record gives the server's settings and the workload inference-perf sent", "[observed]") {
  const ObservedRun r = read_observed_run(data("blis-small.json"));
  CHECK(r.form == "blis");
  CHECK(r.id == "blis-small");
  CHECK(r.scenario.model == "llama-2-7b");  // matched by the Hugging Face id's name
  CHECK(r.scenario.gpu == "h100-sxm-80gb");
  CHECK(r.scenario.tp == 1);
  CHECK(r.scenario.max_num_seqs == 64);
  CHECK(r.scenario.max_num_batched_tokens == 1024);
  CHECK(r.scenario.kv_blocks == 2000);
  CHECK(r.client_side);
  // 2 req/s for 10 s, then 4 req/s for 5 s, evenly spaced, back to back.
  REQUIRE(r.requests.size() == 40);
  CHECK(r.requests[1].arrival == 500'000'000);
  CHECK(r.requests[20].arrival == 10'000'000'000);
  CHECK(r.requests[21].arrival == 10'250'000'000);
  // 10 x 10 prompts of 64 + 96 tokens, sent in a shuffled order, repeating after 100.
  std::set<std::vector<int32_t>> distinct, systems;
  for (const Request& q : r.requests) {
    CHECK(q.prompt_len == 160);
    CHECK(q.output_len == 21);
    distinct.insert(q.tokens);
    systems.insert(std::vector<int32_t>(q.tokens.begin(), q.tokens.begin() + 64));
  }
  CHECK(distinct.size() == 40);
  CHECK(systems.size() <= 10);
  // TPOT from the means: (230 - 30) / (21 - 1).
  CHECK(r.tpot.mean == Approx(10.0));
  CHECK(r.ttft.mean == 30.0);
  CHECK(r.ttft.p90 == 40.0);
  CHECK(std::isnan(r.ttft.p50));
  CHECK(r.e2e.p99 == 300.0);
  CHECK_FALSE(r.saturated);
}

TEST_CASE("the shared-prefix generator shares system prompts within a group only", "[observed]") {
  SharedPrefixSpec s;
  s.groups = 3;
  s.prompts_per_group = 4;
  s.system_prompt_len = 8;
  s.question_len = 5;
  s.output_len = 2;
  s.seed = 1;
  const std::vector<Request> reqs = shared_prefix_requests(s, {{12.0, 1.0}, {6.0, 2.0}});
  REQUIRE(reqs.size() == 24);
  // Requests 12.. repeat the first 12 prompts in the same shuffled order.
  for (size_t i = 0; i < 12; ++i) CHECK(reqs[i + 12].tokens == reqs[i].tokens);
  std::map<std::vector<int32_t>, int> per_system;
  for (size_t i = 0; i < 12; ++i) ++per_system[std::vector<int32_t>(reqs[i].tokens.begin(), reqs[i].tokens.begin() + 8)];
  CHECK(per_system.size() == 3);
  for (const auto& [sys, n] : per_system) CHECK(n == 4);
  CHECK(reqs[12].arrival == 1'000'000'000);
  CHECK(reqs[13].arrival == 1'000'000'000 + 166'666'667);
}

TEST_CASE("an LLMServingSim capture gives the engine's own latencies", "[observed]") {
  const ObservedRun r = read_observed_run(data("llmservingsim-small"));
  CHECK(r.form == "llmservingsim");
  CHECK(r.scenario.model == "llama-3.1-8b");
  CHECK(r.scenario.gpu == "rtx-pro-6000-96gb");
  CHECK_FALSE(r.client_side);
  REQUIRE(r.requests.size() == 3);
  CHECK(r.requests[1].arrival == 100'000'000);
  CHECK(r.requests[1].prompt_len == 36);
  CHECK(r.requests[0].output_len == 5);
  // TTFT 20, 30, 10 ms; E2E 60, 50, 10; TPOT 40/4 and 20/2 (one-token outputs have none).
  CHECK(r.ttft.mean == Approx(20.0));
  CHECK(r.e2e.mean == Approx(40.0));
  CHECK(r.tpot.mean == Approx(10.0));
  CHECK(r.ttft.p99 == Approx(30.0));
  // The folder's meta.json names the same run.
  CHECK(read_observed_run(data("llmservingsim-small/meta.json")).requests.size() == 3);
}

TEST_CASE("a prefixsim.observed/1 file names its settings, its trace and what was measured", "[observed]") {
  const ObservedRun r = read_observed_run(data("native-small.observed.json"));
  CHECK(r.form == "observed");
  CHECK(r.scenario.model == "llama-3.1-8b");
  CHECK(r.scenario.tp == 2);
  CHECK(r.scenario.replicas == 2);
  CHECK(r.scenario.router == "least-loaded");
  CHECK(r.scenario.max_num_batched_tokens == 512);
  CHECK(r.scenario.kv_blocks == 500);
  CHECK_FALSE(r.scenario.async_scheduling);
  CHECK_FALSE(r.client_side);
  REQUIRE(r.requests.size() == 3);  // the trace, found beside the file
  CHECK(r.requests[1].arrival == 50'000'000);
  CHECK(r.requests[1].output_len == 6);
  CHECK(r.ttft.mean == 12.5);
  CHECK(r.e2e.p99 == 50.0);
  CHECK(std::isnan(r.e2e.p90));
  CHECK(r.tpot.mean == 6.0);
  CHECK(r.throughput_rps == 9.5);
}

TEST_CASE("a vLLM benchmark result gives requests and per-request measurements", "[observed]") {
  const ObservedRun r = read_observed_run(data("vllm-bench-small.observed.json"));
  CHECK(r.client_side);
  // The fourth request failed: counted, not replayed, and the run is saturated.
  REQUIRE(r.requests.size() == 3);
  CHECK(r.failed == 1);
  CHECK(r.saturated);
  CHECK(r.requests[1].prompt_len == 120);
  CHECK(r.requests[1].output_len == 4);
  // max_concurrency 2 at rate inf: two closed-loop slots; the third request
  // waits for the first to finish.
  CHECK(r.requests[0].wait_for.empty());
  CHECK(r.requests[1].wait_for.empty());
  REQUIRE(r.requests[2].wait_for.size() == 1);
  CHECK(r.requests[2].wait_for[0] == r.requests[0].id);
  CHECK(r.requests[0].awaitable);
  // TTFT 20, 30, 10 ms; E2E 42, 60, 14; TPOT 22/2, 30/3, 4/1.
  CHECK(r.ttft.mean == Approx(20.0));
  CHECK(r.e2e.mean == Approx((42.0 + 60.0 + 14.0) / 3));
  CHECK(r.tpot.mean == Approx((11.0 + 10.0 + 4.0) / 3));
  CHECK(r.throughput_rps == 2.0);
}

TEST_CASE("an inference-perf report folder gives its workload from config.yaml and its figures in ms",
          "[observed]") {
  const ObservedRun r = read_observed_run(data("inference-perf-small.observed.json"));
  CHECK(r.client_side);
  // Stages 2/s x 5 s and 4/s x 2.5 s: 10 + 10 requests; 2 groups x 3 prompts
  // of a 64-token system prompt and, from the measured mean prompt of 84
  // tokens, a 20-token question; 8 tokens out each (ignore_eos).
  REQUIRE(r.requests.size() == 20);
  for (const Request& q : r.requests) {
    CHECK(q.prompt_len == 84);
    CHECK(q.output_len == 8);
  }
  // The second stage starts where the first ends, 0.25 s apart.
  CHECK(r.requests[10].arrival == 5'000'000'000);
  CHECK(r.requests[11].arrival - r.requests[10].arrival == 250'000'000);
  // Seconds -> ms; "median" is the p50.
  CHECK(r.ttft.mean == Approx(22.0));
  CHECK(r.ttft.p50 == Approx(20.0));
  CHECK(r.ttft.p99 == Approx(45.0));
  CHECK(r.e2e.mean == Approx(120.0));
  CHECK(r.e2e.p90 == Approx(150.0));
  // TPOT from the means with exact outputs: (120 - 22) / (8 - 1).
  CHECK(r.tpot.mean == Approx(14.0));
  CHECK(r.throughput_rps == 2.5);
  // One request failed: the run is reported as past what the server took.
  CHECK(r.failed == 1);
  CHECK(r.saturated);
}

TEST_CASE("an inference-perf run refuses what its configuration cannot rebuild, naming the field", "[observed]") {
  const std::string dir = test::temp_dir("observed-ip");
  std::ifstream in(data("inference-perf-small/config.yaml"));
  const std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream rin(data("inference-perf-small/summary_lifecycle_metrics.json"));
  const std::string report((std::istreambuf_iterator<char>(rin)), std::istreambuf_iterator<char>());
  const auto run_with = [&](const std::string& from, const std::string& to, const std::string& rep_from = "",
                            const std::string& rep_to = "") {
    static int n = 0;
    const std::string sub = dir + "/r" + std::to_string(++n);
    std::filesystem::create_directories(sub);
    std::string c = config, m = report;
    if (!from.empty()) c.replace(c.find(from), from.size(), to);
    if (!rep_from.empty()) m.replace(m.find(rep_from), rep_from.size(), rep_to);
    test::write_text_file(sub, "config.yaml", c);
    test::write_text_file(sub, "summary_lifecycle_metrics.json", m);
    return test::write_text_file(sub, "run.observed.json",
                                 "{\"schema\": \"prefixsim.observed/1\", \"settings\": {\"model\": \"llama-3.1-8b\", "
                                 "\"gpu\": \"h100-sxm-80gb\"}, \"inference_perf\": \".\"}");
  };
  CHECK_THROWS_WITH(read_observed_run(run_with("type: shared_prefix", "type: random")),
                    Contains("config.yaml: field 'data.type': only shared_prefix data is rebuilt"));
  CHECK_THROWS_WITH(read_observed_run(run_with("type: constant", "type: poisson")),
                    Contains("config.yaml: field 'load.type': only constant loads are rebuilt"));
  CHECK_THROWS_WITH(read_observed_run(run_with("    output_len: 8", "    output_len: 8\n    output_distribution: {min: 1}")),
                    Contains("field 'data.shared_prefix.output_distribution'"));
  CHECK_THROWS_WITH(read_observed_run(run_with("num_groups: 2", "num_groups: many")),
                    Contains("field 'data.shared_prefix.num_groups': must be an integer"));
  CHECK_THROWS_WITH(read_observed_run(run_with("duration: 5", "duration: -5")),
                    Contains("field 'load.stages.0.duration': must be positive"));
  CHECK_THROWS_WITH(read_observed_run(run_with("", "", "\"time_to_first_token\": {\"mean\": 0.022,",
                                               "\"time_to_first_token\": {")),
                    Contains("summary_lifecycle_metrics.json: field 'successes.latency.time_to_first_token.mean': missing"));
  CHECK_THROWS_WITH(read_observed_run(run_with("system_prompt_len: 64", "system_prompt_len: 64\n  system_prompt_len: 65")),
                    Contains("config.yaml"));
}

TEST_CASE("bad observed runs name the file and the field", "[observed]") {
  CHECK_THROWS_WITH(read_observed_run(blis_with("\"max_num_seqs\": 64", "\"max_num_seqs\": \"many\"")),
                    Contains("field 'vllm_args.max_num_seqs': must be an integer"));
  CHECK_THROWS_WITH(read_observed_run(blis_with("\"tp\": 1,", "\"tp\": 2,")),
                    Contains("field 'tp': contradicts vllm_args.tensor_parallel_size"));
  CHECK_THROWS_WITH(read_observed_run(blis_with("\"meta-llama/Llama-2-7b-hf\"", "\"acme/NoSuchModel-3B\"")),
                    Contains("field 'model': model 'acme/NoSuchModel-3B' is not in the catalog"));
  CHECK_THROWS_WITH(read_observed_run(blis_with("\"ttft_ms\": {\"mean\": 30.0,", "\"ttft_ms\": {")),
                    Contains("field 'measured.ttft_ms.mean': missing"));
  CHECK_THROWS_WITH(read_observed_run(blis_with("\"rate\": 4.0", "\"rate\": -4.0")),
                    Contains("stages.1.rate': must be positive"));
  CHECK_THROWS_WITH(read_observed_run(blis_with("{\n  \"id\"", "[\n  \"id\"")), Contains("not valid JSON"));
  CHECK_THROWS_WITH(read_observed_run(data("no-such-run.json")), Contains("no-such-run.json"));
  const ObservedRun failed = read_observed_run(blis_with("\"num_failures\": 0", "\"num_failures\": 3"));
  CHECK(failed.saturated);
  CHECK(failed.saturation == "3 of 40 requests failed");
}

TEST_CASE("catalog names are found from a run's Hugging Face id or hardware name", "[observed]") {
  CHECK(catalog_model_for("Qwen/Qwen3-30B-A3B-Instruct-2507", "f", "model") == "qwen3-30b-a3b");
  CHECK(catalog_model_for("01-ai/Yi-34B", "f", "model") == "yi-34b");
  CHECK(catalog_model_for("mistralai/Mistral-Nemo-Instruct-2407", "f", "model") == "mistral-nemo-12b");
  CHECK(catalog_gpu_for("H100", "f", "gpu") == "h100-sxm-80gb");
  CHECK(catalog_gpu_for("RTXPRO6000", "f", "gpu") == "rtx-pro-6000-96gb");
  CHECK_THROWS_WITH(catalog_gpu_for("TPU-v5", "f.json", "gpu"), Contains("f.json: field 'gpu': GPU 'TPU-v5'"));
}
