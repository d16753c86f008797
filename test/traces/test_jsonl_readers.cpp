// Native and Mooncake JSONL readers on small fixtures, plain and compressed;
// Mooncake 512-token ids expanding into 16-token engine blocks; the real
// Mooncake traces read in full.
#include <catch2/catch.hpp>
#include <fstream>

#include "test/support.h"
#include "test/traces/trace_test_util.h"

using namespace prefixsim;
using namespace prefixsim::test;

TEST_CASE("the Mooncake reader turns ms timestamps and 512-token hash ids into requests", "[traces]") {
  const auto reqs = read_all(data_path("traces/mooncake_small.jsonl"));
  REQUIRE(reqs.size() == 4);
  CHECK(reqs[0].arrival == 0);
  CHECK(reqs[1].arrival == 250'000'000);  // 250 ms
  CHECK(reqs[3].arrival == 1'500'000'000);
  CHECK(reqs[0].prompt_len == 1210);
  CHECK(reqs[0].output_len == 10);
  CHECK(reqs[0].hash_ids == std::vector<uint64_t>{0, 1, 2});
  CHECK(reqs[0].trace_block_size == 512);
  CHECK(reqs[0].tokens.empty());
  CHECK(reqs[2].output_len == 0);
  CHECK(reqs[0].id == "1");  // ids are line numbers
  CHECK(reqs[3].id == "4");
}

TEST_CASE("auto-detection names the format of each fixture", "[traces]") {
  CHECK(open_trace(data_path("traces/mooncake_small.jsonl"), {})->format() == "mooncake");
  CHECK(open_trace(data_path("traces/native_small.jsonl"), {})->format() == "native");
  CHECK(open_trace(data_path("traces/kvcache"), {})->format() == "kvcache-tester");
  CHECK(open_trace(data_path("traces/kvcache.tar.gz"), {})->format() == "kvcache-tester");
  CHECK(open_trace(data_path("traces/kvcache/trace_0001.json"), {})->format() == "kvcache-tester");
}

TEST_CASE("gzip and zstd traces read exactly like the plain ones", "[traces]") {
  const auto plain = read_all(data_path("traces/mooncake_small.jsonl"));
  check_same_requests(read_all(data_path("traces/mooncake_small.jsonl.gz")), plain);
  check_same_requests(read_all(data_path("traces/mooncake_small.jsonl.zst")), plain);
  check_same_requests(read_all(data_path("traces/native_small.jsonl.zst")),
                      read_all(data_path("traces/native_small.jsonl")));
}

TEST_CASE("--trace-block-size changes what a Mooncake hash id covers", "[traces]") {
  TraceOptions opts;
  opts.trace_block_size = 1024;  // 1210 tokens would need 2 ids, the fixture has 3
  CHECK_THROWS_WITH(read_all(data_path("traces/mooncake_small.jsonl"), opts),
                    Catch::Contains("mooncake_small.jsonl:1:") && Catch::Contains("hash_ids"));
}

TEST_CASE("512-token ids expand into 16-token engine blocks: equal ids give equal blocks", "[traces][expand]") {
  const auto reqs = read_all(data_path("traces/mooncake_small.jsonl"));
  const auto a = engine_blocks(reqs[0], 16);  // ids 0 1 2, 1210 tokens
  const auto b = engine_blocks(reqs[1], 16);  // ids 0 1, 1024 tokens
  const auto c = engine_blocks(reqs[2], 16);  // ids 0 3, 700 tokens
  // 1210 = 75 full blocks + 10 tokens of partial tail (never hashed)
  REQUIRE(a.size() == 75);
  REQUIRE(b.size() == 64);
  REQUIRE(c.size() == 43);  // 700 = 43 * 16 + 12
  for (size_t i = 0; i < 64; ++i) CHECK(a[i] == b[i]);
  for (size_t i = 0; i < 32; ++i) CHECK(a[i] == c[i]);
  for (size_t i = 32; i < 43; ++i) CHECK_FALSE(a[i] == c[i]);  // id 3 differs from id 1
  // Distinct sub-blocks of one id are distinct blocks.
  CHECK_FALSE(a[0] == a[1]);
}

TEST_CASE("the last id of a Mooncake request covers only the tokens left: its last block is partial",
          "[traces][expand]") {
  const auto reqs = read_all(data_path("traces/mooncake_small.jsonl"));
  BlockHashChain chain(16, &reqs[0].extras);
  reqs[0].append_prompt_to(chain);
  CHECK(chain.num_tokens() == 1210);
  CHECK(chain.num_full_blocks() == 75);
  // At block size 512 the tail id (186 tokens) hashes no block at all.
  BlockHashChain coarse(512, &reqs[0].extras);
  reqs[0].append_prompt_to(coarse);
  CHECK(coarse.num_full_blocks() == 2);
}

TEST_CASE("the native reader fills every field of the request", "[traces]") {
  const auto reqs = read_all(data_path("traces/native_small.jsonl"));
  REQUIRE(reqs.size() == 4);
  const Request& a = reqs[0];
  CHECK(a.id == "a");
  CHECK(a.arrival == 0);
  CHECK(a.tokens == std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(a.prompt_len == 8);
  CHECK(a.output_len == 2);
  CHECK(a.output_tokens == std::vector<int32_t>{9, 10});
  CHECK(a.session == "s1");
  CHECK(a.extras.salt == "tenant-a");
  const Request& b = reqs[1];
  CHECK(b.arrival == 125'000'000);
  CHECK(b.hash_ids == std::vector<uint64_t>{7, 8});
  CHECK(b.trace_block_size == 4);
  CHECK(b.prompt_len == 6);
  CHECK(b.extras.lora == 3);
  const Request& c = reqs[2];
  CHECK(c.arrival == 1'500'000'000);
  REQUIRE(c.extras.mm.size() == 1);
  CHECK(c.extras.mm[0].hash == BlockHash{0x9f2c, 0});
  CHECK(c.extras.mm[0].offset == 2);
  CHECK(c.extras.mm[0].length == 4);
  CHECK(reqs[3].id == "5");  // no id: its line number (line 3 is blank)
  CHECK(reqs[3].arrival == 2'000'000'000);
}

TEST_CASE("--sort accepts a trace whose timestamps go backwards and orders it stably", "[traces]") {
  const std::string dir = temp_dir("sort");
  const std::string path = dir + "/unsorted.jsonl";
  {
    std::ofstream f(path);
    f << R"({"id":"late","t":2.0,"tokens":[1],"output_len":1})" "\n"
      << R"({"id":"early1","t":1.0,"tokens":[2],"output_len":1})" "\n"
      << R"({"id":"early2","t":1.0,"tokens":[3],"output_len":1})" "\n";
  }
  CHECK_THROWS_WITH(read_all(path), Catch::Contains("unsorted.jsonl:2:") && Catch::Contains("backwards"));
  TraceOptions opts;
  opts.sort = true;
  const auto reqs = read_all(path, opts);
  REQUIRE(reqs.size() == 3);
  CHECK(reqs[0].id == "early1");
  CHECK(reqs[1].id == "early2");
  CHECK(reqs[2].id == "late");
}
