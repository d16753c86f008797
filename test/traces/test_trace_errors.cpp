// Bad trace input, as a table: every case throws InputError whose message
// starts with "FILE:LINE:" and names what is wrong. Nothing is skipped.
#include <catch2/catch.hpp>
#include <fstream>

#include "sim/base/error.h"
#include "test/support.h"
#include "test/traces/trace_test_util.h"

using namespace prefixsim;
using namespace prefixsim::test;

namespace {

struct BadCase {
  const char* name;
  std::string content;
  long line;         // the line the message must name
  const char* want;  // a substring of the message
  const char* format = "auto";
};

const std::string kMoon0 = R"({"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]})" "\n";
const std::string kNative0 = R"({"id":"x","t":0.5,"tokens":[1,2,3],"output_len":1})" "\n";

std::string slice(const std::string& s, size_t n) { return s.substr(0, n); }

void expect_error(const std::string& path, const TraceOptions& opts, long line, const std::string& want) {
  const std::string prefix = path + ":" + std::to_string(line) + ": ";
  try {
    read_all(path, opts);
    FAIL("no error for " << path);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.rfind(prefix, 0) == 0);
    CHECK(msg.find(want) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);  // one line
  }
}

}  // namespace

TEST_CASE("bad trace input is rejected with FILE:LINE and the field", "[traces][errors]") {
  const std::vector<BadCase> cases = {
      {"truncated line", kMoon0 + R"({"timestamp": 5, "input_length": 10, "output_le)", 2, "invalid JSON"},
      {"invalid JSON", kMoon0 + R"({"timestamp": 5,, "input_length": 10})" "\n", 2, "invalid JSON"},
      {"timestamps going backwards", R"({"timestamp": 100, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]})" "\n" + kMoon0, 2,
       "backwards"},
      {"hash_ids too short for input_length", kMoon0 + R"({"timestamp": 5, "input_length": 1200, "output_length": 3, "hash_ids": [0, 1]})" "\n", 2,
       "hash_ids"},
      {"hash_ids too long for input_length", kMoon0 + R"({"timestamp": 5, "input_length": 10, "output_length": 3, "hash_ids": [0, 1]})" "\n", 2,
       "hash_ids"},
      {"negative input_length", kMoon0 + R"({"timestamp": 5, "input_length": -5, "output_length": 3, "hash_ids": [0]})" "\n", 2, "input_length"},
      {"absurd input_length", kMoon0 + R"({"timestamp": 5, "input_length": 200000000, "output_length": 3, "hash_ids": [0]})" "\n", 2,
       "input_length"},
      {"negative output_length", kMoon0 + R"({"timestamp": 5, "input_length": 5, "output_length": -1, "hash_ids": [0]})" "\n", 2,
       "output_length"},
      {"negative hash id", kMoon0 + R"({"timestamp": 5, "input_length": 5, "output_length": 1, "hash_ids": [-3]})" "\n", 2, "hash_ids"},
      {"missing field", kMoon0 + R"({"timestamp": 5, "input_length": 5, "hash_ids": [0]})" "\n", 2, "output_length"},
      {"negative timestamp", kMoon0 + R"({"timestamp": -5, "input_length": 5, "output_length": 1, "hash_ids": [0]})" "\n", 2, "timestamp"},
      {"invalid UTF-8 in a string", kNative0 + "{\"id\":\"y\",\"t\":1,\"tokens\":[1],\"output_len\":1,\"session\":\"\xff\xfe\"}\n", 2,
       "UTF"},
      {"empty file", "", 1, "empty"},
      {"only blank lines", "\n  \n", 2, "empty"},
      {"unknown format", R"({"foo": 1})" "\n", 1, "format"},
      {"not an object", "[1, 2]\n", 1, "format"},
      {"native: missing t", kNative0 + R"({"id":"y","tokens":[1],"output_len":1})" "\n", 2, "\"t\""},
      {"native: misspelt field", kNative0 + R"({"id":"y","t":1,"tokns":[1],"output_len":1})" "\n", 2, "tokns"},
      {"native: tokens and hash_ids", kNative0 + R"({"id":"y","t":1,"tokens":[1],"hash_ids":[1],"block_size":4,"output_len":1})" "\n", 2,
       "exactly one"},
      {"native: negative token", kNative0 + R"({"id":"y","t":1,"tokens":[1,-2],"output_len":1})" "\n", 2, "tokens"},
      {"native: hash_ids without block_size", kNative0 + R"({"id":"y","t":1,"hash_ids":[1],"output_len":1})" "\n", 2, "block_size"},
      {"native: mm outside the prompt", kNative0 + R"({"id":"y","t":1,"tokens":[1,2],"output_len":1,"mm":[{"hash":"ab","offset":1,"length":5}]})" "\n",
       2, "mm"},
      {"native: mm hash not hex", kNative0 + R"({"id":"y","t":1,"tokens":[1,2],"output_len":1,"mm":[{"hash":"xyz","offset":0,"length":1}]})" "\n",
       2, "hash"},
      {"native: duplicate field", kNative0 + R"({"id":"y","t":1,"t":2,"tokens":[1],"output_len":1})" "\n", 2, "twice"},
      {"native: output_tokens disagree with output_len", kNative0 + R"({"id":"y","t":1,"tokens":[1],"output_len":3,"output_tokens":[4]})" "\n",
       2, "output_tokens"},
      {"native: empty prompt", kNative0 + R"({"id":"y","t":1,"tokens":[],"output_len":1})" "\n", 2, "empty"},
      {"forced format that does not fit", kMoon0, 1, "timestamp", "native"},
      {"kv-cache-tester: hash_ids inconsistent with in",
       R"({"id":"c","block_size":64,"requests":[{"t":0,"type":"n","in":1000,"out":1,"hash_ids":[1]}]})" "\n", 1, "requests[0].hash_ids"},
      {"two objects on one line", kMoon0 + kMoon0.substr(0, kMoon0.size() - 1) + " " + kMoon0, 2, "invalid JSON"},
      {"kv-cache-tester: negative hash id",
       R"({"id":"c","block_size":64,"requests":[{"t":0,"type":"n","in":64,"out":1,"hash_ids":[-1]}]})" "\n", 1, "requests[0].hash_ids[0]"},
      {"kv-cache-tester: missing in", R"({"id":"c","block_size":64,"requests":[{"t":0,"type":"n","out":1,"hash_ids":[1]}]})" "\n", 1,
       "requests[0].in"},
  };
  const std::string dir = temp_dir("bad-traces");
  int i = 0;
  for (const BadCase& c : cases) {
    SECTION(c.name) {
      const std::string path = dir + "/case" + std::to_string(i) + ".jsonl";
      std::ofstream(path, std::ios::binary) << c.content;
      TraceOptions opts;
      opts.format = c.format;
      expect_error(path, opts, c.line, c.want);
    }
    ++i;
  }
}

