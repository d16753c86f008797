// The scenario room in process: the option table's YAML round trip, the
// cost model a scenario resolves to, and the executor it builds.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include "sim/base/error.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_fleet.h"
#include "test/support.h"

using namespace prefixsim;

TEST_CASE("a scenario's report echo read back as YAML gives the same scenario", "[scenario]") {
  Scenario s;
  s.model = "qwen3-32b";
  s.tp = 2;
  s.max_num_seqs = 64;
  s.max_num_batched_tokens = 4096;
  s.kv_blocks = 12345;
  s.request_overhead_ms = 2.5;
  const nlohmann::json echo = to_json(s);
  Scenario back;
  for (const auto& [key, value] : echo.items()) {
    if (value.is_null() || key == "workload") continue;
    if (value.is_object()) {
      for (const auto& [sub, v] : value.items())
        if (!v.is_null()) apply_scenario_value("echo", 1, key + "." + sub, YAML::Load(v.dump()), back);
      continue;
    }
    apply_scenario_value("echo", 1, key, YAML::Load(value.dump()), back);
  }
  CHECK(to_json(back) == echo);
  CHECK(back.kv_blocks == 12345);
  CHECK(back.request_overhead_ms == 2.5);
  CHECK_FALSE(back.host_per_seq_us.has_value());  // unset: the cost model's
}

TEST_CASE("a scenario resolves to the fitted step model unless --profile says otherwise", "[scenario]") {
  Scenario s;
  ResolvedScenario r = resolve_scenario(s);
  REQUIRE(r.step_model.has_value());
  CHECK_FALSE(r.profile.has_value());
  CHECK(r.step_model->terms == default_step_model().terms);
  // Its timing terms become the server timing unless a flag sets them.
  VllmTiming t = vllm_timing(s, r);
  CHECK(t.request_s == default_step_model().terms[kRequestS]);
  s.request_overhead_ms = 4;
  CHECK(vllm_timing(s, r).request_s == 0.004);
  CHECK(make_executor(s, r).to_json()["source"] == "step_model");

  s.profile = "roofline";
  r = resolve_scenario(s);
  CHECK_FALSE(r.step_model.has_value());
  CHECK_FALSE(r.profile.has_value());
  CHECK(make_executor(s, r).to_json()["source"] == "roofline");
  CHECK(vllm_timing(s, r).host_per_seq_s == roofline_terms()[kHostSeqS]);

  s.profile = "builtin";
  r = resolve_scenario(s);
  CHECK(r.profile.has_value());
  CHECK(make_executor(s, r).to_json()["source"] == "profile");

  StepModel m;
  m.terms[kLayerS] = 4e-5;
  s.profile = test::write_text_file(test::temp_dir("scenario_step_model"), "m.json", step_model_text(m));
  r = resolve_scenario(s);
  REQUIRE(r.step_model.has_value());
  CHECK(r.step_model->terms[kLayerS] == 4e-5);
  // The step model's per-layer cost is device time at every step.
  CHECK(make_executor(s, r).coefficients().device_overhead_s == Approx(4e-5 * 32));
}

TEST_CASE("expert parallelism over the replicas frees KV memory and needs a MoE and a model that knows the split",
          "[scenario][moe]") {
  Scenario s;
  s.model = "qwen3-30b-a3b";
  s.gpu = "h100-sxm-80gb";
  s.replicas = 2;
  ResolvedScenario r = resolve_scenario(s);
  const KvSizing alone = size_kv_pool(kv_sizing_input(s, r));
  s.enable_expert_parallel = true;
  CHECK(expert_dp(s) == 2);
  r = resolve_scenario(s);
  const KvSizing split = size_kv_pool(kv_sizing_input(s, r));
  // Half the routed experts (about 28 GB of Qwen3-30B-A3B's 61 GB) leave each GPU.
  const double freed = r.model->routed_expert_bytes() / 2;
  CHECK(static_cast<double>(alone.weight_bytes - split.weight_bytes) == Approx(freed).epsilon(1e-6));
  CHECK(split.num_blocks > alone.num_blocks);
  // The executor prices a decode step of 64 sequences faster: half the experts stream.
  BatchSummary b;
  for (int i = 0; i < 64; ++i) b.add(1, 1000);
  Scenario one = s;
  one.enable_expert_parallel = false;
  CHECK(make_executor(s, r).coefficients().expert_token_scale == 2);
  CHECK(step_seconds(make_executor(s, r).coefficients(), b) <
        step_seconds(make_executor(one, resolve_scenario(one)).coefficients(), b));

  Scenario dense;
  dense.replicas = 2;
  dense.enable_expert_parallel = true;
  CHECK_THROWS_WITH(resolve_scenario(dense), Catch::Matchers::Contains("--enable-expert-parallel") &&
                                                 Catch::Matchers::Contains("no routed experts"));
  s.profile = "roofline";
  CHECK_NOTHROW(resolve_scenario(s));
}

