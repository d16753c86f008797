// validate's arithmetic on hand-computed cases; the linearisation that
// calibration rests on against replays; calibrate recovering terms from runs
// prefixsim generated with them; leave-one-out on a small set.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/study/calibrate.h"
#include "sim/study/observed_replay.h"
#include "sim/study/validate.h"
#include "workloads/inference_perf.h"

using namespace prefixsim;
using nlohmann::ordered_json;

namespace {

// A small observed run of `model` at `tp`: the shared-prefix workload at
// `rate` for 20 s, nothing measured yet.
ObservedRun synthetic(const std::string& id, const std::string& model, int tp, double rate, int64_t output_len,
                      bool client_side, int64_t question_len = 200) {
  ObservedRun r;
  r.id = id;
  r.path = id;
  r.form = "observed";
  r.scenario.model = model;
  r.scenario.gpu = "h100-sxm-80gb";
  r.scenario.tp = tp;
  r.scenario.max_num_seqs = 64;
  r.scenario.max_num_batched_tokens = 2048;
  r.scenario.kv_blocks = 4000;
  r.client_side = client_side;
  SharedPrefixSpec s;
  s.groups = 4;
  s.prompts_per_group = 5;
  s.system_prompt_len = 100;
  s.question_len = question_len;
  s.output_len = output_len;
  s.seed = static_cast<uint64_t>(id.size());
  r.requests = shared_prefix_requests(s, {{rate, 20.0}});
  return r;
}

// `r` with what a replay under `terms` predicts as its measurements.
ObservedRun measured_under(ObservedRun r, const StepTerms& terms) {
  StepModel m;
  m.terms = terms;
  const ReplayedRun p = replay_observed(r, m);
  r.ttft = p.ttft;
  r.e2e = p.e2e;
  r.tpot = p.tpot;
  return r;
}

ReplayedRun predicted(double ttft, double e2e, double tpot) {
  ReplayedRun p;
  p.ttft.mean = ttft;
  p.e2e.mean = e2e;
  p.tpot.mean = tpot;
  return p;
}

}  // namespace

TEST_CASE("validate's errors are (predicted - measured) / measured, medians over completed runs", "[validate]") {
  ObservedRun a = synthetic("a", "llama-3.1-8b", 1, 1.0, 8, true);
  a.ttft.mean = 100;
  a.e2e.mean = 1000;
  a.tpot.mean = 10;
  ObservedRun b = a, c = a, d = a;
  b.id = "b";
  c.id = "c";
  d.id = "d";
  d.saturated = true;
  d.saturation = "3 of 10 requests failed";
  const std::vector<ObservedRun> runs = {a, b, c, d};
  // TTFT errors +10 %, -30 %, +20 % (and +900 % for the saturated run, left out).
  const std::vector<ReplayedRun> preds = {predicted(110, 1000, 10), predicted(70, 950, 9),
                                          predicted(120, 1100, 12), predicted(1000, 5000, 50)};
  const ordered_json doc = validate_document(runs, preds, StepModel{});
  const ordered_json& ttft = doc["summary"]["metrics"]["ttft_mean"];
  CHECK(ttft["runs"] == 3);
  CHECK(ttft["median_abs_error"].get<double>() == Approx(0.2));
  CHECK(ttft["max_abs_error"].get<double>() == Approx(0.3));
  CHECK(ttft["median_error"].get<double>() == Approx(0.1));
  CHECK(doc["summary"]["metrics"]["e2e_mean"]["median_abs_error"].get<double>() == Approx(0.05));
  CHECK(doc["summary"]["completed_runs"] == 3);
  CHECK(doc["summary"]["saturated_runs"] == 1);
  // Worst run first, saturated last.
  CHECK(doc["runs"][0]["id"] == "b");
  CHECK(doc["runs"][3]["id"] == "d");
  CHECK(doc["runs"][0]["metrics"]["tpot_mean"]["error"].get<double>() == Approx(-0.1));
  // The gate: 0.2 median TTFT error passes 0.25 and fails 0.15.
  CHECK(error_gate_failures(doc, "0.25").empty());
  CHECK(error_gate_failures(doc, "ttft_mean=0.15").size() == 1);
  CHECK(error_gate_failures(doc, "e2e_mean=0.15,tpot_mean=0.5").empty());
  CHECK_THROWS_AS(error_gate_failures(doc, "ttft=0.1"), InputError);
  CHECK_THROWS_AS(error_gate_failures(doc, "ten percent"), InputError);
}

