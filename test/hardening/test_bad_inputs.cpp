// Bad inputs across every format and command: each must exit 2 with a
// one-line message naming the file:line or the field, leave nothing in the
// output directory (no report, no *.tmp.* file) and not crash. Also: SIGINT
// during a long replay, and absurd sizes refused up front.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test/support.h"

namespace fs = std::filesystem;
using prefixsim::test::data_path;
using prefixsim::test::run_cli;
using prefixsim::test::temp_dir;

namespace {

struct BadCase {
  const char* name;
  std::vector<std::pair<std::string, std::string>> files;  // written into the case dir
  std::vector<std::string> args;                           // "@" -> the case dir, "%" -> test/data/traces
  const char* expect;                                      // in the message's first line
};

std::string subst(std::string a, const std::string& dir, const std::string& traces) {
  for (size_t p; (p = a.find('@')) != std::string::npos;) a.replace(p, 1, dir);
  for (size_t p; (p = a.find('%')) != std::string::npos;) a.replace(p, 1, traces);
  return a;
}

std::string head_bytes(const std::string& path, size_t n) {
  return prefixsim::test::read_file(path).substr(0, n);
}

const std::string kLine = R"({"id":"a","t":0,"tokens":[1,2,3],"output_len":2})";
const std::string kMoon = R"({"timestamp":0,"input_length":100,"output_length":1,"hash_ids":[1]})";

std::vector<BadCase> bad_cases() {
  const std::string T = "%/native_small.jsonl";
  return {
      // replay: pool sizing and flags
      {"replay --kv-blocks 0", {}, {"replay", T, "--kv-blocks", "0"}, "--kv-blocks"},
      {"replay --kv-blocks 10^12 (absurd pool)", {}, {"replay", T, "--kv-blocks", "1000000000000"}, "--kv-blocks"},
      {"replay --kv-tokens negative", {}, {"replay", T, "--kv-tokens", "-5"}, "--kv-tokens"},
      {"replay --kv-tokens 10^15", {}, {"replay", T, "--kv-tokens", "1000000000000000"}, "--kv-tokens"},
      {"replay --kv-gb negative", {}, {"replay", T, "--kv-gb", "-1"}, "--kv-gb"},
      {"replay two pool sizes", {}, {"replay", T, "--kv-blocks", "100", "--kv-tokens", "100"}, "give at most one"},
      {"replay --tp 3", {}, {"replay", T, "--tp", "3"}, "--tp"},
      {"replay --block-size 0", {}, {"replay", T, "--block-size", "0"}, "--block-size"},
      {"replay --mode x", {}, {"replay", T, "--mode", "x"}, "--mode"},
      {"replay --policy nosuch", {}, {"replay", T, "--policy", "nosuch"}, "--policy"},
      {"replay --gpu-mem-util 2", {}, {"replay", T, "--gpu-mem-util", "2"}, "--gpu-mem-util"},
      {"replay unknown --model", {}, {"replay", T, "--model", "nosuch"}, "--model"},
      {"replay unknown --gpu", {}, {"replay", T, "--gpu", "nosuch"}, "--gpu"},
      {"replay --max-num-seqs 0", {}, {"replay", T, "--max-num-seqs", "0"}, "--max-num-seqs"},
      {"replay --max-num-batched-tokens 0", {}, {"replay", T, "--max-num-batched-tokens", "0"},
       "--max-num-batched-tokens"},
      {"replay --series-interval 0", {}, {"replay", T, "--series-interval", "0"}, "--series-interval"},
      {"replay --format nosuch", {}, {"replay", T, "--format", "nosuch"}, "nosuch"},
      {"replay --requests -1", {}, {"replay", T, "--requests", "-1"}, "--requests"},
      {"replay --conversation-rate 0", {}, {"replay", T, "--conversation-rate", "0"}, "--conversation-rate"},
      {"replay non-numeric --kv-blocks", {}, {"replay", T, "--kv-blocks", "abc"}, "--kv-blocks"},
      {"replay unknown flag", {}, {"replay", T, "--bogus-flag"}, "--bogus-flag"},
      {"replay unknown --workload", {}, {"replay", "--workload", "nosuch"}, "nosuch"},
      // replay: traces of each format
      {"replay missing trace file", {}, {"replay", "@/missing.jsonl"}, "missing.jsonl:1"},
      {"replay empty trace", {{"e.jsonl", ""}}, {"replay", "@/e.jsonl"}, "e.jsonl:1"},
      {"replay truncated native line", {{"t.jsonl", kLine + "\n" + R"({"id":"b","t":1,"tokens":[1,)"}},
       {"replay", "@/t.jsonl"}, "t.jsonl:2"},
      {"replay 10^9-token native prompt",
       {{"h.jsonl", R"({"id":"a","t":0,"prompt_len":1000000000,"hash_ids":[1],"block_size":16,"output_len":2})"
                    "\n"}},
       {"replay", "@/h.jsonl"}, "h.jsonl:1: field \"prompt_len\""},
      {"replay native arrival going backwards",
       {{"b.jsonl", R"({"id":"a","t":1,"tokens":[1],"output_len":1})"
                    "\n"
                    R"({"id":"b","t":0.5,"tokens":[1],"output_len":1})"
                    "\n"}},
       {"replay", "@/b.jsonl"}, "b.jsonl:2: field \"t\""},
      {"replay native negative output_len",
       {{"n.jsonl", kLine + "\n" + R"({"id":"b","t":0,"tokens":[1],"output_len":-2})" + "\n"}},
       {"replay", "@/n.jsonl"}, "n.jsonl:2: field \"output_len\""},
      {"replay native lora of the wrong type",
       {{"l.jsonl", R"({"id":"a","t":0,"tokens":[1,2,3],"output_len":2,"lora":"x"})"
                    "\n"}},
       {"replay", "@/l.jsonl"}, "l.jsonl:1: field \"lora\""},
      {"replay native mm range outside the prompt",
       {{"m.jsonl", R"({"id":"a","t":0,"tokens":[1,2,3],"output_len":2,"mm":[{"hash":"ab","offset":2,"length":5}]})"
                    "\n"}},
       {"replay", "@/m.jsonl"}, "m.jsonl:1: field \"mm\""},
      {"replay binary garbage", {{"g.jsonl", std::string("\xff\xfe\x00garbage", 10)}}, {"replay", "@/g.jsonl"},
       "g.jsonl:1"},
      {"replay Mooncake negative input_length",
       {{"mc.jsonl", R"({"timestamp":0,"input_length":-5,"output_length":1,"hash_ids":[1]})"
                     "\n"}},
       {"replay", "@/mc.jsonl"}, "mc.jsonl:1: field \"input_length\""},
      {"replay Mooncake string timestamp",
       {{"mc.jsonl", kMoon + "\n" + R"({"timestamp":"x","input_length":5,"output_length":1,"hash_ids":[1]})" +
                         "\n"}},
       {"replay", "@/mc.jsonl"}, "mc.jsonl:2: field \"timestamp\""},
      {"replay Mooncake too many hash ids",
       {{"mc.jsonl", R"({"timestamp":0,"input_length":100,"output_length":1,"hash_ids":[1,2,3,4,5,6]})"
                     "\n"}},
       {"replay", "@/mc.jsonl"}, "mc.jsonl:1: hash_ids"},
      {"replay native trace forced as Mooncake", {}, {"replay", T, "--format", "mooncake"}, "native_small.jsonl:1"},
      {"replay truncated gzip trace", {{"t.jsonl.gz", ""}}, {"replay", "@/t.jsonl.gz"}, "t.jsonl.gz:1: truncated gzip"},
      {"replay truncated zstd trace", {{"t.jsonl.zst", ""}}, {"replay", "@/t.jsonl.zst"}, "t.jsonl.zst:1: truncated zstd"},
      {"replay truncated kv-cache-tester tar.gz", {{"k.tar.gz", ""}}, {"replay", "@/k.tar.gz"}, "k.tar.gz:1"},
      {"replay truncated kv-cache-tester conversation",
       {{"kv/trace_0000.json", R"({"conversation_id":"c","requests":[{"in":5})"}},
       {"replay", "@/kv"}, "trace_0000.json:1"},
      // replay: scenario YAML and profile
      {"replay scenario with an unknown key", {{"s.yaml", "mode: engine\nbogus_key: 3\n"}},
       {"replay", "--config", "@/s.yaml"}, "s.yaml:2: bogus_key"},
      {"replay scenario with a wrong type", {{"s.yaml", "block_size: sixteen\n"}}, {"replay", "--config", "@/s.yaml"},
       "s.yaml:1: block_size"},
      {"replay missing scenario", {}, {"replay", "--config", "@/nosuch.yaml"}, "nosuch.yaml"},
      {"replay truncated --profile", {{"p.json", R"({"schema":"prefixsim.profile/1")"}},
       {"replay", T, "--profile", "@/p.json"}, "p.json:1"},
      {"replay missing --profile", {}, {"replay", T, "--profile", "@/nosuch.json"}, "nosuch.json"},
      {"replay workload YAML with an unknown key", {{"w.yaml", "workload:\n  pattern: chatbot\n  nosuch: 1\n"}},
       {"replay", "--workload", "@/w.yaml"}, "w.yaml:1: workload"},
      // generate, analyze, compare, check
      {"generate unknown preset", {}, {"generate", "nosuchpreset", "-o", "@/out/t.jsonl"}, "nosuchpreset"},
      {"generate negative rate", {}, {"generate", "chatbot", "--rate", "-1", "-o", "@/out/t.jsonl"}, "--rate"},
      {"generate bad workload YAML", {{"w.yaml", "workload:\n  nosuch: 1\n"}},
       {"generate", "@/w.yaml", "-o", "@/out/t.jsonl"}, "w.yaml:1"},
      {"analyze garbage trace", {{"g.jsonl", "not json\n"}}, {"analyze", "@/g.jsonl"}, "g.jsonl:1"},
      {"analyze bad Mooncake line",
       {{"mc.jsonl", R"({"timestamp":0,"input_length":-5,"output_length":1,"hash_ids":[1]})"
                     "\n"}},
       {"analyze", "@/mc.jsonl"}, "mc.jsonl:1: field \"input_length\""},
      {"analyze --block-size 0", {}, {"analyze", T, "--block-size", "0"}, "--block-size"},
      {"compare zero size", {}, {"compare", T, "--policies", "lru", "--kv-blocks", "0,10"}, "--kv-blocks"},
      {"compare non-numeric size", {}, {"compare", T, "--policies", "lru", "--kv-blocks", "abc"}, "--kv-blocks"},
      {"compare absurd size", {}, {"compare", T, "--policies", "lru", "--kv-blocks", "1000000000000"}, "--kv-blocks"},
      {"compare unknown policy", {}, {"compare", T, "--policies", "lru,nosuch", "--kv-blocks", "100"}, "nosuch"},
      {"check a report without a schema", {{"base.json", "{}"}, {"r.json", "{}"}},
       {"check", "@/r.json", "--baseline", "@/base.json"}, "r.json: field 'schema'"},
      {"check a report that is not JSON", {{"base.json", "{}"}, {"r.json", "schema: bad\n"}},
       {"check", "@/r.json", "--baseline", "@/base.json"}, "r.json:1"},
      {"check a report with a number overflowing a double", {{"base.json", "{}"}, {"r.json", "{\"x\":1e999}"}},
       {"check", "@/r.json", "--baseline", "@/base.json"}, "r.json:1"},
      // Found by fuzzing: these used to exit 3 (internal error).
      {"ops script with a number overflowing a double", {{"o.jsonl", "{\"op\":\"config\",\"num_blocks\":1e999}\n"}},
       {"ops", "@/o.jsonl"}, "o.jsonl:1"},
      {"replay --profile with a number overflowing a double", {{"p.json", "{\"schema\":1e999}"}},
       {"replay", T, "--profile", "@/p.json"}, "p.json:1"},
      {"replay a workload path that is not UTF-8", {{"w\xff.yaml", "workload:\n  pattern: chatbot\n"}},
       {"replay", "--workload", "@/w\xff.yaml", "--requests", "10"}, "--workload"},
      {"compare a trace path that is not UTF-8", {}, {"compare", "@/t\xff.jsonl", "--policies", "lru", "--kv-blocks", "100"},
       "TRACE: must be valid UTF-8"},
      {"analyze a trace path that is not UTF-8", {}, {"analyze", "@/t\xff.jsonl"}, "TRACE: must be valid UTF-8"},
      // 0xF6 leads a 4-byte form above U+10FFFF: structurally plausible, not UTF-8.
      {"scenario YAML with a string that is not UTF-8", {{"s.yaml", "workload: \xf6\x96\x96\x87" "0\n"}},
       {"replay", "--config", "@/s.yaml"}, "s.yaml:1: workload: must be valid UTF-8"},
      {"workload YAML with a name that is not UTF-8",
       {{"w.yaml", "name: \"\xed\xa0\x80\"\npattern: chatbot\n"}},
       {"generate", "@/w.yaml", "-o", "@/out/t.jsonl"}, "w.yaml:1: name: must be valid UTF-8"},
      {"check missing report", {{"base.json", "{}"}}, {"check", "@/nosuch.json", "--baseline", "@/base.json"},
       "nosuch.json"},
      // gpu calibrate: the samples file and the command line
      {"gpu calibrate samples with a mistyped header key",
       {{"s.csv", "# prefixsim.calibration-samples/1\n# gpu.nmae: NVIDIA H100 80GB HBM3\n"}},
       {"gpu", "calibrate", "--samples", "@/s.csv", "--out", "@/out/profile.json"}, "s.csv:2: field 'gpu.nmae'"},
      {"gpu calibrate without --samples", {}, {"gpu", "calibrate", "--out", "@/out/profile.json"}, "--samples"},
      {"gpu unknown subcommand", {}, {"gpu", "measure"}, "unknown subcommand 'measure'"},
      {"gpu validate without --samples", {}, {"gpu", "validate"}, "--samples"},
      {"gpu validate with a --profile for another model",
       {{"s.csv", "# prefixsim.calibration-samples/1\n# gpu.name: NVIDIA H100 80GB HBM3\n# gpu.sm_count: 132\n"
                  "# gpu.sm_clock_mhz: 1980\n# gpu.mem_clock_mhz: 2619\n# gpu.driver: 1\n# gpu.cuda: 13.0\n"
                  "# model: qwen2.5-7b\n# tp: 1\n# block_size: 16\n# date: 2026-11-22\n"
                  "kind,seqs,new_tokens,attn_units,context_tokens,ms\nprefill,1,16,128,16,2.0\n"}},
       {"gpu", "validate", "--samples", "@/s.csv"}, "no built-in profile for qwen2.5-7b"},
      // replay --steps-out
      {"replay --steps-every 0", {}, {"replay", "--requests", "5", "--steps-out", "@/out/s.csv", "--steps-every", "0"},
       "--steps-every"},
  };
}

bool dir_empty_or_absent(const std::string& dir, std::string& what) {
  if (!fs::exists(dir)) return true;
  bool empty = true;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    what += e.path().filename().string() + " ";
    empty = false;
  }
  return empty;
}

}  // namespace

