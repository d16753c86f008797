// Bad inputs across every format and command: each must exit 2 with a
// one-line message naming the file:line or the field, leave nothing in the
// output directory (no report, no *.tmp.* file) and not crash. Also: SIGINT
// during a long replay, and absurd sizes refused up front.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
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
  // Optional: prepares the case dir (FIFOs, links), and checks afterwards
  // that what was at an output path is still there as it was.
  std::function<void(const std::string& dir)> setup = {};
  std::function<void(const std::string& dir)> intact = {};
};

// What an output path held before a refused command: a FIFO, or a symlink
// to a file holding "keep".
void make_fifo(const std::string& dir) { REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0644) == 0); }
void fifo_intact(const std::string& dir) {
  struct stat st {};
  REQUIRE(::lstat((dir + "/fifo").c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK_FALSE(fs::exists(dir + "/fifo.tmp." + std::to_string(::getpid())));
}
void make_link(const std::string& dir) {
  std::ofstream(dir + "/target") << "keep";
  fs::create_symlink(dir + "/target", dir + "/link");
}
void link_intact(const std::string& dir) {
  CHECK(fs::is_symlink(dir + "/link"));
  CHECK(prefixsim::test::read_file(dir + "/target") == "keep");
}

std::string subst(std::string a, const std::string& dir, const std::string& traces) {
  for (size_t p; (p = a.find('@')) != std::string::npos;) a.replace(p, 1, dir);
  for (size_t p; (p = a.find('%')) != std::string::npos;) a.replace(p, 1, traces);
  return a;
}

std::string head_bytes(const std::string& path, size_t n) {
  return prefixsim::test::read_file(path).substr(0, n);
}

const std::string kLine = R"({"id":"a","t":0,"tokens":[1,2,3],"output_len":2})";
// The smallest report `check` accepts (a cache-mode run: no latency).
const std::string kReport =
    R"({"schema":"prefixsim.report/1","mode":"cache","prefix_cache":{"hit_rate":0.5,"block_hit_rate":0.5},)"
    R"("latency_ms":null,"throughput":null,"engine":null})";
const std::string kMoon = R"({"timestamp":0,"input_length":100,"output_length":1,"hash_ids":[1]})";

// n bytes of `fill`, gzip- or zstd-compressed: a small file that
// decompresses to far more (a compression bomb at small scale).
std::string gzip_of(size_t n, char fill) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  const std::string chunk(1 << 16, fill);
  std::string out;
  char buf[1 << 16];
  for (size_t left = n; ;) {
    const size_t k = std::min(left, chunk.size());
    left -= k;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    z.avail_in = static_cast<uInt>(k);
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    int rc = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = deflate(&z, flush);
      out.append(buf, sizeof buf - z.avail_out);
    } while (z.avail_out == 0);
    if (flush == Z_FINISH) {
      REQUIRE(rc == Z_STREAM_END);
      break;
    }
  }
  deflateEnd(&z);
  return out;
}

std::string zstd_of(size_t n, char fill) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  const std::string chunk(1 << 16, fill);
  std::string out;
  std::string buf(ZSTD_CStreamOutSize(), '\0');
  for (size_t left = n; ;) {
    const size_t k = std::min(left, chunk.size());
    left -= k;
    ZSTD_inBuffer in{chunk.data(), k, 0};
    const ZSTD_EndDirective end = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
    size_t rem = 0;
    do {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      rem = ZSTD_compressStream2(c, &o, &in, end);
      REQUIRE_FALSE(ZSTD_isError(rem));
      out.append(buf.data(), o.pos);
    } while (end == ZSTD_e_end ? rem != 0 : in.pos < in.size);
    if (left == 0) break;
  }
  ZSTD_freeCCtx(c);
  return out;
}

// A ustar header: `size` in octal (at most 8 GiB - 1), type '0' file, '2'
// symlink; the checksum computed as tar does.
std::string tar_header(const std::string& name, uint64_t size, char type = '0') {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  auto octal = [&](size_t at, size_t width, uint64_t v) {
    std::string s(width - 1, '0');
    for (size_t i = width - 1; i-- > 0; v >>= 3) s[i] = static_cast<char>('0' + (v & 7));
    h.replace(at, width - 1, s);
  };
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, 0);
  h[156] = type;
  if (type == '2') h.replace(157, 8, "elsewhere");
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(263, 2, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char ch : h) sum += ch;
  char chk[8];
  std::snprintf(chk, sizeof chk, "%06o", sum);
  h.replace(148, 7, std::string(chk, 6) + '\0');
  return h;
}

std::string conversation(int i) {
  return R"({"id":"c)" + std::to_string(i) + R"(","requests":[{"t":0,"in":100,"out":5,"hash_ids":[1]}]})";
}

// A tar of conversations c0..c{n-1}.json; `end` adds the end-of-archive blocks.
std::string tar_of(int n, bool end = true) {
  std::string t;
  for (int i = 0; i < n; ++i) {
    const std::string body = conversation(i);
    t += tar_header("c" + std::to_string(i) + ".json", body.size()) + body;
    t += std::string((512 - body.size() % 512) % 512, '\0');
  }
  if (end) t += std::string(1024, '\0');
  return t;
}

// Ten levels of nine aliases (431 bytes): 9^10 nodes if walked expanded. Level
// 6, the bomb's line 7, is where the expansion passes 10^6 nodes.
std::string alias_bomb() {
  std::string y = "a: &a [x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = i == 1 ? "a" : "l" + std::to_string(i - 1), name = "l" + std::to_string(i);
    y += name + ": &" + name + " [*" + prev;
    for (int k = 1; k < 9; ++k) y += ",*" + prev;
    y += "]\n";
  }
  return y;
}