TEST_CASE("a replay's linear form predicts the replay under nearby terms", "[calibrate]") {
  const ObservedRun run = synthetic("lin", "llama-3.1-8b", 2, 4.0, 40, true);
  StepModel m;
  const ReplayedRun base = replay_observed(run, m);
  // At the terms it ran with, the linear form is the replay itself.
  CHECK(base.e2e_mean.at(m.terms) == Approx(base.e2e.mean).epsilon(1e-9));
  CHECK(base.ttft_mean.at(m.terms) == Approx(base.ttft.mean).epsilon(1e-9));
  CHECK(base.tpot_mean.at(m.terms) == Approx(base.tpot.mean).epsilon(1e-9));
  // Moved by 5 % each, the replay stays within 1 % of the form's prediction
  // (the batches shift a little as the steps' prices change).
  StepModel moved = m;
  moved.terms[kBwInv] *= 1.05;
  moved.terms[kLayerS] = 2e-5;
  moved.terms[kRequestS] *= 1.05;
  const ReplayedRun after = replay_observed(run, moved);
  CHECK(after.e2e.mean == Approx(base.e2e_mean.at(moved.terms)).epsilon(0.01));
  CHECK(after.tpot.mean == Approx(base.tpot_mean.at(moved.terms)).epsilon(0.01));
  CHECK(after.e2e.mean > base.e2e.mean);
}

TEST_CASE("calibrate recovers the terms that generated the observed runs", "[calibrate]") {
  StepTerms truth = roofline_terms();
  truth[kBwInv] = 1.4;
  truth[kKvBwInv] = 1.7;
  truth[kFlopsInv] = 2.2;
  truth[kLayerS] = 25e-6;
  truth[kStepS] = 0.6e-3;
  truth[kRequestS] = 3e-3;
  // Models of other sizes, layer counts, KV widths and prompt lengths, so
  // that each term moves the runs differently.
  std::vector<ObservedRun> runs = {
      measured_under(synthetic("r1", "llama-3.1-8b", 1, 2.0, 60, true), truth),
      measured_under(synthetic("r2", "llama-2-7b", 1, 8.0, 200, true, 1500), truth),
      measured_under(synthetic("r3", "qwen2.5-7b", 1, 1.0, 120, false, 1200), truth),
      measured_under(synthetic("r4", "llama-3.2-1b", 1, 8.0, 20, true, 1500), truth),
      measured_under(synthetic("r5", "mistral-nemo-12b", 1, 3.0, 50, false, 600), truth),
      // 80 layers: per-layer and per-step time part ways.
      measured_under(synthetic("r6", "llama-3.1-70b", 4, 1.0, 40, true, 800), truth),
  };
  CalibrateOptions o;
  o.prior_weight = 0;
  o.iterations = 30;
  o.tolerance = 1e-7;
  o.threads = 2;
  o.free_terms = {kBwInv, kKvBwInv, kFlopsInv, kLayerS, kStepS, kRequestS};
  const CalibrateResult res = calibrate_runs(runs, StepModel{}, o);
  for (int k : o.free_terms) {
    INFO(step_term_name(k));
    CHECK(res.model.terms[static_cast<size_t>(k)] == Approx(truth[static_cast<size_t>(k)]).epsilon(0.01));
  }
  // The terms not set free keep their starting values.
  CHECK(res.model.terms[kHostStepS] == roofline_terms()[kHostStepS]);
  CHECK(res.fitted["summary"]["metrics"]["e2e_mean"]["max_abs_error"].get<double>() < 0.005);
}

TEST_CASE("leave-one-out predicts each run with terms fitted on the others", "[calibrate]") {
  StepTerms truth = roofline_terms();
  truth[kBwInv] = 1.5;
  std::vector<ObservedRun> runs = {
      measured_under(synthetic("a", "llama-3.1-8b", 1, 2.0, 40, false), truth),
      measured_under(synthetic("b", "llama-2-7b", 1, 3.0, 40, false), truth),
      measured_under(synthetic("c", "qwen2.5-7b", 1, 2.0, 40, false), truth),
  };
  // A fourth run from another server: its held-out error shows it, and it is
  // not hidden by a fit that saw it.
  StepTerms other = truth;
  other[kBwInv] = 2.0;
  runs.push_back(measured_under(synthetic("odd", "llama-3.1-8b", 1, 1.0, 40, false), other));
  CalibrateOptions o;
  o.leave_one_out = true;
  o.threads = 2;
  o.free_terms = {kBwInv};
  const CalibrateResult res = calibrate_runs(runs, StepModel{}, o);
  REQUIRE(res.held_out.is_object());
  double odd_held = 0, odd_fit = 0;
  for (const ordered_json& r : res.held_out["runs"])
    if (r["id"] == "odd") odd_held = std::fabs(r["metrics"]["tpot_mean"]["error"].get<double>());
  for (const ordered_json& r : res.fitted["runs"])
    if (r["id"] == "odd") odd_fit = std::fabs(r["metrics"]["tpot_mean"]["error"].get<double>());
  CHECK(odd_held > odd_fit);
  CHECK(odd_held > 0.15);
  CHECK(res.model.known_error["basis"].get<std::string>().find("leave-one-out over 4") != std::string::npos);
}

