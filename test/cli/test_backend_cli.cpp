// `replay --backend cpu --backend-check N` from the command line: the
// simulator's own batches run on a real (tiny, random-weight) model, and the
// caching invariant holds across preemptions, a fleet and a Mooncake trace;
// the backend leaves every modeled figure as it was; misuse is exit 2.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace test_backend_cli {

json json_of(const std::string& path) { return json::parse(read_file(path)); }

json checked_replay(const std::string& name, std::vector<std::string> args) {
  const std::string dir = temp_dir(name);
  std::vector<std::string> a = {"replay", "--backend", "cpu", "--backend-check", "20", "--out", dir, "--quiet"};
  a.insert(a.end(), args.begin(), args.end());
  const auto r = run_cli(a);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/report.json");
  const json& b = rep["backend"];
  CHECK(b["kind"] == "cpu");
  CHECK(b["shape"]["name"] == "tiny");
  CHECK(b["time"] == "modeled");
  CHECK(b["steps"].get<uint64_t>() > 0);
  CHECK(b["check"]["passed"] == true);
  CHECK(b["check"]["max_rel_error"].get<double>() <= 1e-4);
  // report.html says what ran and that the check passed (no shadow chart: nothing was measured).
  const std::string html = read_file(dir + "/report.html");
  CHECK(html.find("<h2>Real backend</h2>") != std::string::npos);
  CHECK(html.find("random-weight tiny") != std::string::npos);
  CHECK(html.find("<tr><td>passed</td><td>" + std::to_string(b["check"]["requests"].get<int64_t>()) + "</td>") !=
        std::string::npos);
  CHECK(html.find("chart-shadow") == std::string::npos);
  return rep;
}

TEST_CASE("replay --backend cpu passes the caching check through preemptions", "[cli][backend]") {
  const json rep = checked_replay("backend-preempt", {"--workload", "multi-turn", "--requests", "30", "--kv-blocks", "80"});
  CHECK(rep["engine"]["preemptions"].get<uint64_t>() > 0);
  CHECK(rep["prefix_cache"]["hit_tokens"].get<uint64_t>() > 0);
  CHECK(rep["backend"]["check"]["requests"] == 20);
  CHECK(rep["backend"]["check"]["rows"].get<int64_t>() > 1000);  // 4,322
}

TEST_CASE("replay --backend cpu passes the caching check in a fleet of 4 behind kv-aware", "[cli][backend]") {
  const json rep = checked_replay("backend-fleet", {"--workload", "multi-turn", "--requests", "30", "--kv-blocks", "1000",
                                                    "--replicas", "4", "--router", "kv-aware"});
  CHECK(rep["replicas"].size() == 4);
  CHECK(rep["backend"]["check"]["requests"] == 20);
}

TEST_CASE("replay --backend cpu passes the caching check with KV tiers: blocks loaded back carry their KV",
          "[cli][backend]") {
  // A CPU tier written on compute (vLLM's offloading), one written on the
  // GPU's evictions (HiCache's write-back), and a store shared by a fleet
  // of 4: each loads blocks back into the GPU pools.
  const json cpu = checked_replay("backend-cpu-tier", {"--workload", "multi-turn", "--requests", "30", "--kv-blocks",
                                                       "80", "--kv-offloading-size", "2"});
  CHECK(cpu["backend"]["tiers"]["loads"].get<uint64_t>() > 100);  // 213
  CHECK(cpu["backend"]["tiers"]["missing"] == 0);
  CHECK(cpu["prefix_cache"]["tier_hit_tokens"].get<uint64_t>() > 0);
  const json evict = checked_replay("backend-evict-tier", {"--workload", "multi-turn", "--requests", "30", "--kv-blocks",
                                                           "80", "--kv-tier", "cpu:size=0.05,read=50,store=evict"});
  CHECK(evict["backend"]["tiers"]["loads"].get<uint64_t>() > 10);  // 39
  CHECK(evict["backend"]["tiers"]["missing"] == 0);
  const json shared = checked_replay("backend-shared-tier",
                                     {"--workload", "multi-turn", "--requests", "30", "--kv-blocks", "200", "--replicas",
                                      "4", "--router", "round-robin", "--kv-tier", "store:size=0.2,read=10,shared=true"});
  CHECK(shared["backend"]["tiers"]["loads"].get<uint64_t>() > 10);  // 104
  CHECK(shared["backend"]["tiers"]["missing"] == 0);
}

