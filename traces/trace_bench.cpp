#include "traces/trace_bench.h"

#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "sim/base/error.h"
#include "traces/trace_bench_inputs.h"
#include "traces/byte_stream.h"
#include "traces/trace_reader.h"

namespace prefixsim {
namespace {

namespace fs = std::filesystem;

// CPU seconds of this process so far, all threads ("per CPU second" figures
// do not depend on what else the machine's cores are doing).
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string gzip_of(const std::string& s) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw InternalError("deflateInit2");
  std::string out(deflateBound(&z, s.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  z.avail_in = static_cast<uInt>(s.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw InternalError("deflate");
  return out;
}

std::string zstd_of(const std::string& s) {
  std::string out(ZSTD_compressBound(s.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3);
  if (ZSTD_isError(n)) throw InternalError("ZSTD_compress");
  out.resize(n);
  return out;
}

// The benchmark's files, written once per process into a temporary folder
// and removed at exit: each trace plain, gzip and zstd.
struct BenchFiles {
  std::string dir;
  BenchFiles() {
    dir = (fs::temp_directory_path() / ("prefixsim-trace-bench-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir);
  }
  ~BenchFiles() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  BenchFiles(const BenchFiles&) = delete;
  BenchFiles& operator=(const BenchFiles&) = delete;
  // dir/name, written from `text` on first use.
  void write_plain(const std::string& name, const std::string& text) {
    if (!fs::exists(dir + "/" + name)) std::ofstream(dir + "/" + name, std::ios::binary) << text;
  }
  // dir/name(.gz|.zst), written from `text` on first use.
  void write_all(const std::string& name, const std::string& text) {
    if (fs::exists(dir + "/" + name)) return;
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
    std::ofstream(dir + "/" + name + ".gz", std::ios::binary) << gzip_of(text);
    std::ofstream(dir + "/" + name + ".zst", std::ios::binary) << zstd_of(text);
  }
};

BenchFiles& bench_files() {
  static BenchFiles files;
  return files;
}

struct ReadCost {
  double cpu_s = 0, wall_s = 0;
  uint64_t requests = 0;
};

// Reads `path` `passes` times, each from a fresh open as a replay does
// (page-cached after the first pass: this measures parsing, not the disk).
ReadCost read_passes(const std::string& path, int passes, const TraceOptions& opts = {}) {
  ReadCost c;
  Request r;
  const double cpu0 = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < passes; ++i) {
    auto src = open_trace(path, opts);
    while (src->next(r)) ++c.requests;
  }
  c.cpu_s = process_cpu_seconds() - cpu0;
  c.wall_s = seconds_since(start);
  return c;
}

// The decompressor alone: `path` read through its ByteStream `passes`
// times, no lines, no parsing (where a compressed read's time goes).
double decode_cpu_s(const std::string& path, int passes) {
  std::vector<char> buf(size_t{1} << 20);
  const double cpu0 = process_cpu_seconds();
  for (int i = 0; i < passes; ++i) {
    auto in = open_byte_stream(path);
    while (in->read(buf.data(), buf.size()) > 0) {
    }
  }
  return process_cpu_seconds() - cpu0;
}

// One trace plain, gzip and zstd: MB of JSONL per CPU second, and what
// each compressed form costs over the plain one (CPU seconds and wall, ratios).
void measure(const std::string& tag, const std::string& text, int passes, std::vector<BenchMetric>& out) {
  BenchFiles& files = bench_files();
  files.write_all(tag + ".jsonl", text);
  const std::string base = files.dir + "/" + tag + ".jsonl";
  const double mb = static_cast<double>(text.size()) * passes / 1e6;
  const ReadCost plain = read_passes(base, passes);
  const ReadCost gz = read_passes(base + ".gz", passes);
  const ReadCost zst = read_passes(base + ".zst", passes);
  out.push_back({tag + "_mb_per_cpu_s", mb / plain.cpu_s, "MB/CPU-s"});
  out.push_back({tag + "_requests_per_cpu_s", static_cast<double>(plain.requests) / plain.cpu_s, "req/CPU-s"});
  out.push_back({tag + "_gzip_mb_per_cpu_s", mb / gz.cpu_s, "MB/CPU-s"});
  out.push_back({tag + "_gzip_over_plain", gz.cpu_s / plain.cpu_s, "x"});
  out.push_back({tag + "_zstd_mb_per_cpu_s", mb / zst.cpu_s, "MB/CPU-s"});
  out.push_back({tag + "_zstd_over_plain", zst.cpu_s / plain.cpu_s, "x"});
  // Wall time: a large compressed file decodes on its own thread (read_ahead.h).
  out.push_back({tag + "_gzip_over_plain_wall", gz.wall_s / plain.wall_s, "x"});
  out.push_back({tag + "_zstd_over_plain_wall", zst.wall_s / plain.wall_s, "x"});
  out.push_back({tag + "_gunzip_alone_mb_per_cpu_s", mb / decode_cpu_s(base + ".gz", passes), "MB/CPU-s"});
  out.push_back({tag + "_unzstd_alone_mb_per_cpu_s", mb / decode_cpu_s(base + ".zst", passes), "MB/CPU-s"});
}

// One reader on one input, plain only: MB of JSONL per CPU second (the
// decompressors cost the same whatever the format; the Mooncake rows show
// them).
void measure_plain(const std::string& tag, const std::string& text, const TraceOptions& opts, int passes,
                   std::vector<BenchMetric>& out) {
  BenchFiles& files = bench_files();
  files.write_plain(tag + ".jsonl", text);
  const ReadCost plain = read_passes(files.dir + "/" + tag + ".jsonl", passes, opts);
  out.push_back({tag + "_mb_per_cpu_s", static_cast<double>(text.size()) * passes / 1e6 / plain.cpu_s, "MB/CPU-s"});
}

std::vector<Request> read_requests(const std::string& path) {
  std::vector<Request> reqs;
  auto src = open_trace(path, {});
  Request r;
  while (src->next(r)) reqs.push_back(r);
  return reqs;
}

// The other JSONL readers on the requests of the Mooncake-format trace
// `tag` (already written by measure()): `tag`_native, _agentic, _bailian
// and _kvcache. The texts are made once per process.
void measure_forms(const std::string& tag, int passes, std::vector<BenchMetric>& out) {
  struct Forms {
    std::string native, agentic, bailian, kvcache;
  };
  static std::map<std::string, Forms> made;
  if (!made.count(tag)) {
    const std::vector<Request> reqs = read_requests(bench_files().dir + "/" + tag + ".jsonl");
    made[tag] = {as_native(reqs), as_agentic_mooncake(reqs), as_bailian(reqs), as_kvcache_jsonl(reqs)};
  }
  const Forms& f = made[tag];
  TraceOptions o;
  o.format = "native";
  measure_plain(tag + "_native", f.native, o, passes, out);
  o.format = "agentic-mooncake";
  measure_plain(tag + "_agentic", f.agentic, o, passes, out);
  o.format = "bailian";
  o.trace_block_size = 512;  // Mooncake's blocks, not Bailian's 16 tokens
  measure_plain(tag + "_bailian", f.bailian, o, passes, out);
  o.format = "kvcache-tester";
  measure_plain(tag + "_kvcache", f.kvcache, o, passes, out);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<BenchMetric> bench_trace_read(const BenchOptions& o) {
  std::vector<BenchMetric> out;
  // The Mooncake trace is small (3 MB): several passes per run keep the
  // timer honest. Its copy goes into the temporary folder beside its
  // compressed forms.
  const std::string mooncake = o.shared_dir + "/traces/mooncake/conversation_trace.jsonl";
  const int passes = o.quick ? 2 : 10;
  if (fs::exists(mooncake)) {
    measure("mooncake", read_text(mooncake), passes, out);
    measure_forms("mooncake", passes, out);
  }
  static const std::string ids19 = ids19_trace(o.quick ? 2'000 : 12'000);
  measure("ids19", ids19, o.quick ? 2 : 5, out);
  measure_forms("ids19", o.quick ? 2 : 5, out);
  static const std::string tokens = native_tokens_trace(o.quick ? 200 : 2'000);
  TraceOptions native;
  native.format = "native";
  measure_plain("native_tokens", tokens, native, o.quick ? 1 : 3, out);
  return out;
}

}  // namespace

std::vector<BenchCase> trace_bench_cases() {
  return {{"trace_read",
           "read JSONL traces into requests, MB of JSONL per CPU second: the Mooncake conversation trace and a "
           "generated Mooncake-format trace of 19-digit hash ids (12,000 requests), each plain, gzip and zstd, "
           "and the same requests as native, agentic-Mooncake, Bailian and kv-cache-tester JSONL (plain); a "
           "generated native trace of token prompts (2,000 requests)",
           bench_trace_read}};
}

}  // namespace prefixsim
