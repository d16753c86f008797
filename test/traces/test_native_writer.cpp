// The native JSONL writer: what it writes reads back identically, for
// hand-built requests with every field and for every fixture format.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sim/engine/vector_source.h"
#include "test/support.h"
#include "test/traces/trace_test_util.h"
#include "traces/native_writer.h"

using namespace prefixsim;
using namespace prefixsim::test;

namespace {

std::vector<Request> round_trip(const std::vector<Request>& reqs) {
  const std::string path = temp_dir("writer") + "/out.jsonl";
  {
    std::ofstream f(path, std::ios::binary);
    NativeJsonlWriter w(f);
    for (const Request& r : reqs) w.write(r);
    CHECK(w.written() == reqs.size());
  }
  TraceOptions opts;
  opts.format = "native";
  return read_all(path, opts);
}

}  // namespace

TEST_CASE("every request field survives a native write/read round trip", "[traces][writer]") {
  Request a;
  a.id = "quote\"and\\slash\nnewline";
  a.arrival = 123'456'789'012;  // 123.456789012 s: every nanosecond kept
  a.tokens = {0, 1, 2147483647, 5};
  a.prompt_len = 4;
  a.output_len = 2;
  a.output_tokens = {7, 8};
  a.session = "sess-é";
  a.extras.salt = "tenant";
  a.extras.lora = 12;
  a.extras.mm = {{BlockHash{0x1234, 0xfedcba9876543210ULL}, 0, 2}, {BlockHash{1, 0}, 2, 2}};
  Request b;
  b.id = "ids";
  b.arrival = 123'456'789'013;
  b.hash_ids = {0, 18446744073709551615ULL, 42};
  b.trace_block_size = 512;
  b.prompt_len = 1100;  // partial last id
  b.output_len = 0;
  Request c = b;
  c.id = "late";
  c.arrival = 86'400'000'000'007;  // a day and 7 ns
  check_same_requests(round_trip({a, b, c}), {a, b, c});
}

TEST_CASE("fixtures of every format convert to native JSONL without loss", "[traces][writer]") {
  for (const char* fixture : {"traces/native_small.jsonl", "traces/mooncake_small.jsonl", "traces/kvcache"}) {
    INFO(fixture);
    const auto original = read_all(data_path(fixture));
    check_same_requests(round_trip(original), original);
  }
}

TEST_CASE("write_native_jsonl drains a source and counts what it wrote", "[traces][writer]") {
  const auto reqs = read_all(data_path("traces/native_small.jsonl"));
  VectorSource src(reqs);
  std::ostringstream out;
  CHECK(write_native_jsonl(src, out) == reqs.size());
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == static_cast<long>(reqs.size()));
  CHECK(text.rfind(R"({"id":"a","t":0.0,"tokens":[1,2,3,4,5,6,7,8],"output_len":2,"output_tokens":[9,10],)", 0) == 0);
}

TEST_CASE("writing the same requests twice gives the same bytes", "[traces][writer]") {
  const auto reqs = read_all(data_path("traces/mooncake_small.jsonl"));
  std::string first, second;
  for (std::string* out : {&first, &second}) {
    VectorSource src(reqs);
    std::ostringstream s;
    write_native_jsonl(src, s);
    *out = s.str();
  }
  CHECK(first == second);
  CHECK(first.find("\"t\":0.25,") != std::string::npos);
}