// One model entry of the built-in schema; `extra` is appended to it.
std::string model_entry(const std::string& name, const std::string& extra = "") {
  return "models:\n  - name: " + name +
         "\n    source: s\n    layers: 28\n    hidden: 3584\n    heads: 28\n    kv_heads: 4\n    head_dim: 128\n"
         "    intermediate: 18944\n    vocab: 152064\n    tied_embeddings: false\n    params: 7615616512\n"
         "    dtype_bytes: 2\n" + extra;
}

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
      {"replay --kv-offloading-size 1e308 (a number quoted short)", {},
       {"replay", "%/mooncake_small.jsonl", "--kv-offloading-size", "1e308"}, "--kv-tier cpu: 1e+308 GiB is more than"},
      {"replay --kv-offloading-size 1e-9", {}, {"replay", "%/mooncake_small.jsonl", "--kv-offloading-size", "1e-09"},
       "--kv-tier cpu: 1e-09 GiB holds no block"},
      {"replay --warmup-seconds 1e300 (too large, not too small)", {}, {"replay", T, "--warmup-seconds", "1e300"},
       "--warmup-seconds: must be in [0, 9.2e9) seconds"},
      {"replay --rate 1e300", {}, {"replay", T, "--rate", "1e300"}, "--rate: must be in (0, 1e9) requests per second"},
      {"replay --conversation-rate 1e-300 (conversations past the clock's range)", {},
       {"replay", "%/kvcache.tar.gz", "--conversation-rate", "1e-300"},
       "--conversation-rate 1e-300 starts this conversation past the simulated clock's range"},
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
      {"replay Bailian repeated chat_id",
       {{"b.jsonl", std::string(R"({"chat_id":1,"parent_chat_id":-1,"timestamp":0,"input_length":16,)"
                                R"("output_length":1,"type":"text","turn":1,"hash_ids":[1]})") +
                        "\n" +
                        R"({"chat_id":1,"parent_chat_id":-1,"timestamp":1,"input_length":16,)"
                        R"("output_length":1,"type":"text","turn":1,"hash_ids":[2]})" + "\n"}},
       {"replay", "@/b.jsonl"}, "b.jsonl:2: field \"chat_id\": 1 appears on an earlier line too"},
      {"replay --enable-expert-parallel on a dense model", {},
       {"replay", T, "--replicas", "2", "--enable-expert-parallel"}, "--enable-expert-parallel: llama-3.1-8b"},
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
      // A flag shared with a run has the run's range (the scenario table) in every command.
      {"generate zero requests", {}, {"generate", "chatbot", "--requests", "0", "-o", "@/out/t.jsonl"},
       "--requests: must be in [1, 2^40]"},
      {"analyze a block size past the table's range", {}, {"analyze", T, "--block-size", "5000"},
       "--block-size: must be in [1, 4096]"},
      {"analyze a trace block size past the table's range", {}, {"analyze", T, "--trace-block-size", "-1"},
       "--trace-block-size: must be in [1, 2^20]"},
      {"catalog a block size past the table's range", {}, {"catalog", "--block-size", "5000"},
       "--block-size: must be in [1, 4096]"},
      {"catalog a TP past the table's range", {}, {"catalog", "--tp", "65"}, "--tp: must be in [1, 64]"},
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
      {"replay steps written over the run's own report", {},
       {"replay", "--steps-out", "@/out/./report.json", "--requests", "10"}, "--steps-out: "},
      {"replay a KV tier named in bytes that are not UTF-8", {}, {"replay", "--kv-tier", "s\xff:size=1,read=5", "--requests", "10"},
       "--kv-tier: must be valid UTF-8"},
      {"plan a KV tier named in bytes that are not UTF-8", {},
       {"plan", "%/mooncake_small.jsonl", "--slo", "ttft_p99=2s", "--kv-tier", "s\xff:size=1,read=5", "--out", "@/out"},
       "--kv-tier: must be valid UTF-8"},
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
      {"gpu calibrate --out the samples file", {{"s.csv", "# prefixsim.calibration-samples/1\n"}},
       {"gpu", "calibrate", "--samples", "@/s.csv", "--out", "@/s.csv"}, "--out @/s.csv: is also an input", {},
       [](const std::string& d) {
         CHECK(prefixsim::test::read_file(d + "/s.csv") == "# prefixsim.calibration-samples/1\n");
       }},
      {"gpu calibrate --out a FIFO", {}, {"gpu", "calibrate", "--samples", "@/nosuch.csv", "--out", "@/fifo"},
       "--out @/fifo: is a FIFO", make_fifo, fifo_intact},
      {"gpu calibrate without --samples", {}, {"gpu", "calibrate", "--out", "@/out/profile.json"}, "--samples"},
      {"gpu unknown subcommand", {}, {"gpu", "measure"}, "unknown subcommand 'measure'"},
      {"gpu validate without --samples", {}, {"gpu", "validate"}, "--samples"},
      {"gpu validate with a --profile for another model",
       {{"s.csv", "# prefixsim.calibration-samples/1\n# gpu.name: NVIDIA H100 80GB HBM3\n# gpu.sm_count: 132\n"
                  "# gpu.sm_clock_mhz: 1980\n# gpu.mem_clock_mhz: 2619\n# gpu.driver: 1\n# gpu.cuda: 13.0\n"
                  "# model: qwen2.5-7b\n# tp: 1\n# block_size: 16\n# date: 2026-11-22\n"
                  "kind,seqs,new_tokens,attn_units,context_tokens,ms\nprefill,1,16,128,16,2.0\n"}},
       {"gpu", "validate", "--samples", "@/s.csv"}, "no built-in profile for qwen2.5-7b"},
      // Outputs only to regular files or new paths (a device node is like the FIFO).
      {"generate -o a FIFO", {}, {"generate", "chatbot", "--requests", "5", "-o", "@/fifo"}, "-o @/fifo: is a FIFO",
       make_fifo, fifo_intact},
      {"generate -o a symlink", {}, {"generate", "chatbot", "--requests", "5", "-o", "@/link"},
       "-o @/link: is a symbolic link", make_link, link_intact},
      {"generate -o a directory", {}, {"generate", "chatbot", "--requests", "5", "-o", "@/out"},
       "-o @/out: is a directory"},
      {"replay --steps-out a FIFO", {}, {"replay", "--requests", "5", "--steps-out", "@/fifo"},
       "--steps-out @/fifo: is a FIFO", make_fifo, fifo_intact},
      {"replay --out whose report.json is a symlink", {}, {"replay", "--requests", "5", "--out", "@/o2"},
       "--out @/o2/report.json: is a symbolic link",
       [](const std::string& d) {
         fs::create_directories(d + "/o2");
         make_link(d);
         fs::create_symlink(d + "/target", d + "/o2/report.json");
       },
       [](const std::string& d) {
         link_intact(d);
         CHECK(fs::is_symlink(d + "/o2/report.json"));
         CHECK_FALSE(fs::exists(d + "/o2/series.csv"));
       }},
      {"replay --out a regular file", {{"file", "keep"}}, {"replay", "--requests", "5", "--out", "@/file"},
       "--out @/file: is a regular file, not a directory", {},
       [](const std::string& d) { CHECK(prefixsim::test::read_file(d + "/file") == "keep"); }},
      {"analyze --graphviz a FIFO", {}, {"analyze", T, "--graphviz", "@/fifo"}, "--graphviz @/fifo: is a FIFO",
       make_fifo, fifo_intact},
      {"check --junit a symlink", {{"r.json", "{}"}, {"b.json", "{}"}},
       {"check", "@/r.json", "--baseline", "@/b.json", "--junit", "@/link"},
       "--junit @/link: is a symbolic link", make_link, link_intact},
      // An output path that is also an input.
      {"analyze --graphviz TRACE", {{"t.jsonl", kLine + "\n"}}, {"analyze", "@/t.jsonl", "--graphviz", "@/t.jsonl"},
       "--graphviz @/t.jsonl: is also an input", {},
       [](const std::string& d) { CHECK(prefixsim::test::read_file(d + "/t.jsonl") == kLine + "\n"); }},
      {"generate w.yaml -o w.yaml", {{"w.yaml", "pattern: chatbot\nrequests: 5\n"}},
       {"generate", "@/w.yaml", "-o", "@/w.yaml"}, "-o @/w.yaml: is also an input", {},
       [](const std::string& d) {
         CHECK(prefixsim::test::read_file(d + "/w.yaml") == "pattern: chatbot\nrequests: 5\n");
       }},
      {"check R --baseline R --update-baseline", {{"r.json", "{}"}},
       {"check", "@/r.json", "--baseline", "@/r.json", "--update-baseline"}, "--baseline: '@/r.json' is the report itself",
       {}, [](const std::string& d) { CHECK(prefixsim::test::read_file(d + "/r.json") == "{}"); }},
      {"replay --model-file OUT/report.json", {{"report.json", "models: []\n"}},
       {"replay", T, "--model-file", "@/report.json", "--out", "@"}, "--out @/report.json: is also an input", {},
       [](const std::string& d) { CHECK(prefixsim::test::read_file(d + "/report.json") == "models: []\n"); }},
      {"compare --model-file OUT/compare.md", {{"compare.md", "models: []\n"}},
       {"compare", T, "--model-file", "@/compare.md", "--out", "@"}, "--out @/compare.md: is also an input", {},
       [](const std::string& d) { CHECK(prefixsim::test::read_file(d + "/compare.md") == "models: []\n"); }},
      {"plan --gpu-file OUT/plan.json", {{"plan.json", "gpus: []\n"}},
       {"plan", T, "--slo", "ttft_p99=2s", "--gpu-file", "@/plan.json", "--out", "@"},
       "--out @/plan.json: is also an input", {},
       [](const std::string& d) { CHECK(prefixsim::test::read_file(d + "/plan.json") == "gpus: []\n"); }},
      {"replay --steps-out the trace", {{"t.jsonl", kLine + "\n"}}, {"replay", "@/t.jsonl", "--steps-out", "@/t.jsonl"},
       "--steps-out @/t.jsonl: is also an input", {},
       [](const std::string& d) { CHECK(prefixsim::test::read_file(d + "/t.jsonl") == kLine + "\n"); }},
      // Bounded input: line length, decompressed size, tar member sizes.
      {"replay /dev/zero (one endless line)", {}, {"replay", "/dev/zero"},
       "/dev/zero:1: line longer than 268435456 bytes (256 MiB)"},
      {"replay a zstd bomb (a 20 MB line) under --max-line-bytes 1 MiB", {{"b.jsonl.zst", zstd_of(20 << 20, 'x')}},
       {"replay", "@/b.jsonl.zst", "--max-line-bytes", "1048576"}, "b.jsonl.zst:1: line longer than 1048576 bytes"},
      {"replay a gzip bomb (20 MB of newlines) under --max-input-bytes 1 MiB", {{"g.jsonl.gz", gzip_of(20 << 20, '\n')}},
       {"replay", "@/g.jsonl.gz", "--max-input-bytes", "1048576"}, "g.jsonl.gz: input larger than 1048576 bytes"},
      {"replay a tar member claiming 8 GiB", {{"k.tar", tar_header("c.json", (uint64_t{1} << 33) - 1) + conversation(0)}},
       {"replay", "@/k.tar"}, "k.tar/c.json:1: conversation file larger than"},
      {"replay a tar whose members add up past --max-input-bytes", {{"k.tar", tar_header("c.json", 5000)}},
       {"replay", "@/k.tar", "--max-input-bytes", "4096"}, "the archive's members add up to more than 4096 bytes"},
      {"replay --profile /dev/zero (a file read whole)", {}, {"replay", T, "--profile", "/dev/zero"},
       "/dev/zero: the profile is larger than 268435456 bytes (256 MiB)"},
      {"replay --config of a YAML file past --max-line-bytes", {{"s.yaml", "mode: cache\n" + std::string(4000, '#') + "\n"}},
       {"replay", "--config", "@/s.yaml", "--max-line-bytes", "2048"}, "s.yaml: the scenario is larger than 2048 bytes"},
      {"replay --max-line-bytes 0", {}, {"replay", T, "--max-line-bytes", "0"}, "--max-line-bytes"},
      {"generate --rate 1e-9 (arrivals past the int64 nanosecond clock)", {},
       {"generate", "chatbot", "--rate", "1e-9", "-o", "@/out/t.jsonl"}, "--rate: 2000 requests at 1e-09/s"},
      {"replay workload --rate 1e-9", {}, {"replay", "--rate", "1e-9"}, "--rate"},
      {"replay trace --rate 1e-300 (the rescaled arrivals overflow: --rate is named, not --time-scale)", {},
       {"replay", "%/agentic_mooncake_small.jsonl", "--rate", "1e-300"}, "--rate: request"},
      {"replay --model-file a directory", {}, {"replay", "--model-file", "@"}, "is a directory, not the catalog file"},
      {"replay --gpu-file a directory", {}, {"replay", "--gpu-file", "@"}, "is a directory, not the catalog file"},
      {"replay a trace folder with a *.json symlink loop", {{"kv/trace_0000.json", conversation(0)}},
       {"replay", "@/kv"}, "loop.json:1: cannot read conversation file",
       [](const std::string& d) {
         fs::create_directories(d + "/kv");
         fs::create_symlink("loop.json", d + "/kv/loop.json");
       }},
      // kv-cache-tester: nothing skipped silently.
      {"replay a tar with a corrupt member header mid-archive", {{"k.tar", [] {
          std::string t = tar_of(3);
          t[1024 + 5] = 'X';  // the second member's name, after its checksum was computed
          return t;
        }()}},
       {"replay", "@/k.tar"}, "k.tar:1: corrupt archive"},
      {"replay a tar truncated at a member boundary", {{"k.tar", tar_of(2, false)}}, {"replay", "@/k.tar"},
       "k.tar:1: truncated archive"},
      {"replay a tar whose *.json member is a symlink",
       {{"k.tar", tar_of(1, false) + tar_header("link.json", 0, '2') + std::string(1024, '\0')}},
       {"replay", "@/k.tar"}, "k.tar/link.json:1: archive member is not a regular file"},
      {"replay a trace folder with a dangling *.json link", {{"kv/trace_0000.json", conversation(0)}},
       {"replay", "@/kv"}, "gone.json:1: cannot read conversation file",
       [](const std::string& d) {
         fs::create_directories(d + "/kv");
         fs::create_symlink("nowhere", d + "/kv/gone.json");
       }},
      {"replay a trace folder with a FIFO named *.json", {{"kv/trace_0000.json", conversation(0)}},
       {"replay", "@/kv"}, "fifo.json:1: is a FIFO",
       [](const std::string& d) {
         fs::create_directories(d + "/kv");
         REQUIRE(::mkfifo((d + "/kv/fifo.json").c_str(), 0644) == 0);
       }},
      // Contradictions and empty values.
      {"replay an empty TRACE", {}, {"replay", ""}, "TRACE: an empty path"},
      {"replay scenario with an empty trace", {{"s.yaml", "trace: \"\"\n"}}, {"replay", "--config", "@/s.yaml"},
       "s.yaml:1: trace: an empty path"},
      {"replay --workload with a trace", {}, {"replay", T, "--workload", "chatbot"}, "--workload: give a trace or a workload"},
      {"replay --rate with a trace read from stdin", {}, {"replay", "-", "--rate", "5"},
       "--rate: a trace read from stdin cannot be measured first"},
      {"replay --rate and --time-scale together", {}, {"replay", T, "--rate", "5", "--time-scale", "2"},
       "--time-scale: give --rate or --time-scale, not both"},
      {"replay --time-scale with a workload", {}, {"replay", "--time-scale", "2"}, "--time-scale: rescales a trace's"},
      {"replay --time-scale zero", {}, {"replay", T, "--time-scale", "0"}, "--time-scale: must be in (0, 1e6]"},
      {"replay --rate on a trace whose requests arrive at one instant", {{"one.jsonl",
        "{\"id\":\"a\",\"t\":1,\"tokens\":[1,2],\"output_len\":1}\n{\"id\":\"b\",\"t\":1,\"tokens\":[1,2],\"output_len\":1}\n"}},
       {"replay", "@/one.jsonl", "--rate", "5"}, "--rate: the trace's requests all arrive at one instant"},
      {"compare --tp out of range", {}, {"compare", T, "--policies", "lru", "--kv-blocks", "100", "--tp", "0"},
       "--tp: must be in [1, 64]"},
      {"replay a policy parameter given twice", {}, {"replay", T, "--policy", "s3fifo:small=0.1,small=0.2"},
       "--policy s3fifo: parameter 'small' given twice"},
      {"compare --kv-blocks with a trailing comma", {}, {"compare", T, "--policies", "lru", "--kv-blocks", "50,"},
       "--kv-blocks: empty entry in '50,'"},
      {"compare --policies with a trailing comma", {}, {"compare", T, "--policies", "lru,", "--kv-blocks", "50"},
       "--policies: empty entry"},
      {"replay scenario YAML with a key given twice", {{"s.yaml", "mode: cache\nmode: engine\n"}},
       {"replay", "--config", "@/s.yaml"}, "s.yaml:2: mode: key given twice"},
      {"replay scenario YAML with a second document", {{"s.yaml", "mode: cache\n---\nmode: engine\n"}},
       {"replay", "--config", "@/s.yaml"}, "s.yaml:3: a second YAML document"},
      // yaml-cpp 0.7's LoadAll loops for ever on these (found by fuzz_scenario_yaml).
      {"replay scenario YAML starting with a comma", {{"s.yaml", ",wloadcache\nrolicy: r2\n"}},
       {"replay", "--config", "@/s.yaml"}, "s.yaml:1: invalid YAML: the parser cannot read past column 1"},
      {"generate workload YAML with a stray brace", {{"w.yaml", "pattern: chatbot\n}\n"}},
       {"generate", "@/w.yaml", "-o", "@/out/t.jsonl"}, "w.yaml:2: invalid YAML"},
      // A list or mapping as a key ("? a: 1") threw yaml-cpp's "bad
      // conversion", exit 3 (found by fuzz_scenario_yaml).
      {"replay scenario YAML with a mapping as a key", {{"s.yaml", "scheduler:\n  ? enable_chunked_prefill: true\n"}},
       {"replay", "--config", "@/s.yaml"}, "s.yaml:2: scheduler: a key must be a plain name"},
      {"sweep grid with a list as a key", {{"g.yaml", "base:\n  ? [mode]\n  : cache\naxes:\n  policy: [lru]\n"}},
       {"sweep", "@/g.yaml", "--out", "@/out/s"}, "g.yaml:2: base: a key must be a plain name"},
      {"catalog file with a mapping as a key", {{"m.yaml", "models:\n  - ? {name: x}\n    : 1\n"}},
       {"catalog", "--check", "@/m.yaml"}, "m.yaml:2: models[0]: a key must be a plain name"},
      // Alias bombs: each YAML reader used to spin for minutes walking the
      // expanded tree; the one loader refuses them at once.
      {"sweep grid that is an alias bomb", {{"g.yaml", "axes:\n  policy: [lru]\n" + alias_bomb()}},
       {"sweep", "@/g.yaml", "--out", "@/out/s"}, "g.yaml:9: YAML expands to more than 1000000 nodes (aliases)"},
      {"replay --config an alias bomb", {{"s.yaml", alias_bomb()}}, {"replay", "--config", "@/s.yaml"},
       "s.yaml:7: YAML expands to more than 1000000 nodes (aliases)"},
      {"catalog --check an alias bomb", {{"m.yaml", "models:\n" + alias_bomb()}}, {"catalog", "--check", "@/m.yaml"},
       "m.yaml:8: YAML expands to more than 1000000 nodes (aliases)"},
      {"replay --model-file an alias bomb", {{"m.yaml", "models:\n" + alias_bomb()}},
       {"replay", "--model-file", "@/m.yaml"}, "m.yaml:8: YAML expands to more than 1000000 nodes (aliases)"},
      {"catalog --check a model entry with a field given twice", {{"m.yaml", model_entry("m", "    layers: 30\n")}},
       {"catalog", "--check", "@/m.yaml"}, "m.yaml:14: models[0].layers: key given twice"},
      {"catalog --model-file a model whose name is not UTF-8", {{"m.yaml", model_entry("bad\xff")}},
       {"catalog", "--model-file", "@/m.yaml", "--json"}, "m.yaml:2: models[0].name: must be valid UTF-8"},
      {"catalog --check a GPU whose description is not UTF-8",
       {{"g.yaml", "gpus:\n  - name: g\n    description: \"\xed\xa0\x80\"\n"}}, {"catalog", "--check", "@/g.yaml"},
       "g.yaml:3: gpus[0].description: must be valid UTF-8"},
      {"catalog --check a model named \"\"", {{"m.yaml", model_entry("\"\"")}}, {"catalog", "--check", "@/m.yaml"},
       "m.yaml:2: field 'name' must not be empty"},
      {"replay --profile with a coefficient given twice",
       {{"p.json", "{\"schema\": \"prefixsim.profile/1\",\n \"coefficients\": {\"overhead_s\": 0.001,\n"
                   "  \"overhead_s\": 0.002}}"}},
       {"replay", T, "--profile", "@/p.json"}, "p.json:3: field 'coefficients.overhead_s' given twice"},
      {"replay --profile a step model with a term given twice",
       {{"sm.json", "{\"schema\": \"prefixsim.step_model/1\", \"terms\": {\"bw_inv\": 1,\n \"bw_inv\": 2}}"}},
       {"replay", T, "--profile", "@/sm.json"}, "sm.json:2: field 'terms.bw_inv' given twice"},
      {"generate workload YAML with a nested key given twice",
       {{"w.yaml", "pattern: chatbot\narrival:\n  rate: 2\n  rate: 3\n"}}, {"generate", "@/w.yaml", "-o", "@/out/t.jsonl"},
       "w.yaml:4: arrival.rate: key given twice"},
      {"check an empty baseline", {{"r.json", kReport}, {"b.json", R"({"schema":"prefixsim.baseline/1","metrics":{}})"}},
       {"check", "@/r.json", "--baseline", "@/b.json"}, "b.json: no metrics to check"},
      {"check a baseline with a hit rate of -5",
       {{"r.json", kReport}, {"b.json", R"({"schema":"prefixsim.baseline/1","metrics":{"hit_rate":-5}})"}},
       {"check", "@/r.json", "--baseline", "@/b.json"},
       "b.json: field 'metrics.hit_rate' is -5.0, expected a ratio in [0, 1]"},
      // plan: a fleet shape that cannot run is refused before the search,
      // as replay refuses it (not "no fleet meets the SLO" with no runs)
      {"plan --routers with a router twice", {},
       {"plan", T, "--slo", "ttft_p99=2s", "--routers", "kv-aware,kv-aware", "--out", "@/out"},
       "--routers: 'kv-aware' is given twice"},
      {"plan --routers empty", {}, {"plan", T, "--slo", "ttft_p99=2s", "--routers", "", "--out", "@/out"},
       "--routers: nothing given"},
      {"plan --tp 1,1", {}, {"plan", T, "--slo", "ttft_p99=2s", "--tp", "1,1", "--out", "@/out"},
       "--tp: '1' is given twice"},
      {"plan --tp -1", {}, {"plan", T, "--slo", "ttft_p99=2s", "--tp", "-1", "--out", "@/out"}, "--tp: '-1'"},
      {"plan --offload inf (no price)", {},
       {"plan", T, "--slo", "ttft_p99=2s", "--offload", "0,inf", "--out", "@/out"}, "--offload: 'inf' has no price"},
      {"plan --tp 3 (does not divide the heads)", {},
       {"plan", T, "--slo", "ttft_p99=2s", "--tp", "3", "--out", "@/out"}, "--tp: 3 does not divide"},
      {"plan --tp 1,3", {}, {"plan", T, "--slo", "ttft_p99=2s", "--tp", "1,3", "--out", "@/out"},
       "--tp: 3 does not divide"},
      // replay --steps-out
      {"replay --steps-every -1 (no wrap to 2^64 - 1)", {},
       {"replay", "--requests", "5", "--steps-out", "@/out/s.csv", "--steps-every", "-1"},
       "--steps-every: must be a non-negative integer, got '-1'"},
      {"replay --max-input-bytes=-1", {}, {"replay", T, "--max-input-bytes=-1"},
       "--max-input-bytes: must be a non-negative integer, got '-1'"},
      {"analyze --top -3", {}, {"analyze", T, "--top", "-3"}, "--top: must be a non-negative integer, got '-3'"},
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
      if (c.setup) c.setup(dir);
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
      const bool has_out = std::find(args.begin(), args.end(), "--out") != args.end();
      if (!has_out && (args[0] == "replay" || args[0] == "analyze" || args[0] == "compare")) {
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
      if (c.intact) c.intact(dir);
      for (const auto& e : fs::recursive_directory_iterator(dir))
        CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
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

namespace {

struct Spawned {
  int rc = -1;       // exit code, or 128 + signal
  std::string err;
};

enum class Stdout { kFile, kDevFull, kClosedPipe };

// Runs prefixsim with stdout on a file, on /dev/full or on a pipe whose
// reading end is already closed; optionally with a file-size limit (a disk
// that fills up after `fsize` bytes of any one file).
Spawned spawn(const std::vector<std::string>& args, Stdout where, rlim_t fsize = RLIM_INFINITY) {
  const char* bin = std::getenv("PREFIXSIM_BIN");
  REQUIRE(bin != nullptr);
  const std::string dir = temp_dir("spawn");
  const std::string err_path = dir + "/stderr.txt";
  int pipe_fds[2] = {-1, -1};
  if (where == Stdout::kClosedPipe) REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!std::freopen(err_path.c_str(), "w", stderr)) ::_exit(99);
    if (where == Stdout::kClosedPipe) {
      ::close(pipe_fds[0]);
      ::dup2(pipe_fds[1], 1);
      ::close(pipe_fds[1]);
    } else if (!std::freopen(where == Stdout::kDevFull ? "/dev/full" : (dir + "/stdout.txt").c_str(), "w", stdout)) {
      ::_exit(99);
    }
    if (fsize != RLIM_INFINITY) {
      ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
      const rlimit lim{fsize, fsize};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    std::vector<char*> argv{const_cast<char*>(bin)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin, argv.data());
    ::_exit(98);
  }
  if (where == Stdout::kClosedPipe) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Spawned r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = prefixsim::test::read_file(err_path);
  fs::remove_all(dir);
  return r;
}

std::string trace_dir() { return fs::path(data_path("traces/native_small.jsonl")).parent_path().string(); }

}  // namespace