TEST_CASE("every malformed input or argument exits 2 with a located one-line message and writes nothing",
          "[hardening][cli]") {
  const std::string traces = fs::path(data_path("traces/native_small.jsonl")).parent_path().string();
  const auto cases = bad_cases();
  REQUIRE(cases.size() >= 40);
  for (const BadCase& c : cases) {
    SECTION(c.name) {
      const std::string dir = temp_dir("bad");
      for (const auto& [name, text] : c.files) {
        const fs::path p = fs::path(dir) / name;
        fs::create_directories(p.parent_path());
        std::string body = text;
        // Truncated compressed files: the first bytes of a real one.
        if (name == "t.jsonl.gz") body = head_bytes(traces + "/mooncake_small.jsonl.gz", 100);
        if (name == "t.jsonl.zst") body = head_bytes(traces + "/native_small.jsonl.zst", 80);
        if (name == "k.tar.gz") body = head_bytes(traces + "/kvcache.tar.gz", 200);
        std::ofstream(p, std::ios::binary) << body;
      }
      const std::string out = dir + "/out";
      std::vector<std::string> args;
      for (const auto& a : c.args) args.push_back(subst(a, dir, traces));
      if (args[0] == "generate" || args[0] == "gpu") fs::create_directories(out);  // -o / --out names a file in it
      if (args[0] == "replay" || args[0] == "analyze" || args[0] == "compare") {
        args.push_back("--out");
        args.push_back(out);
      }
      const auto r = run_cli(args);
      INFO("args: " << [&] { std::string s; for (auto& a : args) s += a + " "; return s; }());
      INFO("stderr: " << r.err);
      CHECK(r.rc == 2);
      const std::string first = r.err.substr(0, r.err.find('\n'));
      CHECK(first.rfind("prefixsim", 0) == 0);
      CHECK(first.find(subst(c.expect, dir, traces)) != std::string::npos);
      // One line, except a usage error which appends the usage.
      if (first.find("usage:") == std::string::npos) CHECK(r.err.find('\n') == r.err.size() - 1);
      std::string left;
      CHECK(dir_empty_or_absent(out, left));
      INFO("left behind: " << left);
      fs::remove_all(dir);
    }
  }
}

