// Calibrated profiles: the format round-trips, and every kind of bad profile
// is refused with the file, the line and the field named (exit 2 via the CLI).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "sim/base/error.h"
#include "sim/cost/profile.h"
#include "test/support.h"

using namespace prefixsim;
using Catch::Matchers::Contains;

namespace {

Profile sample_profile() {
  Profile p;
  p.gpu = {"NVIDIA H100 80GB HBM3", "h100-sxm-80gb", 132, 1980, 2619, "550.54.15", "12.4"};
  p.model = "llama-3.1-8b";
  p.tp = 1;
  p.date = "2026-11-22T04:00:00Z";
  p.coefficients = {1.234e-3, 2.3456789e-5, 6.1e-3, 1.1e-9, 4.9e-8, 1.7e-6, 0};
  p.fit = {"weighted NNLS", 160, 40, 0.021, 0.0314159, 0.0876};
  p.provenance = "prefixsim gpu calibrate --model llama-3.1-8b (test)";
  return p;
}

void replace(std::string& s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  s.replace(at, from.size(), to);
}

// The line (1-based) where `needle` first appears in `text`.
long line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  return 1 + static_cast<long>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

}  // namespace

TEST_CASE("a profile written and read back is equal, byte for byte on rewrite", "[profile]") {
  const std::string dir = test::temp_dir("profile_roundtrip");
  const std::string path = dir + "/p.json";
  const Profile p = sample_profile();
  write_profile(path, p);
  const Profile q = read_profile(path);
  CHECK(q == p);
  CHECK(q.coefficients.linear_s_per_token == p.coefficients.linear_s_per_token);  // exact doubles
  write_profile(dir + "/q.json", q);
  CHECK(test::read_file(path) == test::read_file(dir + "/q.json"));
  CHECK(to_json(q)["schema"] == "prefixsim.profile/1");
  CHECK(!std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("a MoE profile keeps its expert terms; a dense one has none in its JSON", "[profile][moe]") {
  Profile p = sample_profile();
  CHECK(!to_json(p)["coefficients"].contains("expert_read_s"));
  p.model = "qwen3-30b-a3b";
  p.coefficients.expert_read_s = 0.0216;
  p.coefficients.expert_miss = 0.9375;
  const std::string text = profile_text(p);
  CHECK(parse_profile(text, "moe.json") == p);
  std::string half = text;
  replace(half, "\"expert_miss\": 0.9375", "\"expert_missing\": 0.9375");
  CHECK_THROWS_WITH(parse_profile(half, "moe.json"), Contains("coefficients.expert_missing"));
  std::string alone = text;
  replace(alone, ",\n    \"expert_miss\": 0.9375", "");
  CHECK_THROWS_WITH(parse_profile(alone, "moe.json"), Contains("'expert_read_s' and 'expert_miss'"));
  std::string over = text;
  replace(over, "\"expert_miss\": 0.9375", "\"expert_miss\": 1.5");
  CHECK_THROWS_WITH(parse_profile(over, "moe.json"), Contains("coefficients.expert_miss"));
}

TEST_CASE("bad profiles are refused naming the file, the line and the field", "[profile]") {
  const std::string good = profile_text(sample_profile());
  CHECK(parse_profile(good, "p.json") == sample_profile());

  struct Case {
    std::string from, to, field, msg;
  };
  const std::vector<Case> cases = {
      {"\"attn_s_per_unit\": 1.1e-09", "\"attn_s_per_unit\": -1.1e-09", "coefficients.attn_s_per_unit", "must be in"},
      {"\"overhead_s\": 0.001234", "\"overhead_s\": \"fast\"", "coefficients.overhead_s", "must be a number"},
      {"\"per_seq_s\": 1.7e-06,", "", "coefficients.per_seq_s", "is missing"},
      {"\"sm_count\": 132", "\"sm_count\": 13.5", "gpu.sm_count", "must be an integer"},
      {"\"tp\": 1", "\"tp\": 0", "tp", "must be in"},
      {"\"schema\": \"prefixsim.profile/1\"", "\"schema\": \"prefixsim.profile/2\"", "schema", "must be"},
      {"\"date\": \"2026-11-22T04:00:00Z\"", "\"date\": \"yesterday\"", "date", "ISO 8601"},
      {"\"mape_held_out\": 0.0314159", "\"mape_held_out\": null", "fit.mape_held_out", "must be a number"},
      {"\"kv_read_s_per_token\"", "\"kv_read_per_token\"", "coefficients.kv_read_per_token", "not a profile field"},
      {"\"model\": \"llama-3.1-8b\"", "\"model\": \"\"", "model", "must not be empty"},
  };
  for (const Case& c : cases) {
    INFO(c.field);
    std::string text = good;
    replace(text, c.from, c.to);
    const std::string leaf = c.field.substr(c.field.rfind('.') + 1);
    // A missing field has no line of its own: the error points at its parent.
    const std::string anchor = c.msg == "is missing" ? "\"coefficients\"" : "\"" + leaf + "\"";
    const std::string where = "p.json:" + std::to_string(line_of(text, anchor)) + ": field '" + c.field + "'";
    CHECK_THROWS_AS(parse_profile(text, "p.json"), InputError);
    CHECK_THROWS_WITH(parse_profile(text, "p.json"), Contains(where) && Contains(c.msg));
  }
  CHECK_THROWS_WITH(parse_profile("{\"schema\": \"prefixsim.profile/1\",\n \"gpu\": [1,2,\n", "p.json"),
                    Contains("p.json:3:") && Contains("invalid JSON"));
  CHECK_THROWS_WITH(read_profile("/nonexistent/profile.json"), Contains("/nonexistent/profile.json"));
  Profile zero = sample_profile();
  zero.coefficients = {};
  CHECK_THROWS_WITH(write_profile(test::temp_dir("profile_zero") + "/z.json", zero), Contains("'coefficients'"));
}

TEST_CASE("prefixsim catalog --profile shows a good profile and exits 2 on a bad one", "[profile][cli]") {
  const std::string dir = test::temp_dir("profile_cli");
  write_profile(dir + "/good.json", sample_profile());
  const auto ok = test::run_cli({"catalog", "--profile", dir + "/good.json"});
  CHECK(ok.rc == 0);
  CHECK_THAT(ok.out, Contains("llama-3.1-8b") && Contains("h100-sxm-80gb") && Contains("3.14"));

  std::string text = profile_text(sample_profile());
  replace(text, "\"weight_floor_s\": 0.0061", "\"weight_floor_s\": -1");
  {
    std::ofstream(dir + "/bad.json") << text;
  }
  const auto bad = test::run_cli({"catalog", "--profile", dir + "/bad.json"});
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Contains("bad.json:" + std::to_string(line_of(text, "\"weight_floor_s\""))) &&
                          Contains("coefficients.weight_floor_s"));
  CHECK(bad.out.empty());
}