TEST_CASE("output lost on standard output is exit 2 with a message, not a success", "[hardening][cli]") {
  if (!fs::exists("/dev/full")) PREFIXSIM_SKIP("no /dev/full");
  const std::string dir = temp_dir("stdout");
  REQUIRE(spawn({"replay", "--requests", "20", "--mode", "cache", "--quiet", "--out", dir + "/o"}, Stdout::kFile).rc ==
          0);
  const std::string report = dir + "/o/report.json";
  fs::copy_file(report, dir + "/o/copy.json");
  std::ofstream(dir + "/ops.jsonl") << R"({"op":"config","num_blocks":8,"block_size":4})" << "\n";
  const std::vector<std::vector<std::string>> cases = {
      {"catalog"},
      {"ops", dir + "/ops.jsonl"},
      {"check", report, "--baseline", dir + "/o/copy.json"},
      {"generate", "chatbot", "--requests", "50", "-o", "-"},
  };
  for (const auto& args : cases) {
    const Spawned r = spawn(args, Stdout::kDevFull);
    INFO(args[0] << ": " << r.err);
    CHECK(r.rc == 2);
    // generate -o - names the request it could not write.
    CHECK(r.err.find(args[0] == "generate" ? "cannot write trace output" : "standard output: write failed") !=
          std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
  fs::remove_all(dir);
}

TEST_CASE("compare and analyze writing to a closed pipe exit 2, not by SIGPIPE", "[hardening][cli]") {
  const std::string dir = temp_dir("sigpipe");
  const std::string trace = trace_dir() + "/native_small.jsonl";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"compare", trace, "--policies", "lru", "--kv-blocks", "100", "--out", dir + "/c"},
        std::vector<std::string>{"analyze", trace, "--out", dir + "/a"}}) {
    const Spawned r = spawn(args, Stdout::kClosedPipe);
    INFO(args[0] << ": " << r.err);
    CHECK(r.rc != 141);
    CHECK(r.rc == 2);
    CHECK(r.err.find("standard output: write failed") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("a run's output set appears whole or not at all when the disk fills up", "[hardening][cli]") {
  const std::string dir = temp_dir("fullset");
  // report.html inlines Chart.js (far over 64 KiB); the other files are smaller.
  const Spawned r = spawn({"replay", "--requests", "20", "--mode", "cache", "--quiet", "--out", dir + "/out"},
                          Stdout::kFile, 64 * 1024);
  INFO("stderr: " << r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.find("write failed") != std::string::npos);
  std::string left;
  CHECK(dir_empty_or_absent(dir + "/out", left));
  INFO("left behind: " << left);
  // An earlier run's outputs stay as they were when a rerun fails.
  const Spawned ok = spawn({"replay", "--requests", "20", "--mode", "cache", "--quiet", "--out", dir + "/out"},
                           Stdout::kFile);
  REQUIRE(ok.rc == 0);
  const std::string before = prefixsim::test::read_file(dir + "/out/report.json");
  const Spawned again = spawn({"replay", "--requests", "40", "--mode", "cache", "--quiet", "--out", dir + "/out"},
                              Stdout::kFile, 64 * 1024);
  CHECK(again.rc == 2);
  CHECK(prefixsim::test::read_file(dir + "/out/report.json") == before);
  for (const auto& e : fs::directory_iterator(dir + "/out"))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("SIGTERM and SIGINT during generate remove the temporary file and exit 143 / 130", "[hardening][cli]") {
  const char* bin = std::getenv("PREFIXSIM_BIN");
  REQUIRE(bin != nullptr);
  for (const int sig : {SIGTERM, SIGINT}) {
    const std::string dir = temp_dir("sigterm");
    const std::string out = dir + "/t.jsonl";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (!std::freopen((dir + "/stderr.txt").c_str(), "w", stderr)) ::_exit(99);
      ::execl(bin, bin, "generate", "chatbot", "--requests", "50000000", "-o", out.c_str(), static_cast<char*>(nullptr));
      ::_exit(98);
    }
    // Wait until the temporary exists and has grown, so the signal lands mid-write.
    const std::string tmp = out + ".tmp." + std::to_string(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(fs::exists(tmp) && fs::file_size(tmp) > 0) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const bool started = fs::exists(tmp);
    REQUIRE(::kill(pid, sig) == 0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(started);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + sig);
    CHECK(prefixsim::test::read_file(dir + "/stderr.txt").find("interrupted") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp));
    CHECK_FALSE(fs::exists(out));
    fs::remove_all(dir);
  }
}

TEST_CASE("pool sizes that cannot be allocated are refused up front, naming the flag", "[hardening][cli]") {
  // The check refuses a pool whose metadata (at least 44 B a block) would
  // need over half the machine's memory; on a machine large enough to
  // simulate these pools, there is nothing to refuse.
  const double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const std::string trace = trace_dir() + "/native_small.jsonl";
  const std::string dir = temp_dir("pool");
  struct Pool {
    std::vector<std::string> args;
    double blocks;
    const char* flag;
  };
  // llama-3.1-8b: 2 MiB a block, so 1e6 GiB is 5.12e8 blocks.
  for (const Pool& p : {Pool{{"--kv-blocks", "2147483647"}, 2147483647.0, "--kv-blocks: a pool of 2147483647 blocks"},
                        Pool{{"--kv-gb", "1e6"}, 5.12e8, "--kv-gb: a pool of 512000000 blocks"}}) {
    if (p.blocks * 44 <= physical / 2) {
      WARN("skipped " << p.flag << ": this machine could hold the pool");
      continue;
    }
    std::vector<std::string> args = {"replay", trace, "--out", dir + "/out"};
    args.insert(args.end(), p.args.begin(), p.args.end());
    const auto r = run_cli(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(p.flag) != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out"));
  }
  fs::remove_all(dir);
}

TEST_CASE("runs whose pools and tiers together cannot be allocated are refused up front, naming the flag to lower",
          "[hardening][cli]") {
  // Each pool alone passes its check; the run's sum (at least 44 B a block)
  // is over half the machine's memory unless the machine is larger still.
  const double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const std::string trace = trace_dir() + "/mooncake_small.jsonl";
  const std::string dir = temp_dir("runmem");
  struct Run {
    std::vector<std::string> args;
    double blocks;
    const char* expect;
  };
  // llama-3.1-8b: 2 MiB a block at TP 1, 1 MiB at TP 2 (64131 blocks of an
  // H100 at block size 16, about 16 times as many at block size 1).
  const std::vector<Run> runs = {
      {{"replay", trace, "--replicas", "3", "--kv-blocks", "100000000"}, 3e8, "--replicas: the run's KV pools"},
      {{"replay", trace, "--replicas", "4096", "--kv-blocks", "1000000"}, 4.096e9, "lower --replicas or --kv-blocks"},
      {{"replay", trace, "--replicas", "64", "--kv-offloading-size", "100000"}, 64 * 5.12e7,
       "lower --replicas, --gpu-mem-util or --kv-offloading-size"},
      {{"plan", trace, "--slo", "ttft_p99=1ms", "--tp", "2", "--max-replicas", "4096", "--block-size", "1"},
       4096 * 1.02e6, "--max-replicas: the run's KV pools"},
      {{"sweep", dir + "/g.yaml"}, 4.096e9, "g.yaml:3: replicas: --replicas: the run's KV pools"},
  };
  std::ofstream(dir + "/g.yaml") << "base: {trace: " << trace << ", kv_blocks: 1000000}\naxes:\n  replicas: [1, 4096]\n";
  for (const Run& run : runs) {
    if (run.blocks * 44 <= physical / 2) {
      std::string line;
      for (const std::string& a : run.args) line += " " + a;
      WARN("skipped" << line << ": this machine could hold the run");
      continue;
    }
    std::vector<std::string> args = run.args;
    args.insert(args.end(), {"--out", dir + "/out"});
    const auto started = std::chrono::steady_clock::now();
    const auto r = run_cli(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(run.expect) != std::string::npos);
    CHECK(r.err.find(" GiB of this machine's memory") != std::string::npos);
    // Refused before anything was allocated: at once, not after minutes of growth.
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
    CHECK_FALSE(fs::exists(dir + "/out"));
  }
  fs::remove_all(dir);
}

TEST_CASE("a rerun removes the temporary a killed run left beside its output", "[hardening][cli]") {
  const std::string dir = temp_dir("stale");
  // A pid that surely no longer exists: a child that has exited and been reaped.
  const pid_t dead = ::fork();
  REQUIRE(dead >= 0);
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = dir + "/t.jsonl.tmp." + std::to_string(dead);
  const std::string live = dir + "/t.jsonl.tmp." + std::to_string(::getpid());  // ours: alive, kept
  std::ofstream(stale) << "half a trace";
  std::ofstream(live) << "in progress";
  const auto r = run_cli({"generate", "chatbot", "--requests", "5", "-o", dir + "/t.jsonl"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(dir + "/t.jsonl"));
  fs::remove_all(dir);
}

TEST_CASE("property: a run touches no path but its outputs", "[hardening][cli][property]") {
  // Every file in the working tree (inputs, bystanders, a FIFO, a symlink)
  // is the same before and after each command, except the outputs it names.
  const std::string dir = temp_dir("touch");
  const std::string traces = trace_dir();
  fs::copy_file(traces + "/native_small.jsonl", dir + "/t.jsonl");
  std::ofstream(dir + "/bystander.txt") << "keep";
  std::ofstream(dir + "/w.yaml") << "pattern: chatbot\nrequests: 20\n";
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0644) == 0);
  fs::create_symlink(dir + "/bystander.txt", dir + "/link");
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string rel = fs::relative(e.path(), dir).string();
      if (rel.rfind("out", 0) == 0) continue;  // the outputs
      const auto st = e.symlink_status();
      files[rel] = fs::is_regular_file(st) ? prefixsim::test::read_file(e.path().string())
                                           : "type " + std::to_string(static_cast<int>(st.type()));
    }
    return files;
  };
  const auto before = snapshot();
  const std::vector<std::vector<std::string>> runs = {
      {"generate", dir + "/w.yaml", "-o", dir + "/out.jsonl"},
      {"replay", dir + "/t.jsonl", "--quiet", "--out", dir + "/out1", "--steps-out", dir + "/out1.csv"},
      {"replay", "--config", dir + "/w.yaml", "--out", dir + "/link"},  // refused (a bad config), nothing touched
      {"analyze", dir + "/t.jsonl", "--out", dir + "/out2", "--graphviz", dir + "/out2.dot"},
      {"compare", dir + "/t.jsonl", "--policies", "lru,fifo", "--kv-blocks", "50,100", "--quiet", "--out", dir + "/out3"},
      {"check", dir + "/out1/report.json", "--baseline", dir + "/out4.json", "--update-baseline"},
      {"generate", "chatbot", "--requests", "5", "-o", dir + "/fifo"},  // refused
      {"analyze", dir + "/t.jsonl", "--out", dir + "/out5", "--graphviz", dir + "/link"},  // refused
  };
  for (const auto& args : runs) {
    const auto r = run_cli(args);
    INFO(args[0] << " " << args[1] << ": rc " << r.rc << " " << r.err);
    CHECK((r.rc == 0 || r.rc == 2));
    CHECK(snapshot() == before);
  }
  CHECK_FALSE(fs::exists(dir + "/out5"));
  fs::remove_all(dir);
}