TEST_CASE("SIGINT during a long replay exits 130, says it was interrupted and leaves no report",
          "[hardening][cli]") {
  const char* bin = std::getenv("PREFIXSIM_BIN");
  REQUIRE(bin != nullptr);
  const std::string dir = temp_dir("sigint");
  const std::string out = dir + "/out";
  const std::string err_path = dir + "/stderr.txt";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    FILE* e = std::freopen(err_path.c_str(), "w", stderr);
    if (!e) ::_exit(99);
    if (!std::freopen("/dev/null", "w", stdout)) ::_exit(99);
    ::execl(bin, bin, "replay", "--workload", "chatbot", "--requests", "2000000", "--out", out.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(98);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int status = 0;
  // The replay of 2M requests takes far longer than 0.5 s; if it already
  // ended, the test cannot tell anything, which is a failure of the setup.
  REQUIRE(::waitpid(pid, &status, WNOHANG) == 0);
  REQUIRE(::kill(pid, SIGINT) == 0);
  // Bounded wait: an interrupted replay must stop promptly.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL("replay did not stop within 60 s of SIGINT");
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const std::string err = prefixsim::test::read_file(err_path);
  INFO("stderr: " << err);
  CHECK(err.find("interrupted") != std::string::npos);
  std::string left;
  CHECK(dir_empty_or_absent(out, left));
  INFO("left behind: " << left);
  fs::remove_all(dir);
}