TEST_CASE("a small robust delta fits the runs that agree and not an odd one (least absolute deviations)",
          "[calibrate]") {
  StepTerms truth = roofline_terms();
  truth[kBwInv] = 1.5;
  StepTerms other = truth;
  other[kBwInv] = 2.0;
  const std::vector<ObservedRun> runs = {
      measured_under(synthetic("a", "llama-3.1-8b", 1, 2.0, 40, false), truth),
      measured_under(synthetic("b", "llama-2-7b", 1, 3.0, 40, false), truth),
      measured_under(synthetic("c", "qwen2.5-7b", 1, 2.0, 40, false), truth),
      measured_under(synthetic("odd", "llama-3.1-8b", 1, 1.0, 40, false), other),
  };
  CalibrateOptions o;
  o.threads = 2;
  o.prior_weight = 0;
  o.iterations = 20;
  o.free_terms = {kBwInv};
  o.robust_delta = 10;  // every residual squared: least squares
  const double squares = calibrate_runs(runs, StepModel{}, o).model.terms[kBwInv];
  o.robust_delta = 0.005;
  const double robust = calibrate_runs(runs, StepModel{}, o).model.terms[kBwInv];
  // Least squares splits the difference; the robust fit follows the three.
  CHECK(squares > 1.55);
  CHECK(robust == Approx(1.5).epsilon(0.02));
}

TEST_CASE("a step model round-trips through its JSON and refuses bad terms", "[calibrate]") {
  StepModel m;
  m.terms[kLayerS] = 3e-5;
  m.provenance = "test";
  const StepModel back = parse_step_model(step_model_text(m), "m.json");
  CHECK(back.terms == m.terms);
  CHECK(back.provenance == "test");
  std::string text = step_model_text(m);
  const size_t at = text.find("\"bw_inv\": 1.25");
  REQUIRE(at != std::string::npos);
  text.replace(at, 14, "\"bw_inv\": 0.5");
  CHECK_THROWS_WITH(parse_step_model(text, "m.json"), Catch::Matchers::Contains("m.json: field 'terms.bw_inv'"));
  CHECK(is_step_model_text(step_model_text(m)));
  CHECK_FALSE(is_step_model_text("{\"schema\": \"prefixsim.profile/1\"}"));
  // A model fitted before step_s existed (no such term) reads with none.
  std::string older = step_model_text(m);
  const size_t step = older.find("    \"step_s\": 0.0,\n");
  REQUIRE(step != std::string::npos);
  older.erase(step, std::string("    \"step_s\": 0.0,\n").size());
  CHECK(parse_step_model(older, "old.json").terms == m.terms);
}

TEST_CASE("step_s is device time once per step, whatever the depth; layer_s once per layer", "[calibrate]") {
  StepTerms t = roofline_terms();
  const ModelSpec& shallow = find_model("llama-3.2-1b");  // 16 layers
  const ModelSpec& deep = find_model("llama-2-7b");       // 32 layers
  const GpuSpec& gpu = find_gpu("h100-sxm-80gb");
  for (const ModelSpec* m : {&shallow, &deep}) {
    const StepBasis b = step_basis(*m, gpu, 1);
    t[kStepS] = 0;
    t[kLayerS] = 0;
    const double base = step_model_coefficients(t, b).device_overhead_s;
    t[kStepS] = 1e-3;
    CHECK(step_model_coefficients(t, b).device_overhead_s - base == Approx(1e-3));
    t[kStepS] = 0;
    t[kLayerS] = 1e-5;
    CHECK(step_model_coefficients(t, b).device_overhead_s - base == Approx(1e-5 * m->layers));
  }
  // Its feature is 1 per step (what calibrate fits it by).
  BatchSummary one;
  one.seqs = 4;
  one.new_tokens = 4;
  one.context_tokens = 4000;
  CHECK(step_features(t, step_basis(deep, gpu, 1), one).device[kStepS] == 1);
}
