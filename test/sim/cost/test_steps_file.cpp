// Engine steps files (prefixsim.steps/1): what StepsWriter writes reads back
// step for step, bad files are refused naming file, line and field, and
// `replay --steps-out` records the scheduler's real batches (every K-th with
// --steps-every), the same bytes on every run.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "sim/base/error.h"
#include "sim/cost/steps_file.h"
#include "test/bad_lines.h"
#include "test/support.h"

using namespace prefixsim;
using Catch::Matchers::Contains;

namespace {

const std::string kGood =
    "# prefixsim.steps/1\n"
    "# model: llama-3.1-8b\n"
    "# tp: 1\n"
    "# block_size: 16\n"
    "# source: hand-written\n"
    "step,new_tokens,cached_tokens\n"
    "1,512,0\n"
    "1,1,1024\n"
    "3,1,1025\n";

}  // namespace

TEST_CASE("a steps file written by StepsWriter reads back step for step", "[steps]") {
  const std::string path = test::temp_dir("steps_rt") + "/steps.csv";
  std::vector<BlockId> table;
  Batch a, b;
  a.seqs = {{512, 0, table}, {1, 1024, table}};
  b.seqs = {{1, 1025, table}};
  {
    StepsWriter w(path, "llama-3.1-70b", 4, 32, "test run");
    w.add(1, a);
    CHECK_FALSE(std::filesystem::exists(path));  // nothing at the path before finish()
    w.add(7, b);
    w.finish();
    CHECK(w.steps_written() == 2);
  }
  const StepsFile f = read_steps_file(path);
  CHECK(f.model == "llama-3.1-70b");
  CHECK(f.tp == 4);
  CHECK(f.block_size == 32);
  CHECK(f.source == "test run");
  REQUIRE(f.steps.size() == 2);
  CHECK(f.steps[0].step == 1);
  CHECK(f.steps[0].seqs == std::vector<std::pair<int64_t, int64_t>>{{512, 0}, {1, 1024}});
  CHECK(f.steps[1].step == 7);
  CHECK(f.steps[1].seqs == std::vector<std::pair<int64_t, int64_t>>{{1, 1025}});
  CHECK(parse_steps_file(kGood, "g.csv").steps.size() == 2);
}

TEST_CASE("bad steps files are refused naming the file, the line and the field", "[steps]") {
  const std::vector<test::BadLine> cases = {
      {"no schema line", 1, std::nullopt, "s.csv:1: field 'schema'", "prefixsim.steps/1"},
      {"unknown key", 5, "# sorce: x", "s.csv:5: field 'sorce'", "not a steps header key"},
      {"unknown model", 2, "# model: llama-9", "s.csv:2: field 'model'", "unknown model 'llama-9'"},
      {"tp 0", 3, "# tp: 0", "s.csv:3: field 'tp'", "not '0'"},
      {"missing block size", 4, std::nullopt, "s.csv:5: field 'block_size'", "missing"},
      {"header without colon", 5, "# a comment", "s.csv:5:", "# key: value"},
      {"bad CSV header", 6, "step,n,c", "s.csv:6:", "CSV header"},
      {"two fields", 7, "1,512", "s.csv:7:", "3 fields"},
      {"four fields", 7, "1,512,0,9", "s.csv:7:", "3 fields"},
      {"step 0", 7, "0,512,0", "s.csv:7: field 'step'", "not '0'"},
      {"no new tokens", 7, "1,0,0", "s.csv:7: field 'new_tokens'", "not '0'"},
      {"negative cached", 7, "1,512,-1", "s.csv:7: field 'cached_tokens'", "not '-1'"},
      {"steps going back", 9, "0,1,1025", "s.csv:9: field 'step'", "not '0'"},
      {"row after a blank line", 8, "", "s.csv:9:", "blank line"},
  };
  test::check_bad_lines(kGood, "s.csv", cases, parse_steps_file);
  CHECK_THROWS_WITH(parse_steps_file(kGood + "2,1,1025\n", "s.csv"), Contains("s.csv:10: field 'step'") &&
                                                                        Contains("ascend (2 after 3)"));
  CHECK_THROWS_WITH(parse_steps_file(kGood.substr(0, kGood.find("1,512")), "s.csv"), Contains("no steps"));
  CHECK_THROWS_WITH(read_steps_file("/nonexistent/s.csv"), Contains("/nonexistent/s.csv"));
}

TEST_CASE("replay --steps-out records the scheduler's batches, deterministically", "[steps][cli]") {
  const std::string dir = test::temp_dir("steps_cli");
  const auto r = test::run_cli({"replay", "--requests", "300", "--steps-out", dir + "/all.csv", "--out", dir + "/o1",
                                "--quiet"});
  INFO("stderr: " << r.err);
  REQUIRE(r.rc == 0);
  const auto report = nlohmann::json::parse(test::read_file(dir + "/o1/report.json"));
  const StepsFile all = read_steps_file(dir + "/all.csv");
  CHECK(all.model == "llama-3.1-8b");
  CHECK(all.block_size == 16);
  CHECK_THAT(all.source, Contains("prefixsim replay workload") && Contains("policy lru"));
  REQUIRE(all.steps.size() == report["engine"]["steps"].get<size_t>());
  for (size_t i = 0; i < all.steps.size(); ++i) {
    const StepShape& st = all.steps[i];
    CHECK(st.step == i + 1);
    int64_t tokens = 0;
    for (const auto& [n, c] : st.seqs) tokens += n;
    CHECK(tokens <= 8192);        // the scheduler's token budget
    CHECK(st.seqs.size() <= 256);  // max_num_seqs
  }

  const auto sampled = test::run_cli({"replay", "--requests", "300", "--steps-out", dir + "/every10.csv",
                                      "--steps-every", "10", "--out", dir + "/o2", "--quiet"});
  REQUIRE(sampled.rc == 0);
  const StepsFile every = read_steps_file(dir + "/every10.csv");
  REQUIRE(every.steps.size() == (all.steps.size() + 9) / 10);
  for (size_t i = 0; i < every.steps.size(); ++i) {
    CHECK(every.steps[i].step == 10 * i + 1);
    CHECK(every.steps[i].seqs == all.steps[10 * i].seqs);
  }
  // Same inputs, same bytes.
  REQUIRE(test::run_cli({"replay", "--requests", "300", "--steps-out", dir + "/again.csv", "--out", dir + "/o3",
                         "--quiet"}).rc == 0);
  CHECK(test::read_file(dir + "/again.csv") == test::read_file(dir + "/all.csv"));
  // Inside an --out that does not exist yet: the run makes it.
  REQUIRE(test::run_cli({"replay", "--requests", "300", "--steps-out", dir + "/o5/steps.csv", "--out", dir + "/o5",
                         "--quiet"}).rc == 0);
  CHECK(test::read_file(dir + "/o5/steps.csv") == test::read_file(dir + "/all.csv"));

  const auto cache = test::run_cli({"replay", "--requests", "30", "--mode", "cache", "--steps-out", dir + "/c.csv",
                                    "--out", dir + "/o4"});
  CHECK(cache.rc == 2);
  CHECK_THAT(cache.err, Contains("--steps-out") && Contains("engine"));
  CHECK_FALSE(std::filesystem::exists(dir + "/c.csv"));
}