namespace scenario_test {
// The InputError text `f` throws, "" when none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace scenario_test

TEST_CASE("replica groups read a GPU, tp and x per group, in order, with ':' or ',' between keys",
          "[scenario][mixed]") {
  const auto g = parse_replica_groups("h100-sxm-80gb:tp=2:x=4; a100-80gb:x=2,tp=4 ;l40s-48gb", 1);
  REQUIRE(g.size() == 3);
  CHECK((g[0].gpu == "h100-sxm-80gb" && g[0].tp == 2 && g[0].count == 4));
  CHECK((g[1].gpu == "a100-80gb" && g[1].tp == 4 && g[1].count == 2));
  CHECK((g[2].gpu == "l40s-48gb" && g[2].tp == 1 && g[2].count == 1));  // the defaults: --tp, one replica
  CHECK(parse_replica_groups("l40s-48gb", 8)[0].tp == 8);

  Scenario s;
  s.replica_groups = "h100-sxm-80gb:tp=2:x=4;a100-80gb:tp=4:x=2";
  CHECK(fleet_replicas(s) == 6);
  const std::vector<Scenario> parts = group_scenarios(s);
  REQUIRE(parts.size() == 2);
  CHECK((parts[1].gpu == "a100-80gb" && parts[1].tp == 4 && parts[1].replicas == 2 && parts[1].replica_groups.empty()));
  CHECK(to_json(s)["replica_groups"] == s.replica_groups);
  CHECK_FALSE(to_json(Scenario{}).contains("replica_groups"));  // unset: not echoed (reports unchanged)
}

TEST_CASE("bad replica groups are refused naming --replica-groups", "[scenario][mixed]") {
  using scenario_test::error_of;
  for (const char* bad : {"h100-sxm-80gb:x=0", "h100-sxm-80gb:tp=3.5", "h100-sxm-80gb:y=2", ";", "h100-sxm-80gb;",
                          ":x=2", "h100-sxm-80gb:x=4097", "a:x=4000;b:x=97", "h100-sxm-80gb:tp=0"}) {
    INFO(bad);
    const std::string e = error_of([&] { parse_replica_groups(bad, 1); });
    CHECK(e.rfind("--replica-groups", 0) == 0);
  }
  Scenario s;
  s.replica_groups = "h100-sxm-80gb:x=2";
  s.replicas = 2;
  CHECK(error_of([&] { validate(s); }).rfind("--replicas:", 0) == 0);
  s.replicas = 1;
  s.mode = "cache";
  CHECK(error_of([&] { validate(s); }).find("engine mode") != std::string::npos);
  s.mode = "engine";
  s.prefill_replicas = s.decode_replicas = 1;
  CHECK(error_of([&] { validate(s); }).rfind("--replica-groups", 0) == 0);
  s.prefill_replicas = s.decode_replicas = 0;
  CHECK(error_of([&] { validate(s); }).empty());
  s.replica_groups = "no-such-gpu:x=2";
  CHECK(error_of([&] { group_pools(s, resolve_scenario(s)); }).find("no-such-gpu") != std::string::npos);
}
