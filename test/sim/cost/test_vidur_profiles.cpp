// The Vidur operator-profile reader and fit (sim/cost/vidur_profiles.h) on a
// hand-made fixture in Vidur's mlp.csv format (test/data/vidur/README.md):
// every operator is max(floor, k * tokens), breakpoint 64 tokens.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "prefixsim_config.h"
#include "sim/base/error.h"
#include "sim/cost/catalog.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/vidur_profiles.h"
#include "test/support.h"

using namespace prefixsim;
using Catch::Matchers::Contains;

namespace {
const std::string kFixture = "vidur/compute/h100/meta-llama/Llama-3-8B-fixture/mlp.csv";
}

TEST_CASE("the Vidur reader takes operators, shape and rows from an mlp.csv", "[vidur]") {
  const VidurMlpTable t = read_vidur_mlp(test::data_path(kFixture));
  CHECK(t.operators == std::vector<std::string>{"emb", "input_layernorm", "attn_pre_proj", "mlp_up_proj", "add"});
  CHECK(t.n_head == 32);
  CHECK(t.n_kv_head == 8);
  CHECK(t.n_embd == 4096);
  CHECK(t.n_expanded_embd == 14336);
  CHECK(t.vocab_size == 128256);
  CHECK(t.gated_mlp);
  CHECK(t.rows.size() == 134);
  CHECK(t.tp_degrees() == std::vector<int>{1, 2});
  // Line 2 is the largest token count at TP 1: mlp_up_proj = 0.001 ms x 512.
  CHECK(t.rows[0].num_tokens == 512);
  CHECK(t.rows[0].line == 2);
  CHECK(t.rows[0].median_ms[3] == Approx(0.512));
  // Its shape is Llama-3-8B's, which is llama-3.1-8b's.
  REQUIRE(match_vidur_model(t) != nullptr);
  CHECK(match_vidur_model(t)->name == "llama-3.1-8b");
  CHECK(vidur_gpu_catalog_name("h100") == "h100-sxm-80gb");
  CHECK(vidur_gpu_catalog_name("a100") == "a100-80gb");
  CHECK(vidur_gpu_catalog_name("a40") == "a40-48gb");
  CHECK(vidur_gpu_catalog_name("v100").empty());
}

TEST_CASE("the Vidur fit recovers each operator and the whole step on held-out rows", "[vidur]") {
  const VidurMlpTable t = read_vidur_mlp(test::data_path(kFixture));
  const ModelSpec& m = find_model("llama-3.1-8b");
  const VidurFit f1 = fit_vidur(t, 1, &m, 5);
  REQUIRE(f1.operators.size() == 5);
  for (const VidurOperatorFit& op : f1.operators) {
    INFO(op.op);
    CHECK(op.fit.fit.held_out_samples == 13);  // 67 rows at TP 1, every 5th held out
    CHECK(op.fit.fit.mape_held_out < 1e-6);
    CHECK(op.fit.breakpoint_tokens == Approx(64).epsilon(1e-6));
  }
  CHECK(f1.operators[3].fit.coefficients.linear_s_per_token == Approx(1e-6).epsilon(1e-6));  // 0.001 ms/token
  CHECK(f1.operators[3].fit.coefficients.weight_floor_s == Approx(64e-6).epsilon(1e-6));
  // The step: emb once, the rest per layer (32), add twice.
  REQUIRE(f1.has_step);
  const double floor_ms = 0.002 + 32 * (0.004 + 0.032 + 0.064 + 2 * 0.001);
  const double k_ms = 0.00003125 + 32 * (0.0000625 + 0.0005 + 0.001 + 2 * 0.000015625);
  CHECK(f1.step.coefficients.weight_floor_s == Approx(floor_ms * 1e-3).epsilon(1e-6));
  CHECK(f1.step.coefficients.linear_s_per_token == Approx(k_ms * 1e-3).epsilon(1e-6));
  CHECK(f1.step.fit.mape_held_out < 1e-6);
  // At TP 2 the GEMMs halve.
  const VidurFit f2 = fit_vidur(t, 2, nullptr, 5);
  CHECK_FALSE(f2.has_step);
  CHECK(f2.operators[3].fit.coefficients.linear_s_per_token == Approx(0.5e-6).epsilon(1e-6));
  // The profile: Vidur's linear terms, the roofline's attention.
  const Profile p = vidur_profile(f1, m, find_gpu("h100-sxm-80gb"), "h100", "fixture", "2024-11-19T00:00:00Z");
  CHECK(p.model == "llama-3.1-8b");
  CHECK(p.gpu.catalog == "h100-sxm-80gb");
  CHECK(p.coefficients.linear_s_per_token == f1.step.coefficients.linear_s_per_token);
  CHECK(p.coefficients.attn_s_per_unit == roofline_coefficients(m, find_gpu("h100-sxm-80gb"), 1).attn_s_per_unit);
  CHECK_THAT(p.provenance, Contains("fixture"));
}

