// Every vLLM v1 golden case (test/data/golden/vllm-v1) reproduces exactly:
// same keys and values op by op, `usage` equal as a double.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "policies/registry.h"
#include "sim/kv/ops_runner.h"
#include "test/support.h"
#include "traces/byte_stream.h"

using namespace prefixsim;

namespace {

// The ops script of a case: NAME.ops.jsonl, or, for the largest cases (kept
// compressed so the repository holds no multi-MB file), NAME.ops.jsonl.zst.
std::string ops_script(const std::string& name) {
  const std::string plain = test::data_path("golden/vllm-v1/" + name + ".ops.jsonl");
  if (std::filesystem::exists(plain)) return test::read_file(plain);
  auto in = open_byte_stream(plain + ".zst");
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = in->read(buf, sizeof buf)) > 0;) text.append(buf, n);
  return text;
}

}  // namespace

TEST_CASE("ops reproduces every vLLM v1 golden case op by op", "[golden][ops]") {
  const auto cases = nlohmann::json::parse(test::read_file(test::data_path("golden/vllm-v1/cases.json")));
  REQUIRE(cases.size() == 11);
  for (auto it = cases.begin(); it != cases.end(); ++it) {
    const std::string name = it.key();
    SECTION(name) {
      const std::string ops = test::data_path("golden/vllm-v1/" + name + ".ops.jsonl");
      std::istringstream in(ops_script(name));
      std::ostringstream out;
      OpsOptions o;
      o.check_invariants = true;
      o.make_policy = [] { return make_policy("lru"); };
      run_ops(in, ops, out, o);
      const auto got = test::parse_jsonl(out.str());
      const auto want = test::parse_jsonl(test::read_file(test::data_path("golden/vllm-v1/" + name + ".expected.jsonl")));
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO(name << " line " << i + 1);
        REQUIRE(got[i] == want[i]);  // nlohmann compares numbers by value: usage as a double
      }
      CHECK(got.back() == it.value()["summary"]);
    }
  }
}

TEST_CASE("ops output is byte-identical across runs", "[ops][determinism]") {
  const std::string ops = test::data_path("golden/vllm-v1/stress3_b4_n128_salts.ops.jsonl");
  auto run = [&] {
    std::ifstream in(ops);
    std::ostringstream out;
    OpsOptions o;
    o.make_policy = [] { return make_policy("vllm"); };
    run_ops(in, ops, out, o);
    return out.str();
  };
  CHECK(run() == run());
}
