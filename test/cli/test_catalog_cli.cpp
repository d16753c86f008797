// User catalogs and the fp8 KV cache through the binary: `catalog --check`,
// `replay --model-file/--gpu-file`, $PREFIXSIM_CATALOG, `--kv-cache-dtype`.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace {


json report_of(const std::string& out) { return json::parse(read_file(out + "/report.json")); }

// An RTX PRO 6000 under another name, and Qwen3-30B-A3B's figures under
// another name, as a user would write them (the built-in schema).
const char* kGpus =
    "gpus:\n"
    "  - name: my-pro-6000\n"
    "    description: test copy of the RTX PRO 6000 Blackwell\n"
    "    source: NVIDIA RTX PRO 6000 Blackwell datasheet\n"
    "    memory_bytes: 96000000000\n"
    "    peak_bf16_flops: 503.8e12\n"
    "    hbm_bandwidth: 1792e9\n"
    "    interconnect: pcie5\n"
    "    interconnect_bandwidth: 64e9\n"
    "    allreduce_latency_s: 25e-6\n"
    "    sm_count: 188\n";

const char* kModels =
    "models:\n"
    "  - name: my-30b-a3b\n"
    "    source: Qwen/Qwen3-30B-A3B config.json\n"
    "    layers: 48\n"
    "    hidden: 2048\n"
    "    heads: 32\n"
    "    kv_heads: 4\n"
    "    head_dim: 128\n"
    "    intermediate: 6144\n"
    "    vocab: 151936\n"
    "    tied_embeddings: false\n"
    "    params: 30532122624\n"
    "    active_params: 3353032704\n"
    "    experts: 128\n"
    "    experts_per_token: 8\n"
    "    dtype_bytes: 2\n";

}  // namespace

