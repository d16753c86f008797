// `prefixsim plan` end to end: on a load one replica cannot serve within the
// SLO, the answer meets it, one replica fewer does not, and each run is the
// replay of that fleet; a run stopped once the SLO could no longer hold
// fails as it would have run to the end (--full-runs), and the plan is the
// same; routers compared at the answer; bad --slo is exit 2.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

TEST_CASE("plan answers with the fewest replicas meeting the SLO, and its runs are replays", "[cli][plan]") {
  const std::string dir = temp_dir("plan");
  const std::string trace = dir + "/chat.jsonl";
  REQUIRE(run_cli({"generate", "rag", "--requests", "400", "--rate", "200", "--seed", "4", "-o", trace}).rc == 0);
  auto r = run_cli({"plan", trace, "--slo", "ttft_p99=300ms", "--tp", "1,2", "--max-replicas", "16",
                    "--routers", "round-robin,least-loaded", "--out", dir + "/out"});
  INFO(r.err << r.out);
  REQUIRE(r.rc == 0);
  const json plan = json::parse(read_file(dir + "/out/plan.json"));
  CHECK(plan["schema"] == "prefixsim.plan/1");
  const json& answer = plan["answer"];
  REQUIRE(answer.is_object());
  const int64_t n = answer["replicas"];
  REQUIRE(n >= 2);  // the load is set so that one replica does not do
  CHECK(answer["run"]["meets"] == true);
  CHECK(answer["run"]["ttft_p99_ms"].get<double>() <= 300);
  REQUIRE(answer["one_fewer"].is_object());
  CHECK(answer["one_fewer"]["meets"] == false);
  CHECK(answer["margin"]["ttft_p99_ms"]["margin"].get<double>() >= 0);
  // The same plan with every run measured to the end: the same search, runs
  // and answer; a run stopped early fails there too, past its bound.
  auto full = run_cli({"plan", trace, "--slo", "ttft_p99=300ms", "--tp", "1,2", "--max-replicas", "16",
                       "--routers", "round-robin,least-loaded", "--full-runs", "--quiet", "--out", dir + "/full"});
  REQUIRE(full.rc == 0);
  const json all = json::parse(read_file(dir + "/full/plan.json"));
  CHECK(all["answer"]["replicas"] == answer["replicas"]);
  CHECK(all["answer"]["run"] == answer["run"]);
  CHECK(all["shapes"] == plan["shapes"]);
  REQUIRE(all["runs"].size() == plan["runs"].size());
  size_t stopped = 0;
  for (size_t i = 0; i < plan["runs"].size(); ++i) {
    const json& quick = plan["runs"][i];
    const json& whole = all["runs"][i];
    INFO(quick.dump() << "\n" << whole.dump());
    CHECK(quick["replicas"] == whole["replicas"]);
    CHECK(quick["meets"] == whole["meets"]);
    CHECK_FALSE(whole.contains("stopped"));
    if (!quick.contains("stopped")) {
      CHECK(quick == whole);
      continue;
    }
    ++stopped;
    CHECK(quick["meets"] == false);
    CHECK(quick["ttft_p99_ms"].is_null());
    CHECK(whole["ttft_p99_ms"].get<double>() > 300);
    const json& st = quick["stopped"];
    CHECK(st["bound"] == "ttft_p99=300ms");
    CHECK(st["requests"] == 400);
    CHECK(st["above_limit"].get<int>() == 400 - 396 + 1);  // 5 of at most 400 over: fewer than rank 396 within
    CHECK(st["finished_requests"].get<int>() < 400);
  }
  CHECK(stopped > 0);
  CHECK(r.out.find("stopped after") != std::string::npos);
  CHECK(all["answer"]["one_fewer"]["ttft_p99_ms"].get<double>() > 300);
  // Cost without prices is GPUs; the cheapest shape wins.
  CHECK(answer["cost_unit"] == "GPUs");
  for (const json& s : plan["shapes"])
    if (s.contains("cost")) CHECK(s["cost"].get<double>() >= answer["cost"].get<double>());
  // Each run is the replay of that fleet.
  const std::string tp = std::to_string(answer["tp"].get<int>());
  for (int64_t k : {n, n - 1}) {
    const std::string out = dir + "/r" + std::to_string(k);
    auto rep = run_cli({"replay", trace, "--replicas", std::to_string(k), "--tp", tp, "--quiet",
                        "--out", out});
    INFO(rep.err);
    REQUIRE(rep.rc == 0);
    const json report = json::parse(read_file(out + "/report.json"));
    const json& run = k == n ? answer["run"] : all["answer"]["one_fewer"];
    CHECK(report["latency_ms"]["ttft"]["p99"] == run["ttft_p99_ms"]);
    CHECK(report["prefix_cache"]["hit_rate"] == run["hit_rate"]);
  }
  REQUIRE(plan["routers_at_answer"].size() == 2);
  CHECK(plan["routers_at_answer"][0]["ttft_p99_ms"] == answer["run"]["ttft_p99_ms"]);  // round-robin: the answer's
  CHECK(r.out.find("one fewer (" + std::to_string(n - 1) + " replicas)") != std::string::npos);
  CHECK(read_file(dir + "/out/plan.md").find("**Answer:**") != std::string::npos);
  CHECK(read_file(dir + "/out/plan.html").find("chart-0") != std::string::npos);
  // Same inputs, same bytes.
  REQUIRE(run_cli({"plan", trace, "--slo", "ttft_p99=300ms", "--tp", "1,2", "--max-replicas", "16",
                   "--routers", "round-robin,least-loaded", "--out", dir + "/again", "--quiet", "--threads", "1"})
              .rc == 0);
  CHECK(read_file(dir + "/again/plan.json") == read_file(dir + "/out/plan.json"));
  // A router spec's own commas continue it: one router, as compare reads it.
  auto spec = run_cli({"plan", trace, "--slo", "ttft_p99=300ms", "--tp", "1,2", "--max-replicas", "16", "--routers",
                       "kv-aware:overlap_weight=2,temperature=0.5", "--out", dir + "/spec", "--quiet"});
  INFO(spec.err);
  REQUIRE(spec.rc == 0);
  CHECK(json::parse(read_file(dir + "/spec/plan.json"))["routers_at_answer"].size() == 1);
}