TEST_CASE("a kv-cache-tester folder and a tar of it in another order replay identically", "[hardening][cli]") {
  // Conversation start times are drawn in name order, whatever order an
  // archiver stored the members in.
  const std::string dir = temp_dir("order");
  fs::create_directories(dir + "/kv");
  std::vector<std::pair<std::string, std::string>> convs;
  for (int i = 0; i < 6; ++i) {
    const std::string id = std::to_string(i);
    // Each conversation its own size, so which one starts first shows.
    const std::string in = std::to_string(64 * (i + 2)), out = std::to_string(50 * (i + 1));
    std::string ids;
    for (int k = 0; k < i + 2; ++k) ids += (k ? "," : "") + std::to_string(k);
    convs.push_back({"c" + id + ".json", R"({"id":"c)" + id + R"(","requests":[{"t":0,"in":)" + in + R"(,"out":)" +
                                             out + R"(,"hash_ids":[)" + ids + R"(]}]})"});
    std::ofstream(dir + "/kv/" + convs.back().first) << convs.back().second;
  }
  std::string tar;  // members stored in reverse name order
  for (auto it = convs.rbegin(); it != convs.rend(); ++it) {
    tar += tar_header(it->first, it->second.size()) + it->second;
    tar += std::string((512 - it->second.size() % 512) % 512, '\0');
  }
  tar += std::string(1024, '\0');
  std::ofstream(dir + "/kv.tar", std::ios::binary) << tar;
  auto run = [&](const std::string& trace, const std::string& out) {
    const auto r = run_cli({"replay", trace, "--kv-blocks", "64", "--conversation-rate", "1000", "--quiet", "--out",
                            dir + "/" + out});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    auto j = nlohmann::json::parse(prefixsim::test::read_file(dir + "/" + out + "/report.json"));
    return nlohmann::json{{"prefix_cache", j["prefix_cache"]},
                          {"latency_ms", j["latency_ms"]},
                          {"fingerprint", j["run"]["event_fingerprint"]}};
  };
  CHECK(run(dir + "/kv", "folder") == run(dir + "/kv.tar", "tar"));
  fs::remove_all(dir);
}