TEST_CASE("replay --backend cpu passes the caching check on a Mooncake trace (identity blocks)", "[cli][backend]") {
  const json rep = checked_replay("backend-mooncake", {data_path("traces/mooncake_small.jsonl"), "--kv-tokens", "4000"});
  CHECK(rep["prefix_cache"]["hit_tokens"].get<uint64_t>() > 0);
  CHECK(rep["backend"]["check"]["requests"].get<int64_t>() == rep["trace"]["requests"].get<int64_t>());
}

TEST_CASE("replay --backend cpu changes no modeled figure: the report is the plain replay's plus `backend`",
          "[cli][backend]") {
  const std::string dir = temp_dir("backend-same");
  const std::vector<std::string> w = {"--workload", "multi-turn", "--requests", "20", "--kv-blocks", "200", "--quiet"};
  std::vector<std::string> plain = {"replay", "--out", dir + "/plain"}, real = {"replay", "--backend", "cpu", "--out", dir + "/real"};
  plain.insert(plain.end(), w.begin(), w.end());
  real.insert(real.end(), w.begin(), w.end());
  REQUIRE(run_cli(plain).rc == 0);
  REQUIRE(run_cli(real).rc == 0);
  json a = json_of(dir + "/plain/report.json"), b = json_of(dir + "/real/report.json");
  REQUIRE(b.contains("backend"));
  CHECK_FALSE(b["backend"].contains("check"));  // no --backend-check, no check
  b.erase("backend");
  a["scenario"].erase("out");
  b["scenario"].erase("out");
  CHECK(a == b);
  CHECK(read_file(dir + "/plain/series.csv") == read_file(dir + "/real/series.csv"));
}

TEST_CASE("replay --backend misuse is exit 2 naming the flag", "[cli][backend]") {
  const std::string dir = temp_dir("backend-bad");
  const std::vector<std::string> w = {"--requests", "5", "--kv-blocks", "200", "--out", dir, "--quiet"};
  auto refused = [&](std::vector<std::string> a, const std::string& flag) {
    a.insert(a.begin(), "replay");
    a.insert(a.end(), w.begin(), w.end());
    const auto r = run_cli(a);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(flag) != std::string::npos);
  };
  refused({"--backend-check", "3"}, "--backend-check: needs --backend");
  refused({"--shadow"}, "--shadow: needs --backend");
  refused({"--backend", "cpu", "--shadow"}, "--shadow: needs --backend gpu");
  refused({"--backend", "tpu"}, "--backend: 'tpu'");
  refused({"--backend", "cpu", "--backend-shape", "gpt-5"}, "--backend-shape: unknown shape 'gpt-5'");
  refused({"--backend", "cpu", "--backend-check", "0"}, "--backend-check: must be at least 1");
  refused({"--backend", "cpu", "--backend-tolerance", "2"}, "--backend-tolerance");
  refused({"--backend", "cpu", "--mode", "cache"}, "--backend: only engine mode");
  refused({"--shadow-samples", dir + "/s.csv"}, "--shadow-samples: needs --backend");
  refused({"--backend", "cpu", "--shadow-samples", dir + "/s.csv"}, "--shadow-samples: needs --shadow");
  refused({"--backend", "gpu", "--backend-shape", "tiny", "--shadow", "--shadow-samples", dir + "/s.csv"},
          "--shadow-samples: shape tiny is no catalog model's");
  refused({"--backend", "cpu", "--shadow-samples", dir + "/report.json"}, "--shadow-samples: " + dir +
                                                                             "/report.json is --out's report.json");
  refused({"--backend", "cpu", "--shadow-samples", "/dev/null"}, "--shadow-samples");
  CHECK_FALSE(std::filesystem::exists(dir + "/report.json"));
}

// The binary loads the CUDA library only for --backend gpu (gpu/cuda_plugin.h),
// through its run path: a CUDA build must find it there; a build without
// CUDA says so; where a GPU is present the run goes ahead.
TEST_CASE("replay --backend gpu finds the CUDA library or says why it cannot run", "[cli][backend]") {
  const std::string dir = temp_dir("backend-gpu");
  const auto r = run_cli({"replay", "--workload", "multi-turn", "--requests", "3", "--kv-blocks", "200", "--backend",
                          "gpu", "--out", dir, "--quiet"});
  INFO(r.err);
  if (r.rc == 0) {
    CHECK(std::filesystem::exists(dir + "/report.json"));
    return;
  }
  CHECK(r.rc == 2);
  CHECK(r.err.find("cannot load the CUDA library") == std::string::npos);
  const bool no_cuda = r.err.find("built without CUDA") != std::string::npos;
  const bool no_device = r.err.find("no CUDA device") != std::string::npos;
  CHECK((no_cuda || no_device));
  CHECK_FALSE(std::filesystem::exists(dir + "/report.json"));
}

}  // namespace test_backend_cli