TEST_CASE("plan bounds the refusal rate of a fleet that sheds at the router, as its replay counts it",
          "[cli][plan][admission]") {
  const std::string dir = temp_dir("plan-adm");
  const std::string trace = dir + "/chat.jsonl";
  REQUIRE(run_cli({"generate", "rag", "--requests", "400", "--rate", "200", "--seed", "4", "-o", trace}).rc == 0);
  // llm-d's saturation detector at its defaults; no router queue.
  const std::string adm = "saturation";
  auto r = run_cli({"plan", trace, "--slo", "ttft_p99=2s,refusal_rate<=20%", "--tp", "1", "--max-replicas", "64",
                    "--admission", adm, "--out", dir + "/out", "--quiet"});
  INFO(r.err << r.out);
  REQUIRE(r.rc == 0);
  const json plan = json::parse(read_file(dir + "/out/plan.json"));
  const json& answer = plan["answer"];
  REQUIRE(answer.is_object());
  const double rate = answer["run"]["refusal_rate"].get<double>();
  CHECK(rate <= 0.2);
  REQUIRE(answer["one_fewer"].is_object());
  const json& fewer = answer["one_fewer"];
  CHECK((fewer["refusal_rate"].get<double>() > 0.2 || fewer["ttft_p99_ms"].get<double>() > 2000));
  CHECK(answer["margin"]["refusal_rate"]["limit"] == 0.2);
  const std::string n = std::to_string(answer["replicas"].get<int64_t>());
  auto rep = run_cli({"replay", trace, "--replicas", n, "--admission", adm, "--quiet", "--out", dir + "/r"});
  REQUIRE(rep.rc == 0);
  const json report = json::parse(read_file(dir + "/r/report.json"));
  CHECK(report["admission"]["refusal_rate"].get<double>() == Approx(rate));
  CHECK(report["latency_ms"]["ttft"]["p99"] == answer["run"]["ttft_p99_ms"]);
}