TEST_CASE("an unreadable trace file is an input error naming the file", "[traces][errors]") {
  const std::string path = temp_dir("missing") + "/no-such-trace.jsonl";
  expect_error(path, {}, 1, "cannot open");
}

TEST_CASE("truncated gzip and zstd files are input errors, not short traces", "[traces][errors]") {
  const std::string dir = temp_dir("truncated");
  for (const char* name : {"mooncake_small.jsonl.gz", "mooncake_small.jsonl.zst"}) {
    const std::string bytes = read_file(data_path(std::string("traces/") + name));
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << slice(bytes, bytes.size() - 12);
    INFO(name);
    try {
      read_all(path);
      FAIL("a truncated compressed trace read without error");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).rfind(path + ":", 0) == 0);
      CHECK_THAT(e.what(), Catch::Contains("truncated") || Catch::Contains("corrupt") || Catch::Contains("JSON"));
    }
  }
}

TEST_CASE("options outside their range are usage errors", "[traces][errors]") {
  TraceOptions bad_format;
  bad_format.format = "csv";
  CHECK_THROWS_AS(open_trace(data_path("traces/mooncake_small.jsonl"), bad_format), InputError);
  TraceOptions bad_rate;
  bad_rate.conversation_rate = 0;
  CHECK_THROWS_AS(open_trace(data_path("traces/kvcache"), bad_rate), InputError);
  TraceOptions mismatch;
  mismatch.format = "mooncake";
  CHECK_THROWS_WITH(open_trace(data_path("traces/kvcache"), mismatch), Catch::Contains("kv-cache-tester"));
}
