// `prefixsim sched` on the command line: a golden case byte for byte, and a
// table of bad step scripts, each exit 2 with FILE:LINE: message on stderr
// and nothing on stdout.
#include <catch2/catch.hpp>
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "test/support.h"

using namespace prefixsim;

namespace {
const std::string kConfig =
    R"({"op":"config","num_blocks":11,"block_size":4,"max_num_seqs":4,"max_num_batched_tokens":12,)"
    R"("enable_chunked_prefill":true,"long_prefill_token_threshold":0})";
const std::string kStep = R"({"op":"step","arrive":[{"req":"A","tokens":[1,2,3,4,5],"max_tokens":2}]})";

struct BadScript {
  const char* what;
  std::string text;
  int line;
  const char* message;  // a piece of the expected message
};
}  // namespace

TEST_CASE("sched CLI writes a golden case byte for byte", "[sched][cli]") {
  const std::string steps = test::data_path("golden/vllm-v1-scheduler/tiny_admission.steps.jsonl");
  const test::CliResult r = test::run_cli({"sched", steps});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out == test::read_file(test::data_path("golden/vllm-v1-scheduler/tiny_admission.expected.jsonl")));
  const test::CliResult piped = test::run_cli({"sched", "-", "--check"}, test::read_file(steps));
  CHECK(piped.rc == 0);
  CHECK(piped.out == r.out);
}

TEST_CASE("sched CLI has real help", "[sched][cli]") {
  const test::CliResult r = test::run_cli({"sched", "--help"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("prefixsim sched") != std::string::npos);
  CHECK(r.out.find("max_num_batched_tokens") != std::string::npos);
  CHECK(r.out.find("--policy") != std::string::npos);
}

TEST_CASE("sched CLI rejects bad step scripts with exit 2, FILE:LINE and no output", "[sched][cli]") {
  const std::vector<BadScript> table = {
      {"invalid JSON", kConfig + "\n{\"op\":\"step\",\"arrive\":[}\n", 2, "invalid JSON"},
      {"unknown op", kConfig + "\n{\"op\":\"jump\"}\n", 2, "unknown op 'jump'"},
      {"duplicate request id", kConfig + "\n" + kStep + "\n" + kStep + "\n", 3, "duplicate request id 'A'"},
      {"config not first", kStep + "\n" + kConfig + "\n", 1, "first line must be the config"},
      {"a second config", kConfig + "\n" + kConfig + "\n", 2, "second config"},
      {"max_num_seqs 0",
       R"({"op":"config","num_blocks":11,"block_size":4,"max_num_seqs":0,"max_num_batched_tokens":12})", 1,
       "max_num_seqs"},
      {"a prompt longer than the pool can ever hold",
       kConfig + "\n" + R"({"op":"step","arrive":[{"req":"big","tokens":[)" + [] {
         std::string t;
         for (int i = 0; i < 41; ++i) t += (i ? "," : "") + std::to_string(i);
         return t;
       }() + R"(],"max_tokens":1}]})" + "\n",
       2, "can never be scheduled"},
      {"missing max_tokens", kConfig + "\n" + R"({"op":"step","arrive":[{"req":"A","tokens":[1]}]})" + "\n", 2,
       "arrive[0].max_tokens"},
      {"mistyped token", kConfig + "\n" + R"({"op":"step","arrive":[{"req":"A","tokens":[1,"x"],"max_tokens":1}]})" +
                             "\n",
       2, "arrive[0].tokens[1]"},
      {"max_tokens 0", kConfig + "\n" + R"({"op":"step","arrive":[{"req":"A","tokens":[1],"max_tokens":0}]})" + "\n",
       2, "max_tokens"},
      {"missing block_size", R"({"op":"config","num_blocks":11,"max_num_seqs":4,"max_num_batched_tokens":12})", 1,
       "block_size"},
      {"mistyped enable_chunked_prefill",
       R"({"op":"config","num_blocks":11,"block_size":4,"max_num_seqs":4,"max_num_batched_tokens":12,"enable_chunked_prefill":1})",
       1, "enable_chunked_prefill"},
      {"unknown config key", R"({"op":"config","num_blocks":11,"block_size":4,"max_num_seqs":4,"max_num_batched_tokens":12,"colour":1})",
       1, "unknown field 'colour'"},
      {"arrive not a list", kConfig + "\n{\"op\":\"step\",\"arrive\":{}}\n", 2, "'arrive' must be an array"},
      {"empty script", "\n", 1, "empty script"},
  };
  const std::string dir = test::temp_dir("sched-bad");
  int n = 0;
  for (const BadScript& b : table) {
    INFO(b.what);
    const std::string path = dir + "/bad" + std::to_string(n++) + ".jsonl";
    std::ofstream(path) << b.text;
    const test::CliResult r = test::run_cli({"sched", path});
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(path + ":" + std::to_string(b.line) + ": ") != std::string::npos);
    CHECK(r.err.find(b.message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
  }
}