TEST_CASE("plan refuses a bad --slo and says when nothing meets it", "[cli][plan]") {
  const std::string dir = temp_dir("plan-bad");
  const std::string trace = dir + "/chat.jsonl";
  REQUIRE(run_cli({"generate", "chatbot", "--requests", "50", "-o", trace}).rc == 0);
  for (const char* slo : {"ttft_p99=2", "hit_rate<=0.5", "nosuch=1s"}) {
    auto r = run_cli({"plan", trace, "--slo", slo, "--out", dir + "/out"});
    INFO(slo << ": " << r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find("--slo") != std::string::npos);
  }
  CHECK(run_cli({"plan", trace, "--out", dir + "/out"}).rc == 2);  // --slo missing
  // A hit rate above the trace's ideal: no fleet meets it (exit 1), the runs are still written.
  auto none = run_cli({"plan", trace, "--slo", "hit_rate>=0.999", "--tp", "1", "--max-replicas", "2", "--out", dir + "/none"});
  INFO(none.err);
  CHECK(none.rc == 1);
  const json plan = json::parse(read_file(dir + "/none/plan.json"));
  CHECK(plan["answer"].is_null());
  CHECK(plan["runs"].size() == 2);
}

TEST_CASE("plan searches split fleets beside the aggregated ones, and a split answer is the replay of that fleet",
          "[cli][plan][disagg]") {
  const std::string dir = temp_dir("plan-split");
  const std::string trace = dir + "/chat.jsonl";
  REQUIRE(run_cli({"generate", "rag", "--requests", "400", "--rate", "200", "--seed", "4", "-o", trace}).rc == 0);
  // TP 1 alone needs more than 16 replicas for this SLO; 16 prefill TP 1
  // instances with a few decode TP 2 ones do it.
  const std::vector<std::string> args = {"plan", trace, "--slo", "ttft_p99=300ms,tpot_p99=40ms", "--tp", "1",
                                         "--prefill-tp", "1", "--decode-tp", "2", "--max-replicas", "16"};
  std::vector<std::string> first = args;
  first.push_back("--out");
  first.push_back(dir + "/out");
  auto r = run_cli(first);
  INFO(r.err << r.out);
  REQUIRE(r.rc == 0);
  const json plan = json::parse(read_file(dir + "/out/plan.json"));
  REQUIRE(plan["shapes"].size() == 2);
  CHECK(plan["shapes"][0]["tp"] == 1);
  CHECK(plan["shapes"][0]["status"] == "no fleet of up to 16 replicas meets the SLO");
  CHECK(plan["shapes"][1]["prefill_tp"] == 1);
  CHECK(plan["shapes"][1]["decode_tp"] == 2);
  const json& answer = plan["answer"];
  REQUIRE(answer.is_object());
  const int64_t p = answer["prefill_replicas"], d = answer["decode_replicas"];
  CHECK(answer["replicas"] == p + d);
  CHECK(answer["gpus"] == p + 2 * d);
  CHECK(answer["cost"] == answer["gpus"].get<double>());  // unpriced: cost = GPUs
  CHECK(answer["run"]["meets"] == true);
  CHECK(answer["run"]["ttft_p99_ms"].get<double>() <= 300);
  CHECK(answer["run"]["tpot_p99_ms"].get<double>() <= 40);
  for (const char* part : {"queue", "prefill", "transfer", "first_decode"})
    CHECK(answer["run"]["ttft_parts_mean_ms"][part].get<double>() >= 0);
  // One decode instance fewer was run and fails (one prefill fewer fails
  // too where it was run).
  REQUIRE(answer["one_fewer_decode"].is_object());
  CHECK(answer["one_fewer_decode"]["meets"] == false);
  if (answer["one_fewer_prefill"].is_object()) CHECK(answer["one_fewer_prefill"]["meets"] == false);
  CHECK(plan["search"]["decode_tp"] == json::array({2}));
  CHECK(plan["scenario"].value("prefill_replicas", 0) == 0);  // searched, not the 1:1 it validated with
  // The answer is the replay of that fleet.
  auto rep = run_cli({"replay", trace, "--prefill-replicas", std::to_string(p), "--decode-replicas",
                      std::to_string(d), "--decode-tp", "2", "--quiet", "--out", dir + "/replay"});
  INFO(rep.err);
  REQUIRE(rep.rc == 0);
  const json report = json::parse(read_file(dir + "/replay/report.json"));
  CHECK(report["latency_ms"]["ttft"]["p99"] == answer["run"]["ttft_p99_ms"]);
  CHECK(report["latency_ms"]["tpot"]["p99"] == answer["run"]["tpot_p99_ms"]);
  CHECK(report["prefix_cache"]["hit_rate"] == answer["run"]["hit_rate"]);
  // The documents say it as a split.
  const std::string size = std::to_string(p) + "P:" + std::to_string(d) + "D";
  CHECK(r.out.find("x " + size + ": ") != std::string::npos);
  CHECK(read_file(dir + "/out/plan.md").find("| " + size + " |") != std::string::npos);
  CHECK(read_file(dir + "/out/plan.html").find(size) != std::string::npos);
  // Same inputs, same bytes, whatever the threads.
  std::vector<std::string> again = args;
  for (const char* a : {"--threads", "1", "--quiet", "--out"}) again.push_back(a);
  again.push_back(dir + "/again");
  REQUIRE(run_cli(again).rc == 0);
  CHECK(read_file(dir + "/again/plan.json") == read_file(dir + "/out/plan.json"));
}