TEST_CASE("catalog --check validates a user file and prints what it defines", "[cli][catalog]") {
  const std::string dir = temp_dir("catalog-check");
  auto r = run_cli({"catalog", "--check", write_text_file(dir, "models.yaml", kModels), "--json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);
  REQUIRE(j["models"].size() == 1);
  CHECK(j["models"][0]["name"] == "my-30b-a3b");
  CHECK(j["models"][0]["kv_bytes_per_token"] == 2 * 4 * 128 * 2 * 48);
  CHECK(j["models"][0]["weight_bytes_total"] == int64_t{30532122624} * 2);
  auto g = run_cli({"catalog", "--check", write_text_file(dir, "gpus.yaml", kGpus)});
  CHECK(g.rc == 0);
  CHECK(g.out.find("my-pro-6000") != std::string::npos);

  std::string bad = kModels;
  bad.replace(bad.find("kv_heads: 4"), 11, "kv_heads: 5");
  auto b = run_cli({"catalog", "--check", write_text_file(dir, "bad.yaml", bad)});
  CHECK(b.rc == 2);
  CHECK(b.err.find("bad.yaml:7:") != std::string::npos);
  CHECK(b.err.find("kv_heads") != std::string::npos);
  auto dup = run_cli({"catalog", "--check", write_text_file(dir, "dup.yaml", "gpus:\n  - name: b200\n    description: x\n")});
  CHECK(dup.rc == 2);
  CHECK(dup.err.find("dup.yaml:") != std::string::npos);
}

TEST_CASE("replay runs a model and GPU given by file, and refuses a bad file before running", "[cli][catalog]") {
  const std::string dir = temp_dir("catalog-replay");
  const std::string mf = write_text_file(dir, "m.yaml", kModels), gf = write_text_file(dir, "g.yaml", kGpus);
  auto r = run_cli({"replay", "--requests", "100", "--model-file", mf, "--gpu-file", gf, "--model", "my-30b-a3b",
                    "--gpu", "my-pro-6000", "--out", dir + "/o"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = report_of(dir + "/o");
  CHECK(rep["scenario"]["model_spec"]["active_params"] == int64_t{3353032704});
  CHECK(rep["scenario"]["model_spec"]["experts"] == 128);
  CHECK(rep["scenario"]["cost_model"]["coefficients"]["expert_miss"] == 0.9375);
  CHECK(rep["scenario"]["gpu_spec"]["name"] == "my-pro-6000");
  CHECK(rep["scenario"]["model_file"] == mf);
  CHECK(rep["kv_cache"]["bytes_per_block"] == 2 * 4 * 128 * 2 * 48 * 16);
  // The same model built in gives the same run.
  auto same = run_cli({"replay", "--requests", "100", "--gpu-file", gf, "--model", "qwen3-30b-a3b", "--gpu",
                       "my-pro-6000", "--out", dir + "/o2"});
  REQUIRE(same.rc == 0);
  CHECK(report_of(dir + "/o2")["latency_ms"] == rep["latency_ms"]);

  auto bad = run_cli({"replay", "--model-file", write_text_file(dir, "bad.yaml", "models:\n  - name: x\n    layer: 3\n"),
                      "--out", dir + "/bad"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("bad.yaml:3:") != std::string::npos);
  CHECK(bad.err.find("layer") != std::string::npos);
  CHECK(!std::filesystem::exists(dir + "/bad"));
}

TEST_CASE("PREFIXSIM_CATALOG's models.yaml and gpus.yaml extend the catalog", "[cli][catalog]") {
  const std::string dir = temp_dir("catalog-env");
  write_text_file(dir, "models.yaml", kModels);
  write_text_file(dir, "gpus.yaml", kGpus);
  ::setenv("PREFIXSIM_CATALOG", dir.c_str(), 1);
  auto r = run_cli({"catalog", "--json"});
  auto missing = (::setenv("PREFIXSIM_CATALOG", (dir + "/nope").c_str(), 1), run_cli({"catalog"}));
  ::unsetenv("PREFIXSIM_CATALOG");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);
  bool model = false, gpu = false;
  for (const json& m : j["models"]) model = model || m["name"] == "my-30b-a3b";
  for (const json& g : j["gpus"]) gpu = gpu || g["name"] == "my-pro-6000";
  CHECK(model);
  CHECK(gpu);
  CHECK(missing.rc == 2);
  CHECK(missing.err.find("PREFIXSIM_CATALOG") != std::string::npos);
}

TEST_CASE("a bad PREFIXSIM_CATALOG under sweep is blamed on the catalog, not on a grid line", "[cli][catalog]") {
  const std::string dir = temp_dir("catalog-env-sweep");
  write_text_file(dir, "models.yaml", "models:\n  - name: x\n    layers: oops\n");
  write_text_file(dir, "g.yaml", "base: {workload: chatbot, requests: 5}\naxes: {replicas: [1, 2]}\n");
  ::setenv("PREFIXSIM_CATALOG", dir.c_str(), 1);
  const auto r = run_cli({"sweep", dir + "/g.yaml", "--out", dir + "/o"});
  ::unsetenv("PREFIXSIM_CATALOG");
  CHECK(r.rc == 2);
  CHECK(r.err.find(dir + "/models.yaml:") != std::string::npos);
  CHECK(r.err.find("g.yaml") == std::string::npos);
  CHECK(r.err.find("at the point") == std::string::npos);
}

TEST_CASE("a PREFIXSIM_CATALOG file with text that is not UTF-8, or an alias bomb, is exit 2 naming file and line",
          "[cli][catalog]") {
  const std::string text_dir = temp_dir("catalog-env-utf8"), bomb_dir = temp_dir("catalog-env-bomb");
  std::string gpus = kGpus;
  gpus.replace(gpus.find("test copy"), 4, "t\xe9st");  // Latin-1, as a hand-edited file might hold
  write_text_file(text_dir, "gpus.yaml", gpus);
  std::string bomb = "models:\n  - name: x\n    a: &a [x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = i == 1 ? "a" : "l" + std::to_string(i - 1), name = "l" + std::to_string(i);
    bomb += "    " + name + ": &" + name + " [*" + prev;
    for (int k = 1; k < 9; ++k) bomb += ",*" + prev;
    bomb += "]\n";
  }
  write_text_file(bomb_dir, "models.yaml", bomb);
  ::setenv("PREFIXSIM_CATALOG", text_dir.c_str(), 1);
  auto text = run_cli({"catalog", "--json"});
  ::setenv("PREFIXSIM_CATALOG", bomb_dir.c_str(), 1);
  auto bombed = run_cli({"catalog", "--json"});
  ::unsetenv("PREFIXSIM_CATALOG");
  CHECK(text.rc == 2);
  CHECK(text.out.empty());
  CHECK(text.err.find("gpus.yaml:3: gpus[0].description: must be valid UTF-8") != std::string::npos);
  CHECK(bombed.rc == 2);
  CHECK(bombed.err.find("models.yaml:9: YAML expands to more than 1000000 nodes (aliases)") != std::string::npos);
}

TEST_CASE("--kv-cache-dtype fp8 halves the bytes per block and doubles the derived pool", "[cli][fp8]") {
  const std::string dir = temp_dir("kv-fp8");
  auto a = run_cli({"replay", "--requests", "50", "--mode", "cache", "--out", dir + "/auto"});
  auto f = run_cli({"replay", "--requests", "50", "--mode", "cache", "--kv-cache-dtype", "fp8", "--out", dir + "/fp8"});
  INFO(a.err << f.err);
  REQUIRE(a.rc == 0);
  REQUIRE(f.rc == 0);
  const json ra = report_of(dir + "/auto"), rf = report_of(dir + "/fp8");
  CHECK(rf["kv_cache"]["bytes_per_block"].get<int64_t>() * 2 == ra["kv_cache"]["bytes_per_block"].get<int64_t>());
  const int64_t na = ra["kv_cache"]["num_blocks"], nf = rf["kv_cache"]["num_blocks"];
  CHECK(nf >= 2 * na);
  CHECK(nf <= 2 * na + 1);
  CHECK(rf["scenario"]["kv_cache_dtype"] == "fp8");
  CHECK(!ra["scenario"].contains("kv_cache_dtype"));  // auto: the report is as before
  auto scn = run_cli({"replay", "--config", write_text_file(dir, "s.yaml", "kv_cache_dtype: fp4\n"), "--out", dir + "/bad"});
  CHECK(scn.rc == 2);
  CHECK(scn.err.find("s.yaml:1:") != std::string::npos);
  CHECK(scn.err.find("kv_cache_dtype") != std::string::npos);
}

TEST_CASE("the report states which cost model produced the times and its known error", "[cli][cost_model]") {
  const std::string dir = temp_dir("known-error");
  auto r = run_cli({"replay", "--requests", "50", "--profile", "roofline", "--out", dir + "/roof"});
  auto p = run_cli({"replay", "--requests", "50", "--profile", "builtin", "--out", dir + "/prof"});
  auto d = run_cli({"replay", "--requests", "50", "--out", dir + "/default"});
  INFO(r.err << p.err << d.err);
  REQUIRE(r.rc == 0);
  REQUIRE(p.rc == 0);
  REQUIRE(d.rc == 0);
  // The default: the step model fitted on real vLLM runs, with its held-out error on them.
  const json def = report_of(dir + "/default")["scenario"]["cost_model"];
  CHECK(def["source"] == "step_model");
  CHECK(def["known_error"]["validated"] == true);
  CHECK(def["known_error"]["metrics"]["e2e_mean"]["median_abs_error"].is_number());
  CHECK(read_file(dir + "/default/summary.md").find("step_model cost model: median |error| TTFT") != std::string::npos);
  const json roof = report_of(dir + "/roof")["scenario"]["cost_model"];
  CHECK(roof["source"] == "roofline");
  CHECK(roof["known_error"]["validated"] == false);
  CHECK(read_file(dir + "/roof/summary.md").find("roofline cost model: unvalidated") != std::string::npos);
  const json prof = report_of(dir + "/prof")["scenario"]["cost_model"];
  CHECK(prof["source"] == "profile");
  CHECK(prof["known_error"]["validated"] == true);
  // The shipped llama-3.1-8b / H100 profile's own held-out figure.
  CHECK(prof["known_error"]["step_mape_held_out"] == prof["profile"]["fit"]["mape_held_out"]);
  CHECK(prof["known_error"]["step_mape_held_out"].get<double>() > 0);
  CHECK(read_file(dir + "/prof/summary.md").find("profile cost model: held-out step MAPE") != std::string::npos);
}

TEST_CASE("the example user catalog (examples/catalog) is valid and runs", "[cli][catalog]") {
  // test/data/../../examples/catalog: the files the README and the notes use.
  const std::string dir = data_path("../../examples/catalog");
  const std::string mf = dir + "/models.yaml", gf = dir + "/gpus.yaml";
  for (const std::string& f : {mf, gf}) {
    auto c = run_cli({"catalog", "--check", f});
    INFO(c.err);
    CHECK(c.rc == 0);
  }
  const std::string out = temp_dir("catalog-example") + "/o";
  auto r = run_cli({"replay", "--requests", "50", "--model-file", mf, "--model", "qwen3-30b-a3b-instruct-2507",
                    "--gpu-file", gf, "--gpu", "rtx-pro-6000-ws", "--out", out});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  // Its figures are the built-in Qwen3-30B-A3B's: the same KV bytes and routing.
  const json rep = report_of(out);
  CHECK(rep["scenario"]["model_spec"]["experts"] == 128);
  CHECK(rep["scenario"]["model_spec"]["params"] == int64_t{30532122624});
  CHECK(rep["kv_cache"]["bytes_per_block"] == 2 * 4 * 128 * 2 * 48 * 16);
}

TEST_CASE("--enable-expert-parallel splits a MoE's experts over the replicas and is refused for a dense model",
          "[cli][moe]") {
  const std::string dir = temp_dir("expert-parallel");
  const std::vector<std::string> moe = {"replay", "--requests", "50", "--model", "qwen3-30b-a3b", "--replicas", "2"};
  auto alone = run_cli([&] { auto a = moe; a.insert(a.end(), {"--out", dir + "/alone"}); return a; }());
  auto ep = run_cli([&] {
    auto a = moe;
    a.insert(a.end(), {"--enable-expert-parallel", "--out", dir + "/ep"});
    return a;
  }());
  INFO(alone.err << ep.err);
  REQUIRE(alone.rc == 0);
  REQUIRE(ep.rc == 0);
  const json ra = report_of(dir + "/alone"), re = report_of(dir + "/ep");
  CHECK(re["scenario"]["enable_expert_parallel"] == true);
  CHECK(!ra["scenario"].contains("enable_expert_parallel"));  // off: the report is as before
  CHECK(re["kv_cache"]["num_blocks"].get<int64_t>() > ra["kv_cache"]["num_blocks"].get<int64_t>());

  auto dense = run_cli({"replay", "--requests", "50", "--replicas", "2", "--enable-expert-parallel", "--out",
                        dir + "/dense"});
  CHECK(dense.rc == 2);
  CHECK(dense.err.find("--enable-expert-parallel: llama-3.1-8b has no routed experts") != std::string::npos);
  CHECK(!std::filesystem::exists(dir + "/dense/report.json"));
}
