// Issue 45's hot-prefix case, in request form and in block form. A 512-token
// system prompt (32 blocks of 16) opens every 5th request (followed by 64
// tokens of its own question); four one-off 3,000-token prompts (188 blocks)
// come between, so the prompt recurs every 32 + 4 + 4 x 188 = 788 blocks, in
// a cache of 513. 250 occurrences: 8,000 accesses of the prompt's blocks.
//   request form  the real requests, each allocated at once and pinned
//                 while it runs (cache-mode replay of prefix chains)
//   block form    every full block of every request, in chain order, as a
//                 one-block request (the classic cache simulation; each
//                 also takes a scratch block for its partial last block)
// Only the system prompt's blocks recur, so every hit is one of its blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policies/block_future.h"
#include "sim/engine/cache_replay.h"
#include "test/policies/policy_test_util.h"

namespace prefixsim::test {

struct HotPrefixCase {
  static constexpr int32_t kB = 16;
  static constexpr int64_t kCapacity = 513;  // usable blocks (the pool adds the null block)
  static constexpr int kOccurrences = 250, kBetween = 4;
  static constexpr int kPromptBlocks = 32;
  PreparedTrace requests;
  PreparedTrace blocks;
  // blocks' entry where the system prompt's occurrence k begins (and, last,
  // the end): the block form's counterpart of request k x 5.
  std::vector<size_t> block_start;
};

inline HotPrefixCase hot_prefix_case() {
  HotPrefixCase c;
  std::vector<int32_t> system;
  for (int32_t t = 0; t < 512; ++t) system.push_back(1'000'000 + t);
  std::vector<Request> rs;
  uint64_t seed = 1;
  for (int k = 0; k < HotPrefixCase::kOccurrences; ++k) {
    rs.push_back(token_request("s" + std::to_string(k), system, 64, seed++, 1));
    for (int j = 0; j < HotPrefixCase::kBetween; ++j)
      rs.push_back(token_request("o" + std::to_string(k) + "." + std::to_string(j), {}, 3000, seed++, 1));
  }
  c.requests = prepare_trace(rs, HotPrefixCase::kB);
  // Block form: the same keys, one per entry, looked up alone (a prompt of
  // B + 1 tokens looks up and caches exactly one block).
  c.blocks.block_size = HotPrefixCase::kB;
  c.blocks.keys = c.requests.keys;
  c.blocks.key_hashes = c.requests.key_hashes;
  for (size_t i = 0; i < c.requests.size(); ++i) {
    const PreparedTrace::Entry& e = c.requests.requests[i];
    if (i % (HotPrefixCase::kBetween + 1) == 0) c.block_start.push_back(c.blocks.requests.size());
    for (uint32_t k = 0; k < e.num_keys; ++k)
      c.blocks.requests.push_back({e.offset + k, 1, HotPrefixCase::kB + 1, HotPrefixCase::kB + 2});
  }
  c.block_start.push_back(c.blocks.requests.size());
  return c;
}

struct HotPrefixHits {
  uint64_t total = 0;        // of the 8,000 accesses of the system prompt's blocks
  uint64_t after_two = 0;    // of the 7,936 from its third occurrence on
  static constexpr uint64_t kAfterTwoAccesses =
      static_cast<uint64_t>(HotPrefixCase::kOccurrences - 2) * HotPrefixCase::kPromptBlocks;
  double after_two_share() const { return static_cast<double>(after_two) / static_cast<double>(kAfterTwoAccesses); }
};

// Replays one form of the case under `spec` (belady gets the form's future).
inline HotPrefixHits replay_hot_prefix(const HotPrefixCase& c, const std::string& spec, bool block_form) {
  const PreparedTrace& t = block_form ? c.blocks : c.requests;
  auto future = BlockFuture::build(t.num_keys(), t.size(), [&](size_t i) { return t.lookup_keys(i); });
  // The block form's pool holds one more block: each access's scratch block.
  const int64_t blocks = HotPrefixCase::kCapacity + 1 + (block_form ? 1 : 0);
  const size_t third = block_form ? c.block_start[2] : 2 * (HotPrefixCase::kBetween + 1);
  uint64_t before_third = 0;
  size_t i = 0;
  const CacheReplayResult r = run_cache_replay(
      t, blocks, any_policy(spec, HotPrefixCase::kB, future), false, [&](const CacheReplayer& rep) {
        if (++i == third) before_third = rep.totals().hit_blocks;
        return true;
      });
  return {r.hit_blocks, r.hit_blocks - before_third};
}

}  // namespace prefixsim::test
