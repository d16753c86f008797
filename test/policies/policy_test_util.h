// Helpers for the policy tests: make any registered policy (belady gets an
// empty or given future), drive a pool with single-block "objects" (the
// textbook cache examples), and build token requests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policies/block_future.h"
#include "policies/registry.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/request.h"

namespace prefixsim::test {

inline std::shared_ptr<const BlockFuture> empty_future() {
  return BlockFuture::build(0, 0, [](size_t) { return std::span<const uint32_t>{}; });
}

inline std::unique_ptr<EvictionPolicy> any_policy(const std::string& spec, int32_t block_size = 4,
                                                  std::shared_ptr<const BlockFuture> future = nullptr) {
  PolicyContext ctx;
  ctx.block_size = block_size;
  ctx.future = future ? std::move(future) : empty_future();
  return make_policy(spec, ctx);
}

// A cache of `objects` single-block objects, as in the papers: each access
// is a request whose prompt is one full block (the object, identified by
// its number) plus one token, so exactly that block is looked up; the
// partial second block is scratch and goes back to the never-used blocks.
class ObjectCache {
 public:
  static constexpr int32_t kB = 4;
  ObjectCache(const std::string& spec, int32_t objects)
      : rep_(kB, objects + 2, any_policy(spec, kB)) {}
  // Returns whether the access hit.
  bool access(uint64_t x) {
    const BlockHash h = hash(x);
    const uint64_t before = rep_.result().hit_blocks;
    rep_.step({&h, 1}, kB + 1, kB + 1);
    return rep_.result().hit_blocks > before;
  }
  bool cached(uint64_t x) const { return rep_.pool().find(hash(x)) != kNoBlock; }
  BlockId block_of(uint64_t x) const { return rep_.pool().find(hash(x)); }
  static BlockHash hash(uint64_t x) { return BlockHash{x * 0x9e3779b97f4a7c15ULL + 1, x}; }
  template <typename P>
  const P& policy() const {
    return dynamic_cast<const P&>(rep_.pool().policy());
  }
  const CacheReplayer& replayer() const { return rep_; }

 private:
  CacheReplayer rep_;
};

// A token-form request: `prefix` then `unique` tokens drawn from `seed`.
inline Request token_request(const std::string& id, const std::vector<int32_t>& prefix, int64_t unique,
                             uint64_t seed, int64_t output_len) {
  Request r;
  r.id = id;
  r.tokens = prefix;
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 12345;
  for (int64_t i = 0; i < unique; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r.tokens.push_back(static_cast<int32_t>(x & 0x3fffffff));
  }
  r.prompt_len = static_cast<int64_t>(r.tokens.size());
  r.output_len = output_len;
  return r;
}

}  // namespace prefixsim::test
