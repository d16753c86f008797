// Bad workload descriptions are InputErrors that name the file, the line and
// the key, raised before any request is generated.
#include <catch2/catch.hpp>
#include <fstream>

#include "sim/base/error.h"
#include "test/support.h"
#include "workloads/workload.h"

namespace test_workload_errors {

using namespace prefixsim;

std::string write_yaml(const std::string& text) {
  const std::string path = test::temp_dir("badyaml") + "/bad.yaml";
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& workload) {
  try {
    make_workload(workload, {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("an unknown preset that is not a file either is an input error listing the presets",
          "[workloads][errors]") {
  const std::string e = error_of("chatbott");
  CHECK_THAT(e, Catch::Contains("unknown workload 'chatbott'"));
  CHECK_THAT(e, Catch::Contains("chatbot"));
  CHECK_THAT(error_of("/no/such/dir/w.yaml"), Catch::Contains("unknown workload '/no/such/dir/w.yaml'"));
}

TEST_CASE("bad workload YAML names the file, the line and the key", "[workloads][errors]") {
  struct Case {
    const char* what;
    const char* yaml;
    const char* line_and_key;  // expected after "FILE:"
  };
  const Case cases[] = {
      {"syntax error", "pattern: chatbot\nparams: {user_tokens: [1, 2\n", ":3: invalid YAML"},
      {"not a mapping", "- 1\n- 2\n", ":1: a workload file must be a YAML mapping"},
      {"unknown top-level key", "pattern: chatbot\nrequets: 5\n", ":2: requets: unknown key"},
      {"unknown pattern", "pattern: chatbox\n", ":1: pattern: unknown pattern 'chatbox'"},
      {"unknown parameter", "pattern: chatbot\nparams:\n  system_tokens: 5\n", ":3: params.system_tokens: unknown key"},
      {"unknown distribution", "pattern: chatbot\nparams:\n  user_tokens: {dist: poisson, mean: 3}\n",
       ":3: params.user_tokens.dist: unknown distribution 'poisson'"},
      {"negative length", "pattern: random\nparams:\n  prompt_tokens: -5\n", ":3: params.prompt_tokens: -5 is out of range"},
      {"not a number", "pattern: random\narrival: {rate: fast}\n", ":2: arrival.rate: 'fast' is not a number"},
      {"zero rate", "pattern: random\narrival: {rate: 0}\n", ":2: arrival.rate: 0 is out of range"},
      {"unknown arrival process", "pattern: random\narrival:\n  process: bursty\n",
       ":3: arrival.process: unknown arrival process 'bursty'"},
      {"cv without gamma", "pattern: random\narrival: {process: poisson, cv: 2}\n", ":2: arrival.cv: cv applies to the gamma"},
      {"uniform max below min", "pattern: random\nparams:\n  prompt_tokens: {dist: uniform, min: 9, max: 3}\n",
       ":3: params.prompt_tokens.max: max is below min"},
      {"missing pattern", "requests: 5\n", ":1: missing required key 'pattern'"},
      {"mixture entry with an unknown preset", "mixture:\n  - {preset: nope, weight: 1}\n",
       ":2: mixture[0].preset: unknown preset 'nope'"},
      {"mixture entry with two sources", "mixture:\n  - {preset: chatbot, pattern: random}\n",
       ":2: mixture[0]: each mixture entry needs exactly one of"},
      {"negative weight", "mixture:\n  - {preset: chatbot, weight: -1}\n", ":2: mixture[0].weight: -1 is out of range"},
      {"empirical without values", "pattern: random\nparams:\n  prompt_tokens: {dist: empirical}\n",
       ":3: params.prompt_tokens: empirical needs 'values' or 'trace'"},
      {"requests not an integer", "pattern: random\nrequests: 1.5\n", ":2: requests: '1.5' is not an integer"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string path = write_yaml(c.yaml);
    const std::string e = error_of(path);
    CHECK_THAT(e, Catch::StartsWith(path + c.line_and_key));
  }
}

TEST_CASE("a mixture entry referring to a missing file names the entry's line", "[workloads][errors]") {
  const std::string path = write_yaml("seed: 1\nmixture:\n  - {file: missing.yaml}\n");
  CHECK_THAT(error_of(path), Catch::StartsWith(path + ":3: unknown workload 'missing.yaml'"));
}

TEST_CASE("empirical lengths from values draw only recorded values", "[workloads]") {
  const std::string path = write_yaml(
      "pattern: random\nrequests: 200\nparams:\n  prompt_tokens: {dist: empirical, values: [17, 170, 1700]}\n");
  auto src = make_workload(path, {});
  Request r;
  while (src->next(r)) CHECK((r.prompt_len == 17 || r.prompt_len == 170 || r.prompt_len == 1700));
}

TEST_CASE("empirical lengths from a trace draw that trace's prompt and output lengths", "[workloads]") {
  const std::string dir = test::temp_dir("empirical");
  std::ofstream(dir + "/lens.jsonl") << "{\"timestamp\":0,\"input_length\":700,\"output_length\":5,\"hash_ids\":[1,2]}\n"
                                        "{\"timestamp\":5,\"input_length\":1500,\"output_length\":9,\"hash_ids\":[1,2,3]}\n";
  std::ofstream(dir + "/w.yaml") << "pattern: random\nrequests: 100\nparams:\n"
                                    "  prompt_tokens: {dist: empirical, trace: lens.jsonl, field: prompt}\n"
                                    "  output_tokens: {dist: empirical, trace: lens.jsonl, field: output}\n";
  auto src = make_workload(dir + "/w.yaml", {});
  Request r;
  int n = 0;
  while (src->next(r)) {
    ++n;
    CHECK((r.prompt_len == 700 || r.prompt_len == 1500));
    CHECK((r.output_len == 5 || r.output_len == 9));
  }
  CHECK(n == 100);
}

}  // namespace test_workload_errors
