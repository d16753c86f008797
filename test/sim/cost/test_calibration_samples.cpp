// Calibration samples (prefixsim.calibration-samples/1) and `prefixsim gpu
// calibrate`: a synthetic file made from known coefficients reads, fits back
// to them and becomes a profile read_profile accepts; every kind of bad file
// is refused naming the file, the line and the field.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "sim/cost/calibration_samples.h"
#include "sim/cost/catalog.h"
#include "sim/cost/cost_model.h"
#include "sim/base/error.h"
#include "sim/cost/profile.h"
#include "test/bad_lines.h"
#include "test/sim/cost/synthetic_steps.h"
#include "test/support.h"

namespace test_calibration_samples {

using namespace prefixsim;
using Catch::Matchers::Contains;

CostCoefficients truth() { return test::known_coefficients(); }
using Step = test::SyntheticStep;
std::vector<Step> grid() { return test::synthetic_grid(); }

const std::string kHeader =
    "# prefixsim.calibration-samples/1\n"
    "# gpu.name: NVIDIA H100 80GB HBM3\n"
    "# gpu.sm_count: 132\n"
    "# gpu.sm_clock_mhz: 1980\n"
    "# gpu.mem_clock_mhz: 2619\n"
    "# gpu.driver: 580.159.04\n"
    "# gpu.cuda: 13.0\n"
    "# model: llama-3.1-8b\n"
    "# tp: 1\n"
    "# block_size: 16\n"
    "# date: 2026-11-22T18:30:00Z\n"
    "# runner: test_calibration_samples: step_seconds of known coefficients, 1 % noise\n"
    "kind,seqs,new_tokens,attn_units,context_tokens,ms\n";
constexpr long kFirstRowLine = 14;

// The grid's step times under `c`, each off by a deterministic uniform
// +-1 % (raw mt19937_64 output is the same on every platform).
std::string synthetic_file(const CostCoefficients& c) {
  std::mt19937_64 rng(7);
  std::string text = kHeader;
  for (const Step& s : grid()) {
    const double noise = 0.02 * (static_cast<double>(rng() >> 11) / 9007199254740992.0 - 0.5);
    char row[200];
    std::snprintf(row, sizeof row, "%s,%lld,%lld,%.1f,%.0f,%.6f\n", s.kind, static_cast<long long>(s.shape.seqs),
                  static_cast<long long>(s.shape.new_tokens), s.shape.attn_units, s.shape.context_tokens,
                  step_seconds(c, s.shape) * 1e3 * (1 + noise));
    text += row;
  }
  return text;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST_CASE("a synthetic samples file reads back every header field and row", "[calibration]") {
  const CalibrationSamples s = parse_calibration_samples(synthetic_file(truth()), "synthetic.csv");
  CHECK(s.gpu.name == "NVIDIA H100 80GB HBM3");
  CHECK(s.gpu.catalog.empty());
  CHECK(s.gpu.sm_count == 132);
  CHECK(s.gpu.sm_clock_mhz == 1980);
  CHECK(s.gpu.mem_clock_mhz == 2619);
  CHECK(s.gpu.driver == "580.159.04");
  CHECK(s.gpu.cuda == "13.0");
  CHECK(s.model == "llama-3.1-8b");
  CHECK(s.tp == 1);
  CHECK(s.block_size == 16);
  CHECK(s.date == "2026-11-22T18:30:00Z");
  CHECK_THAT(s.runner, Contains("1 % noise"));
  const auto steps = grid();
  REQUIRE(s.samples.size() == steps.size());
  REQUIRE(s.kinds.size() == steps.size());
  CHECK(samples_of_kind(s, StepKind::prefill).size() == 44);
  CHECK(samples_of_kind(s, StepKind::decode).size() == 36);
  CHECK(samples_of_kind(s, StepKind::mixed).size() == 9);
  for (size_t i = 0; i < steps.size(); ++i) {
    INFO("row " << i);
    CHECK(to_string(s.kinds[i]) == std::string(steps[i].kind));
    CHECK(s.samples[i].shape.seqs == steps[i].shape.seqs);
    CHECK(s.samples[i].shape.new_tokens == steps[i].shape.new_tokens);
    CHECK(s.samples[i].shape.attn_units == steps[i].shape.attn_units);
    CHECK(s.samples[i].shape.context_tokens == steps[i].shape.context_tokens);
    CHECK(s.samples[i].seconds == Approx(step_seconds(truth(), steps[i].shape)).epsilon(0.0101));
  }
  // CRLF line ends and trailing blank lines are fine.
  std::string crlf;
  for (char ch : synthetic_file(truth()) + "\n  \n") crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  CHECK(parse_calibration_samples(crlf, "crlf.csv").samples.size() == steps.size());
}

TEST_CASE("the samples writer gives the header above byte for byte, and rows that read back", "[calibration]") {
  SamplesHeader h;
  h.gpu_name = "NVIDIA H100 80GB HBM3";
  h.sm_count = 132;
  h.sm_clock_mhz = "1980";
  h.mem_clock_mhz = "2619";
  h.driver = "580.159.04";
  h.cuda = "13.0";
  h.model = "llama-3.1-8b";
  h.block_size = 16;
  h.date = "2026-11-22T18:30:00Z";
  h.runner = "test_calibration_samples: step_seconds of known coefficients, 1 % noise";
  CHECK(samples_header_text(h) == kHeader);
  BatchSummary prefill, decode, mixed;
  prefill.add(512, 0);
  decode.add(1, 700);
  decode.add(1, 33);
  mixed.add(1, 700);
  mixed.add(64, 128);
  CHECK(step_kind_of(prefill) == StepKind::prefill);
  CHECK(step_kind_of(decode) == StepKind::decode);
  CHECK(step_kind_of(mixed) == StepKind::mixed);
  CHECK(sample_row_text("prefill", prefill, 12.34567) == "prefill,1,512,131072.0,512,12.3457\n");
  const std::string text = samples_header_text(h) + sample_row_text(to_string(step_kind_of(prefill)), prefill, 12.5) +
                           sample_row_text(to_string(step_kind_of(decode)), decode, 3.25) +
                           sample_row_text(to_string(step_kind_of(mixed)), mixed, 7.0);
  const CalibrationSamples cs = parse_calibration_samples(text, "written.csv");
  REQUIRE(cs.samples.size() == 3);
  CHECK(cs.kinds == std::vector<StepKind>{StepKind::prefill, StepKind::decode, StepKind::mixed});
  CHECK(cs.samples[1].shape.seqs == 2);
  CHECK(cs.samples[1].shape.attn_units == Approx(decode.attn_units));
  CHECK(cs.samples[2].shape.context_tokens == Approx(mixed.context_tokens));
  CHECK(cs.samples[2].seconds == Approx(0.007));
  // Without a runner the line is left out (it is optional).
  h.runner.clear();
  CHECK(samples_header_text(h).find("# runner:") == std::string::npos);
}

TEST_CASE("fitting a synthetic samples file recovers the known coefficients", "[calibration]") {
  const CostCoefficients want = truth();
  const CalibrationSamples s = parse_calibration_samples(synthetic_file(want), "dir/synthetic.csv");
  const Calibration cal = calibrate(s, "dir/synthetic.csv", "h100-sxm-80gb");
  const CostCoefficients& got = cal.profile.coefficients;
  CHECK(got.linear_s_per_token == Approx(want.linear_s_per_token).epsilon(0.02));
  CHECK(got.weight_floor_s == Approx(want.weight_floor_s).epsilon(0.03));
  CHECK(got.attn_s_per_unit == Approx(want.attn_s_per_unit).epsilon(0.03));
  CHECK(got.kv_read_s_per_token == Approx(want.kv_read_s_per_token).epsilon(0.03));
  CHECK(got.overhead_s == Approx(want.overhead_s).epsilon(0.15));
  CHECK(got.allreduce_s_per_token == 0);
  CHECK(cal.profile.fit.mape_held_out < 0.01);  // E|U(-1 %, 1 %)| = 0.5 %
  CHECK(cal.profile.fit.held_out_samples == static_cast<int64_t>(grid().size() / 5));

  const Profile& p = cal.profile;
  CHECK(p.gpu.catalog == "h100-sxm-80gb");
  CHECK(p.gpu.name == s.gpu.name);
  CHECK(p.model == "llama-3.1-8b");
  CHECK(p.date == s.date);
  CHECK_THAT(p.provenance, Contains("synthetic.csv") && !Contains("dir/") && Contains("44 prefill") &&
                               Contains("36 decode") && Contains("9 mixed") && Contains("1 % noise") &&
                               Contains("prefixsim gpu calibrate"));
  // What calibrate() builds is a profile write_profile takes and read_profile gives back.
  const std::string path = test::temp_dir("calibration_fit") + "/p.json";
  write_profile(path, p);
  CHECK(read_profile(path) == p);
}

TEST_CASE("a TP profile timed on one shard gets the roofline's all-reduce; one timed whole does not",
          "[calibration]") {
  // llama-3.1-70b at TP 4: the measured (synthetic) times are one shard's.
  std::string text = test::with_line(synthetic_file(truth()), 8, "# model: llama-3.1-70b");
  text = test::with_line(text, 9, "# tp: 4");
  const CalibrationSamples one = parse_calibration_samples(text, "one.csv");
  CHECK(one.shards_timed == 1);  // the default: what prefixsim-gpu-bench does
  const Calibration cal = calibrate(one, "one.csv", "h100-sxm-80gb");
  CostCoefficients comm;  // what the roofline charges for TP 4's all-reduces, alone
  add_tensor_parallel_comm(comm, find_model("llama-3.1-70b"), find_gpu("h100-sxm-80gb"), 4);
  REQUIRE(comm.allreduce_s_per_token > 0);
  CHECK(cal.fit.coefficients.allreduce_s_per_token == 0);
  CHECK(cal.profile.coefficients.allreduce_s_per_token == comm.allreduce_s_per_token);
  CHECK(cal.profile.coefficients.overhead_s == Approx(cal.fit.coefficients.overhead_s + comm.overhead_s));
  CHECK(cal.profile.coefficients.linear_s_per_token == cal.fit.coefficients.linear_s_per_token);
  CHECK_THAT(cal.profile.provenance, Contains("all-reduce not timed (one of 4 shards timed alone)"));

  // All four shards timed together: the all-reduce is in the times already.
  text = test::with_line(text, 12, "# shards_timed: 4");
  const CalibrationSamples all = parse_calibration_samples(text, "all.csv");
  CHECK(all.shards_timed == 4);
  const Calibration whole = calibrate(all, "all.csv", "h100-sxm-80gb");
  CHECK(whole.profile.coefficients == whole.fit.coefficients);
  CHECK_THAT(whole.profile.provenance, !Contains("all-reduce"));
}

TEST_CASE("prefixsim gpu calibrate writes the fitted profile and summarises the fit", "[calibration][cli]") {
  const std::string dir = test::temp_dir("calibration_cli");
  write(dir + "/samples.csv", synthetic_file(truth()));
  const CalibrationSamples s = read_calibration_samples(dir + "/samples.csv");
  const Calibration want = calibrate(s, dir + "/samples.csv", "h100-sxm-80gb");

  const auto r = test::run_cli({"gpu", "calibrate", "--samples", dir + "/samples.csv", "--out", dir + "/p.json"});
  INFO("stderr: " << r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("44 prefill, 36 decode, 9 mixed steps") && Contains("MAPE train") &&
                        Contains("held-out") &&
                        Contains("MAPE per kind") && Contains("weight floor") && Contains("wrote " + dir + "/p.json"));
  const Profile got = read_profile(dir + "/p.json");
  CHECK(got.coefficients == want.profile.coefficients);  // the same fit, bit for bit
  CHECK(got == want.profile);

  const auto js = test::run_cli({"gpu", "calibrate", "--samples", dir + "/samples.csv", "--out", dir + "/q.json",
                                 "--gpu", "h200-141gb", "--held-out-every", "0", "--json"});
  REQUIRE(js.rc == 0);
  const Profile q = parse_profile(js.out, "stdout");
  CHECK(q.gpu.catalog == "h200-141gb");
  CHECK(q.fit.held_out_samples == 0);
  CHECK(js.out == test::read_file(dir + "/q.json"));

  // Not an H100 and no --gpu: which catalog entry is a guess, so it is asked for.
  std::string a100 = synthetic_file(truth());
  a100.replace(a100.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA A100-SXM4-80GB");
  write(dir + "/a100.csv", a100);
  const auto no_gpu = test::run_cli({"gpu", "calibrate", "--samples", dir + "/a100.csv", "--out", dir + "/a.json"});
  CHECK(no_gpu.rc == 2);
  CHECK_THAT(no_gpu.err, Contains("--gpu") && Contains("a100-80gb"));
  CHECK(!std::filesystem::exists(dir + "/a.json"));

  CHECK(test::run_cli({"gpu"}).rc == 2);
  const auto help = test::run_cli({"gpu", "calibrate", "--help"});
  CHECK(help.rc == 0);
  CHECK_THAT(help.out, Contains("prefixsim-gpu-bench --calibrate FILE") && Contains("-Dcuda=enabled"));
  const auto unknown = test::run_cli({"gpu", "measure"});
  CHECK(unknown.rc == 2);
  CHECK_THAT(unknown.err, Contains("unknown subcommand 'measure'"));
}

TEST_CASE("bad samples files are refused naming the file, the line and the field", "[calibration]") {
  const std::string good = synthetic_file(truth());
  const long row = kFirstRowLine;
  const std::vector<test::BadLine> cases = {
      {"missing first line", 1, std::nullopt, "s.csv:1: field 'schema'", "prefixsim.calibration-samples/1"},
      {"another schema", 1, "# prefixsim.calibration-samples/2", "s.csv:1: field 'schema'", "must be"},
      {"unknown header key", 2, "# gpu.nmae: NVIDIA H100 80GB HBM3", "s.csv:2: field 'gpu.nmae'",
       "not a samples header key"},
      {"missing required key", 6, std::nullopt, "s.csv:12: field 'gpu.driver'", "missing"},
      {"header line without a colon", 12, "# a plain comment", "s.csv:12: header line", "# key: value"},
      {"key given twice", 12, "# tp: 1", "s.csv:12: field 'tp'", "given twice (first on line 9)"},
      {"empty value", 7, "# gpu.cuda:", "s.csv:7: field 'gpu.cuda'", "must not be empty"},
      // Found by fuzz_calibration_samples: the runner text goes into the
      // profile's JSON, where invalid UTF-8 made the writer throw (exit 3).
      {"runner not UTF-8", 12, "# runner: fro\xff\xff end", "s.csv:12: field 'runner'", "valid UTF-8"},
      {"sm_count not an integer", 3, "# gpu.sm_count: 13.5", "s.csv:3: field 'gpu.sm_count'", "not '13.5'"},
      {"negative clock", 4, "# gpu.sm_clock_mhz: -1", "s.csv:4: field 'gpu.sm_clock_mhz'", "not '-1'"},
      {"tp 0", 9, "# tp: 0", "s.csv:9: field 'tp'", "not '0'"},
      {"unknown model", 8, "# model: llama-9", "s.csv:8: field 'model'", "unknown model 'llama-9'"},
      {"date not ISO", 11, "# date: yesterday", "s.csv:11: field 'date'", "ISO 8601"},
      {"bad CSV header", 13, "kind,seqs,new_tokens,attn_units,ms", "s.csv:13:", "CSV header"},
      {"kind foo", row, "foo,1,16,128,16,2.0", "s.csv:14: field 'kind'", "not 'foo'"},
      {"ms -3", row, "prefill,1,16,128,16,-3", "s.csv:14: field 'ms'", "must be a positive number, not '-3'"},
      {"ms nan", row, "prefill,1,16,128,16,nan", "s.csv:14: field 'ms'", "not 'nan'"},
      {"ms 0", row, "prefill,1,16,128,16,0", "s.csv:14: field 'ms'", "not '0'"},
      {"ms overflowing a double", row, "prefill,1,16,128,16,1e999", "s.csv:14: field 'ms'", "not '1e999'"},
      {"seqs 0", row, "prefill,0,16,128,16,2.0", "s.csv:14: field 'seqs'", "must be a positive integer, not '0'"},
      {"seqs fractional", row, "prefill,1.5,16,128,16,2.0", "s.csv:14: field 'seqs'", "not '1.5'"},
      {"short row", row, "prefill,1,16,128", "s.csv:14: field 'context_tokens'", "missing"},
      {"long row", row, "prefill,1,16,128,16,2.0,7", "s.csv:14:", "7 fields"},
      {"non-numeric field", row, "prefill,1,16,lots,16,2.0", "s.csv:14: field 'attn_units'", "not 'lots'"},
      {"empty field", row, "prefill,1,,128,16,2.0", "s.csv:14: field 'new_tokens'", "not ''"},
      {"negative context", row, "prefill,1,16,128,-16,2.0", "s.csv:14: field 'context_tokens'", "non-negative"},
      {"context counting only cached tokens", row, "prefill,1,16,128,0,2.0", "s.csv:14: field 'context_tokens'",
       "at least new_tokens"},
      {"a row after a blank line", row + 1, "", "s.csv:16:", "blank line"},
      {"shards_timed neither 1 nor tp", 12, "# shards_timed: 2", "s.csv:12: field 'shards_timed'",
       "must be 1 (one shard timed alone) or tp (1), not 2"},
      {"shards_timed 0", 12, "# shards_timed: 0", "s.csv:12: field 'shards_timed'", "not '0'"},
  };
  test::check_bad_lines(good, "s.csv", cases, parse_calibration_samples);
  CHECK_THROWS_WITH(parse_calibration_samples("", "s.csv"), Contains("s.csv:1: field 'schema'"));
  CHECK_THROWS_WITH(parse_calibration_samples(kHeader.substr(0, kHeader.rfind("kind")), "s.csv"),
                    Contains("s.csv:13:") && Contains("missing the CSV header"));
  CHECK_THROWS_WITH(parse_calibration_samples(kHeader + "\n", "s.csv"),
                    Contains("s.csv:14:") && Contains("no samples"));
  CHECK_THROWS_WITH(read_calibration_samples("/nonexistent/s.csv"), Contains("/nonexistent/s.csv"));
  // A file that reads but has too few steps to fit: the fit's refusal names the file.
  const CalibrationSamples s = parse_calibration_samples(kHeader + "prefill,1,16,128,16,2.0\n", "few.csv");
  CHECK_THROWS_WITH(calibrate(s, "few.csv", "h100-sxm-80gb"),
                    Contains("few.csv: fit:") && Contains("training samples"));
  CHECK_THROWS_WITH(calibrate(s, "f\xffw.csv", "h100-sxm-80gb"), Contains("--samples") && Contains("UTF-8"));
}

TEST_CASE("validate_profile measures a profile's error, bias and summed time on measured steps", "[calibration]") {
  const CalibrationSamples s = parse_calibration_samples(synthetic_file(truth()), "s.csv");
  Profile p = calibrate(s, "s.csv", "h100-sxm-80gb").profile;
  p.coefficients = truth();  // the coefficients the times came from, +-1 % noise
  const Validation exact = validate_profile(p, s);
  CHECK(exact.all.steps == grid().size());
  CHECK(exact.all.mape < 0.01);
  CHECK(exact.all.max_ape <= 0.0101);
  CHECK(std::abs(exact.all.bias) < 0.005);
  CHECK(exact.all.predicted_s == Approx(exact.all.measured_s).epsilon(0.01));
  CHECK(exact.by_kind[static_cast<size_t>(StepKind::prefill)].steps == 44);
  CHECK(exact.by_kind[static_cast<size_t>(StepKind::decode)].steps == 36);
  CHECK(exact.by_kind[static_cast<size_t>(StepKind::mixed)].steps == 9);

  // Every coefficient 20 % high: every step over-predicted by ~20 %.
  CostCoefficients& c = p.coefficients;
  for (double* x : {&c.overhead_s, &c.linear_s_per_token, &c.weight_floor_s, &c.attn_s_per_unit,
                    &c.kv_read_s_per_token, &c.per_seq_s})
    *x *= 1.2;
  const Validation high = validate_profile(p, s);
  CHECK(high.all.bias == Approx(0.2).margin(0.012));
  CHECK(high.all.mape == Approx(0.2).margin(0.012));
  CHECK(high.all.predicted_s == Approx(1.2 * high.all.measured_s).epsilon(0.012));

  p.model = "mistral-7b";
  CHECK_THROWS_WITH(validate_profile(p, s), Contains("--profile") && Contains("mistral-7b") && Contains("llama-3.1-8b"));
}

TEST_CASE("prefixsim gpu validate prints the errors and gates on --max-mape", "[calibration][cli]") {
  const std::string dir = test::temp_dir("validate_cli");
  write(dir + "/samples.csv", synthetic_file(truth()));
  Profile p = calibrate(read_calibration_samples(dir + "/samples.csv"), "samples.csv", "h100-sxm-80gb").profile;
  p.coefficients = truth();
  p.coefficients.linear_s_per_token *= 1.5;  // a profile that is off on prefill
  write_profile(dir + "/p.json", p);

  const auto r = test::run_cli({"gpu", "validate", "--samples", dir + "/samples.csv", "--profile", dir + "/p.json"});
  INFO("stderr: " << r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("89 steps: MAPE") && Contains("prefill 44 steps") && Contains("bias +") &&
                        Contains("s predicted vs"));
  const auto gate = test::run_cli(
      {"gpu", "validate", "--samples", dir + "/samples.csv", "--profile", dir + "/p.json", "--max-mape", "1"});
  CHECK(gate.rc == 1);
  CHECK_THAT(gate.err, Contains("above --max-mape 1"));
  const auto j = test::run_cli(
      {"gpu", "validate", "--samples", dir + "/samples.csv", "--profile", dir + "/p.json", "--json", "--max-mape", "90"});
  REQUIRE(j.rc == 0);
  const auto json = nlohmann::json::parse(j.out);
  CHECK(json["all"]["steps"] == 89);
  CHECK(json["by_kind"]["prefill"]["bias"].get<double>() > 0.05);
  CHECK(json["by_kind"]["decode"]["mape"].get<double>() < json["by_kind"]["prefill"]["mape"].get<double>());
  // builtin is the default profile: the shipped one for llama-3.1-8b on the H100.
  CHECK(test::run_cli({"gpu", "validate", "--samples", dir + "/samples.csv"}).rc == 0);
  const auto bad = test::run_cli({"gpu", "validate", "--samples", dir + "/nosuch.csv"});
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Contains("nosuch.csv"));
}

}  // namespace test_calibration_samples