TEST_CASE("plan refuses a split TP the model cannot take and disaggregated settings it cannot run", "[cli][plan][disagg]") {
  const std::string dir = temp_dir("plan-split-bad");
  const std::string trace = dir + "/chat.jsonl";
  REQUIRE(run_cli({"generate", "rag", "--requests", "20", "--seed", "4", "-o", trace}).rc == 0);
  // llama-3.1-8b has 32 heads: no TP 3.
  auto tp = run_cli({"plan", trace, "--slo", "ttft_p99=1s", "--tp", "1", "--decode-tp", "3", "--out", dir + "/a"});
  CHECK(tp.rc == 2);
  CHECK(tp.err.find("decode TP 3") != std::string::npos);
  auto link = run_cli({"plan", trace, "--slo", "ttft_p99=1s", "--kv-link-gbps", "-1", "--out", dir + "/b"});
  CHECK(link.rc == 2);
  CHECK(link.err.find("--kv-link-gbps") != std::string::npos);
  auto design = run_cli({"plan", trace, "--slo", "ttft_p99=1s", "--disagg", "nope", "--out", dir + "/c"});
  CHECK(design.rc == 2);
  CHECK(design.err.find("--disagg") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/a/plan.json"));
}

TEST_CASE("plan searches a mix of two groups beside each group alone, and a mix's row is the replay of that fleet",
          "[cli][plan][mixed]") {
  const std::string dir = temp_dir("plan-mix");
  const std::string trace = dir + "/chat.jsonl";
  REQUIRE(run_cli({"generate", "rag", "--requests", "400", "--rate", "200", "--seed", "4", "-o", trace}).rc == 0);
  const std::string groups = "h100-sxm-80gb:tp=1;a100-80gb:tp=1";
  const std::vector<std::string> args = {"plan", trace, "--slo", "ttft_p99=5s", "--tp", "1", "--replica-groups",
                                         groups, "--max-replicas", "16", "--router", "least-loaded",
                                         "--gpu-cost", "h100-sxm-80gb=3,a100-80gb=1.5"};
  std::vector<std::string> first = args;
  for (const char* x : {"--threads", "2", "--out"}) first.push_back(x);
  first.push_back(dir + "/out");
  auto r = run_cli(first);
  INFO(r.err << r.out);
  REQUIRE(r.rc == 0);
  const json plan = json::parse(read_file(dir + "/out/plan.json"));
  // --gpu's TP 1, the A100 group alone, the mix.
  REQUIRE(plan["shapes"].size() == 3);
  const auto named = [](const json& shape, const std::string& name) {
    return shape["fleet"].get<std::string>().rfind(name + ",", 0) == 0;  // then the extra dimensions
  };
  CHECK(named(plan["shapes"][0], "TP 1"));
  CHECK(named(plan["shapes"][1], "a100-80gb TP 1"));
  CHECK(plan["shapes"][1]["gpu"] == "a100-80gb");
  const json& mix = plan["shapes"][2];
  CHECK(named(mix, "mix h100-sxm-80gb TP 1 + a100-80gb TP 1"));
  REQUIRE(mix["status"] == "meets");
  const int64_t a = mix["groups"][0]["replicas"], b = mix["groups"][1]["replicas"];
  CHECK((a >= 1 && b >= 1 && mix["replicas"] == a + b));
  CHECK(mix["cost"].get<double>() == 3.0 * a + 1.5 * b);  // each group at its own GPU's price
  CHECK(plan["cost"]["per_gpu_hour"]["a100-80gb"] == 1.5);
  CHECK(plan["shapes"][1]["cost"].get<double>() == 1.5 * plan["shapes"][1]["replicas"].get<double>());
  CHECK(plan["search"]["mix"][1]["gpu"] == "a100-80gb");
  // The mix's row at its answer is the replay of that mixed fleet.
  const json* row = nullptr;
  for (const json& x : plan["runs"])
    if (x.contains("groups") && x["groups"][0]["replicas"] == a && x["groups"][1]["replicas"] == b) row = &x;
  REQUIRE(row);
  CHECK((*row)["meets"] == true);
  CHECK((*row)["cost"].get<double>() == mix["cost"].get<double>());
  auto rep = run_cli({"replay", trace, "--replica-groups",
                      "h100-sxm-80gb:x=" + std::to_string(a) + ";a100-80gb:x=" + std::to_string(b), "--router",
                      "least-loaded", "--quiet", "--out",
                      dir + "/replay"});
  INFO(rep.err);
  REQUIRE(rep.rc == 0);
  const json report = json::parse(read_file(dir + "/replay/report.json"));
  CHECK(report["latency_ms"]["ttft"]["p99"] == (*row)["ttft_p99_ms"]);
  CHECK(report["prefix_cache"]["hit_rate"] == (*row)["hit_rate"]);
  // The documents give a mix's size as "a+b".
  const std::string size = std::to_string(a) + "+" + std::to_string(b);
  CHECK(read_file(dir + "/out/plan.md").find("| " + size + " |") != std::string::npos);
  CHECK(read_file(dir + "/out/plan.html").find(size) != std::string::npos);
  // Same inputs, same bytes, whatever the threads.
  std::vector<std::string> again = args;
  for (const char* x : {"--threads", "1", "--quiet", "--out"}) again.push_back(x);
  again.push_back(dir + "/again");
  REQUIRE(run_cli(again).rc == 0);
  CHECK(read_file(dir + "/again/plan.json") == read_file(dir + "/out/plan.json"));
}

TEST_CASE("plan refuses a mix that is not two groups or that gives counts", "[cli][plan][mixed]") {
  const std::string dir = temp_dir("plan-mix-bad");
  const std::string trace = dir + "/chat.jsonl";
  REQUIRE(run_cli({"generate", "rag", "--requests", "20", "--seed", "4", "-o", trace}).rc == 0);
  for (const char* groups : {"h100-sxm-80gb", "h100-sxm-80gb;a100-80gb;l40s-48gb", "h100-sxm-80gb:x=2;a100-80gb",
                             "h100-sxm-80gb;no-such-gpu"}) {
    INFO(groups);
    auto r = run_cli({"plan", trace, "--slo", "ttft_p99=1s", "--replica-groups", groups, "--out", dir + "/a"});
    CHECK(r.rc == 2);
    CHECK((r.err.find("--replica-groups") != std::string::npos || r.err.find("no-such-gpu") != std::string::npos));
  }
  for (const char* cost : {"h100-sxm-80gb=2,no-such-gpu=1", "h100-sxm-80gb=-1", "h100-sxm-80gb=2,h100-sxm-80gb=3",
                           "=2", "a100-80gb=1"}) {  // the last: no price for the H100 group
    INFO(cost);
    auto r = run_cli({"plan", trace, "--slo", "ttft_p99=1s", "--replica-groups", "h100-sxm-80gb;a100-80gb",
                      "--gpu-cost", cost, "--out", dir + "/a"});
    CHECK(r.rc == 2);
    CHECK(r.err.find("--gpu-cost") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/a/plan.json"));
}