TEST_CASE("bad Vidur files are refused naming file, line and field", "[vidur]") {
  const std::string head =
      "time_stats.mlp_up_proj.min,time_stats.mlp_up_proj.max,time_stats.mlp_up_proj.mean,"
      "time_stats.mlp_up_proj.median,time_stats.mlp_up_proj.std,n_head,n_kv_head,n_embd,n_expanded_embd,"
      "vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n";
  CHECK_THROWS_WITH(parse_vidur_mlp(head + "0.1,0.1,0.1,x,0,32,8,4096,14336,128256,True,8,1\n", "m.csv"),
                    Contains("m.csv:2") && Contains("time_stats.mlp_up_proj.median"));
  CHECK_THROWS_WITH(parse_vidur_mlp(head + "0.1,0.1,0.1,0.1,0,32,8,4096,14336,128256,True,0,1\n", "m.csv"),
                    Contains("m.csv:2") && Contains("num_tokens"));
  CHECK_THROWS_WITH(parse_vidur_mlp(head + "0.1,0.1,0.1,0.1,0,32,8,4096\n", "m.csv"), Contains("m.csv:2"));
  CHECK_THROWS_WITH(parse_vidur_mlp(head, "m.csv"), Contains("no rows"));
  CHECK_THROWS_WITH(parse_vidur_mlp("a,b\n1,2\n", "m.csv"), Contains("not a Vidur mlp.csv"));
  CHECK_THROWS_WITH(parse_vidur_mlp(head + "0.1,0.1,0.1,0.1,0,32,8,4096,14336,128256,True,8,1\n"
                                           "0.1,0.1,0.1,0.1,0,32,8,4096,11008,128256,True,16,1\n",
                                    "m.csv"),
                    Contains("m.csv:3") && Contains("one model per file"));
  const std::string lfs = test::write_text_file(test::temp_dir("vidur_lfs"), "attention.csv",
                                                "version https://git-lfs.github.com/spec/v1\noid sha256:6b44\nsize 10792177\n");
  CHECK_THROWS_WITH(read_vidur_mlp(lfs), Contains("Git LFS pointer"));
}

TEST_CASE("gpu calibrate --from-vidur prints the held-out MAPE per operator and writes the profile", "[vidur][cli]") {
  const std::string out = test::temp_dir("vidur_cli");
  const auto r = test::run_cli({"gpu", "calibrate", "--from-vidur", test::data_path("vidur"), "--out-dir", out,
                                "--date", "2024-11-19T00:00:00Z", "--source", "fixture"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("model llama-3.1-8b, GPU h100-sxm-80gb"));
  CHECK_THAT(r.out, Contains("TP 1: 67 rows; held-out MAPE per operator: emb 0.00 %"));
  CHECK_THAT(r.out, Contains("step (llama-3.1-8b, emb + 32 layers): held-out MAPE 0.00 %"));
  const Profile p = read_profile(out + "/h100-sxm-80gb.llama-3.1-8b.tp1.json");
  CHECK(p.tp == 1);
  CHECK(p.fit.held_out_samples == 13);
  CHECK(read_profile(out + "/h100-sxm-80gb.llama-3.1-8b.tp2.json").tp == 2);
  // A rerun writes the same bytes: the date is the data's, never today's.
  const std::string again = test::temp_dir("vidur_cli_again");
  REQUIRE(test::run_cli({"gpu", "calibrate", "--from-vidur", test::data_path("vidur"), "--out-dir", again, "--date",
                         "2024-11-19T00:00:00Z", "--source", "fixture"})
              .rc == 0);
  CHECK(test::read_file(again + "/h100-sxm-80gb.llama-3.1-8b.tp1.json") ==
        test::read_file(out + "/h100-sxm-80gb.llama-3.1-8b.tp1.json"));
  const auto undated = test::run_cli({"gpu", "calibrate", "--from-vidur", test::data_path("vidur"), "--out-dir",
                                      test::temp_dir("vidur_undated")});
  CHECK(undated.rc == 2);
  CHECK_THAT(undated.err, Contains("--date: required with --out-dir"));
  // Errors: both inputs, no data.
  CHECK(test::run_cli({"gpu", "calibrate", "--from-vidur", out, "--samples", "x"}).rc == 2);
  const auto none = test::run_cli({"gpu", "calibrate", "--from-vidur", test::temp_dir("vidur_empty")});
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, Contains("no mlp.csv"));
}

TEST_CASE("the profiles fitted from Vidur's data are valid, named for their run and carry their source",
          "[vidur][profile]") {
  const std::string dir = std::string(PREFIXSIM_SOURCE_DIR) + "/sim/cost/catalog/profiles/vidur";
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    ++n;
    const Profile p = read_profile(e.path().string());
    INFO(e.path().filename().string());
    CHECK(e.path().filename().string() == p.gpu.catalog + "." + p.model + ".tp" + std::to_string(p.tp) + ".json");
    CHECK_THAT(p.provenance, Contains("github.com/microsoft/vidur @ 7d47513363ec447a741ac5e47241580b47724fbf"));
    const ModelSpec& m = find_model(p.model);
    const GpuSpec& g = find_gpu(p.gpu.catalog);
    // Vidur's linear terms, the roofline's attention; the measured GEMMs run
    // at 30-100 % of the roofline's assumed 60 % of peak.
    const CostCoefficients roof = roofline_coefficients(m, g, p.tp);
    CHECK(p.coefficients.attn_s_per_unit == roof.attn_s_per_unit);
    CHECK(p.coefficients.linear_s_per_token > 0.5 * roof.linear_s_per_token);
    CHECK(p.coefficients.linear_s_per_token < 3 * roof.linear_s_per_token);
    CHECK(p.fit.held_out_samples > 40);
    CHECK(p.fit.mape_held_out < 0.06);
  }
  CHECK(n == 32);  // llama-2-7b/70b on a100, a40 and h100, llama-3.1-8b/70b on a100, TP 1, 2, 4, 8
}

TEST_CASE("a Vidur file's GPU, model folder and repository path come from Vidur's layout", "[vidur]") {
  const std::filesystem::path f = "/tmp/x/vidur/data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv";
  CHECK(vidur_gpu_of(f) == "h100");
  CHECK(vidur_model_dir_of(f) == "meta-llama/Llama-2-7b-hf");
  CHECK(vidur_repo_path_of(f) == "data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv");
  // A copy outside a "compute" folder: the GPU is the folder two above the file.
  CHECK(vidur_repo_path_of("a100/org/model/mlp.csv") == "data/profiling/compute/a100/org/model/mlp.csv");
}
