// `prefixsim validate` and `prefixsim calibrate` end to end on the fixtures
// (test/data/observed): outputs written together, the gate's exit code, a
// calibrated step model that replay takes with --profile, bad runs exit 2.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

TEST_CASE("validate writes its three documents and gates on the median error", "[cli][validate]") {
  const std::string dir = temp_dir("validate");
  const std::string blis = data_path("observed/blis-small.json"), lss = data_path("observed/llmservingsim-small");
  auto r = run_cli({"validate", blis, lss, "--out", dir + "/v"});
  INFO(r.err << r.out);
  REQUIRE(r.rc == 0);
  const json doc = json::parse(read_file(dir + "/v/validate.json"));
  CHECK(doc["schema"] == "prefixsim.validate/1");
  REQUIRE(doc["runs"].size() == 2);
  CHECK(doc["summary"]["completed_runs"] == 2);
  for (const json& run : doc["runs"]) {
    const json& m = run["metrics"]["ttft_mean"];
    CHECK(m["error"].get<double>() == Approx((m["predicted"].get<double>() - m["measured"].get<double>()) /
                                             m["measured"].get<double>()));
  }
  CHECK(read_file(dir + "/v/validate.md").find("| ttft_mean | 2 |") != std::string::npos);
  CHECK(read_file(dir + "/v/validate.html").find("chart-2") != std::string::npos);
  CHECK(r.out.find("2 completed runs") != std::string::npos);
  // A gate no model meets on these made-up measurements: exit 1, outputs still written.
  auto gated = run_cli({"validate", blis, lss, "--max-error", "0.000001", "--out", dir + "/g"});
  CHECK(gated.rc == 1);
  CHECK(gated.out.find("max-error exceeded") != std::string::npos);
  // Same inputs, same bytes.
  REQUIRE(run_cli({"validate", blis, lss, "--out", dir + "/again", "--quiet", "--threads", "1"}).rc == 0);
  CHECK(read_file(dir + "/again/validate.json") == read_file(dir + "/v/validate.json"));
}

TEST_CASE("calibrate writes a step model that replay and validate take as --profile", "[cli][validate]") {
  const std::string dir = temp_dir("calibrate");
  const std::string blis = data_path("observed/blis-small.json"), lss = data_path("observed/llmservingsim-small");
  auto r = run_cli({"calibrate", "--observed", blis, lss, "--out", dir + "/sm.json", "--report", dir + "/rep",
                    "--iterations", "3"});
  INFO(r.err << r.out);
  REQUIRE(r.rc == 0);
  const json sm = json::parse(read_file(dir + "/sm.json"));
  CHECK(sm["schema"] == "prefixsim.step_model/1");
  CHECK(sm["known_error"]["validated"] == true);
  CHECK(json::parse(read_file(dir + "/rep/calibrate.json"))["rounds"].size() >= 1);
  auto rep = run_cli({"replay", "--requests", "50", "--profile", dir + "/sm.json", "--out", dir + "/replay", "--quiet"});
  INFO(rep.err);
  REQUIRE(rep.rc == 0);
  const json report = json::parse(read_file(dir + "/replay/report.json"));
  CHECK(report["scenario"]["cost_model"]["source"] == "step_model");
  CHECK(report["scenario"]["cost_model"]["step_model"]["terms"] == sm["terms"]);
  CHECK(run_cli({"validate", blis, "--profile", dir + "/sm.json", "--out", dir + "/v2", "--quiet"}).rc == 0);
}

TEST_CASE("validate refuses bad runs with exit 2 naming file and field, writing nothing", "[cli][validate]") {
  const std::string dir = temp_dir("validate_bad");
  std::string text = read_file(data_path("observed/blis-small.json"));
  text.replace(text.find("\"max_num_batched_tokens\": 1024"), 30, "\"max_num_batched_tokens\": -1");
  const std::string bad = write_text_file(dir, "bad.json", text);
  auto r = run_cli({"validate", data_path("observed/blis-small.json"), bad, "--out", dir + "/v"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("bad.json: field 'vllm_args.max_num_batched_tokens'") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/v/validate.json"));
  CHECK(run_cli({"validate", "--out", dir + "/v"}).rc == 2);
  CHECK(run_cli({"calibrate", "--observed", bad, "--out", dir + "/sm.json"}).rc == 2);
  CHECK(run_cli({"replay", "--requests", "5", "--profile", bad, "--out", dir + "/r"}).rc == 2);
}
