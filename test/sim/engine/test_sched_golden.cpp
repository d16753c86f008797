// Every vLLM v1 scheduler golden case (test/data/golden/vllm-v1-scheduler)
// reproduces exactly: the same JSON step by step, and the same summary.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "policies/registry.h"
#include "sim/engine/sched_runner.h"
#include "test/support.h"

using namespace prefixsim;

namespace {

std::string run_case(const std::string& name, bool check) {
  const std::string steps = test::data_path("golden/vllm-v1-scheduler/" + name + ".steps.jsonl");
  std::ifstream in(steps);
  std::ostringstream out;
  SchedOptions o;
  o.check_invariants = check;
  o.make_policy = [] { return make_policy("lru"); };
  run_sched(in, steps, out, o);
  return out.str();
}
}  // namespace

TEST_CASE("sched reproduces every vLLM v1 scheduler golden case step by step", "[golden][sched]") {
  const auto cases = nlohmann::json::parse(test::read_file(test::data_path("golden/vllm-v1-scheduler/cases.json")));
  REQUIRE(cases.size() == 10);
  for (auto it = cases.begin(); it != cases.end(); ++it) {
    const std::string name = it.key();
    SECTION(name) {
      const auto got = test::parse_jsonl(run_case(name, true));
      const auto want =
          test::parse_jsonl(test::read_file(test::data_path("golden/vllm-v1-scheduler/" + name + ".expected.jsonl")));
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO(name << " line " << i + 1);
        REQUIRE(got[i] == want[i]);
      }
      CHECK(got.back() == it.value()["summary"]);
    }
  }
}

TEST_CASE("sched output is byte-identical to the golden files and across runs", "[golden][sched][determinism]") {
  for (const char* name : {"tiny_hand", "burst_preemption"}) {
    const std::string a = run_case(name, false);
    CHECK(a == run_case(name, false));
    CHECK(a == test::read_file(test::data_path(std::string("golden/vllm-v1-scheduler/") + name + ".expected.jsonl")));
  }
}
