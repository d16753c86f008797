// Helpers for the trace reader tests: read a whole trace into memory (fine
// for the small fixtures), compare requests field by field.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "sim/engine/request.h"
#include "traces/trace_reader.h"

namespace prefixsim::test {

inline std::vector<Request> read_all(const std::string& path, const TraceOptions& opts = {}) {
  auto src = open_trace(path, opts);
  std::vector<Request> out;
  Request r;
  while (src->next(r)) out.push_back(r);
  return out;
}

inline void check_same_request(const Request& a, const Request& b) {
  INFO("request " << a.id);
  CHECK(a.id == b.id);
  CHECK(a.arrival == b.arrival);
  CHECK(a.tokens == b.tokens);
  CHECK(a.hash_ids == b.hash_ids);
  CHECK(a.trace_block_size == b.trace_block_size);
  CHECK(a.prompt_len == b.prompt_len);
  CHECK(a.output_len == b.output_len);
  CHECK(a.output_tokens == b.output_tokens);
  CHECK(a.session == b.session);
  CHECK(a.extras.salt == b.extras.salt);
  CHECK(a.extras.lora == b.extras.lora);
  REQUIRE(a.extras.mm.size() == b.extras.mm.size());
  for (size_t i = 0; i < a.extras.mm.size(); ++i) {
    CHECK(a.extras.mm[i].hash == b.extras.mm[i].hash);
    CHECK(a.extras.mm[i].offset == b.extras.mm[i].offset);
    CHECK(a.extras.mm[i].length == b.extras.mm[i].length);
  }
}

inline void check_same_requests(const std::vector<Request>& a, const std::vector<Request>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) check_same_request(a[i], b[i]);
}

// Engine-block hashes of a request's prompt.
inline std::vector<BlockHash> engine_blocks(const Request& r, int32_t block_size) {
  BlockHashChain chain(block_size, &r.extras);
  r.append_prompt_to(chain);
  return chain.hashes();
}

}  // namespace prefixsim::test
