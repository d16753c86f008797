// `prefixsim ops` from the command line: help texts, golden output through the
// real binary, and the bad-input table (exit 2, FILE:LINE, nothing on stdout).
#include <catch2/catch.hpp>
#include <fstream>

#include "test/support.h"

using namespace prefixsim::test;

namespace {
const std::string kConfig = R"({"op":"config","num_blocks":11,"block_size":4,"enable_caching":true})";
const std::string kArrive = R"({"op":"arrive","req":"a","tokens":[1,2,3,4,5],"salt":null,"lora":null})";

std::string write_script(const std::string& dir, const std::string& text) {
  const std::string p = dir + "/script.jsonl";
  std::ofstream(p) << text;
  return p;
}
}  // namespace

TEST_CASE("prefixsim --help, --version and ops --help print real help", "[cli]") {
  auto h = run_cli({"--help"});
  CHECK(h.rc == 0);
  // User commands first; the tools for checking prefixsim itself apart, after them.
  const size_t tools = h.out.find("checking prefixsim against vLLM");
  REQUIRE(tools != std::string::npos);
  CHECK(h.out.find("  replay ") < tools);
  CHECK(h.out.find("  plan ") < tools);
  for (const char* dev : {"  ops ", "  sched ", "  bench "}) CHECK(h.out.find(dev) > tools);
  auto v = run_cli({"--version"});
  CHECK(v.rc == 0);
  CHECK(v.out.rfind("prefixsim ", 0) == 0);
  auto o = run_cli({"ops", "--help"});
  CHECK(o.rc == 0);
  CHECK(o.out.find("usage: prefixsim ops") != std::string::npos);
  CHECK(o.out.find("--check") != std::string::npos);
}

TEST_CASE("prefixsim ops reads a script from stdin and writes the golden lines", "[cli]") {
  const std::string ops = read_file(data_path("golden/vllm-v1/doc_example.ops.jsonl"));
  auto r = run_cli({"ops", "--check", "-"}, ops);
  REQUIRE(r.rc == 0);
  CHECK(r.out == read_file(data_path("golden/vllm-v1/doc_example.expected.jsonl")));
}

TEST_CASE("bad operation scripts exit 2 with FILE:LINE and write nothing", "[cli][bad-input]") {
  struct Bad {
    const char* what;
    std::string script;
    long line;
    const char* needle;
  };
  const std::vector<Bad> table = {
      {"invalid JSON", kConfig + "\n{\"op\":\"arrive\",", 2, "invalid JSON"},
      {"unknown op", kConfig + "\n{\"op\":\"evict\",\"req\":\"a\"}", 2, "unknown op"},
      {"missing field", kConfig + "\n{\"op\":\"arrive\",\"tokens\":[1]}", 2, "'req'"},
      {"mistyped field", kConfig + "\n{\"op\":\"arrive\",\"req\":7,\"tokens\":[1]}", 2, "'req'"},
      {"tokens not an array", kConfig + "\n{\"op\":\"arrive\",\"req\":\"a\",\"tokens\":5}", 2, "'tokens'"},
      {"num_blocks < 2", R"({"op":"config","num_blocks":1,"block_size":4,"enable_caching":true})", 1, "num_blocks"},
      {"block_size 0", R"({"op":"config","num_blocks":8,"block_size":0,"enable_caching":true})", 1, "block_size"},
      {"block_size above 4096", R"({"op":"config","num_blocks":8,"block_size":4097,"enable_caching":true})", 1,
       "block_size"},
      {"absurd pool", R"({"op":"config","num_blocks":1000000000000,"block_size":16,"enable_caching":true})", 1,
       "num_blocks"},
      {"negative token", kConfig + "\n{\"op\":\"arrive\",\"req\":\"a\",\"tokens\":[1,-2]}", 2, "tokens[1]"},
      {"non-integer token", kConfig + "\n{\"op\":\"arrive\",\"req\":\"a\",\"tokens\":[1,2.5]}", 2, "tokens[1]"},
      {"second arrive of a live id", kConfig + "\n" + kArrive + "\n" + kArrive, 3, "still live"},
      {"config not first", kArrive + "\n" + kConfig, 1, "config"},
      {"second config", kConfig + "\n" + kConfig, 2, "config"},
      {"append to an unknown request", kConfig + "\n{\"op\":\"append\",\"req\":\"zz\",\"tokens\":[1]}", 2,
       "not live"},
      {"empty script", "", 1, "empty"},
      {"enable_caching not a bool", R"({"op":"config","num_blocks":8,"block_size":4,"enable_caching":"yes"})", 1,
       "enable_caching"},
  };
  for (const Bad& b : table) {
    SECTION(b.what) {
      const std::string dir = temp_dir("ops-bad");
      const std::string path = write_script(dir, b.script);
      auto r = run_cli({"ops", path});
      CHECK(r.rc == 2);
      CHECK(r.out.empty());
      CHECK(r.err.find(path + ":" + std::to_string(b.line) + ":") != std::string::npos);
      CHECK(r.err.find(b.needle) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
    }
  }
}

TEST_CASE("ops on an unreadable file and an unknown policy exit 2", "[cli][bad-input]") {
  auto r = run_cli({"ops", "/nonexistent/ops.jsonl"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("/nonexistent/ops.jsonl") != std::string::npos);
  auto p = run_cli({"ops", "--policy", "nosuch", "-"}, kConfig);
  CHECK(p.rc == 2);
  CHECK(p.err.find("nosuch") != std::string::npos);
}
