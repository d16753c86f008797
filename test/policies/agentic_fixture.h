// Issue 45's agentic case in miniature: coding-agent sessions, each request
// re-sending the session's whole context plus a few new blocks, sessions
// interleaved so that one returns only after many others have run, and
// ending (their context then dead) to make room for new ones. The shape of
// the first 5,000 requests of ../shared/traces/claude-code, scaled down:
//                         claude-code (measured)        this fixture
//   prompt                median 4,164 blocks           ~60-110 blocks
//   new blocks per turn   median 57 (p90 534)           1..6
//   turns per session     median 6, up to 38            1 + geometric, mean 7
//   requests between two  median 144 (p10 59, p90 494), 16 to ~40 (one of the 16
//   turns of a session    73 % of prompt tokens at 100+  sessions served longest ago)
//   shared prefix across  none (640 sessions, 640       none
//   sessions              distinct first blocks)
// Every output block is unique to its request (cache mode), so dead at once.
// What decides the trace's table is where the return gaps sit against LRU's
// residence: at 10 M tokens LRU keeps a block ~100-150 requests, and 73 % of
// the prompt tokens return later than 100 requests. The fixture's gaps sit
// just past LRU's residence in the same way at a pool of 0.8 x kActive mean
// prompts (the "10 M" pool of the tests) and well past it at 0.6 x ("3 M").
// The figures that explain the table come from RetentionProbe
// (policies/retention_probe.h) and DeadContentSampler below.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/engine/cache_replay.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/eviction_policy.h"
#include "policies/retention_probe.h"

namespace prefixsim::test {

struct AgenticCase {
  static constexpr int32_t kB = 16;
  static constexpr int kActive = 40;    // sessions open at a time
  static constexpr int kOldestOf = 16;  // each request: one of the 16 sessions served longest ago
  static constexpr int kEndOneIn = 7;   // a session ends after a turn with probability 1/7
  PreparedTrace trace;
  std::vector<int> gap;        // per request: requests since its session's previous one (-1: first)
  int64_t context_blocks = 0;  // prompt blocks summed over requests
  // The pool of `share` x kActive mean prompts (blocks, the null block excluded).
  int64_t pool(double share) const {
    return static_cast<int64_t>(share * kActive * static_cast<double>(context_blocks) /
                                static_cast<double>(trace.size()));
  }
};

inline AgenticCase agentic_case(int requests, uint64_t seed = 7) {
  struct Session {
    std::vector<uint64_t> context;  // hash ids of the prompt so far
    int last = -1;                  // the request that served it last
  };
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  auto next = [&x](uint64_t n) {  // xorshift64*: the same on every standard library
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return (x * 2685821657736338717ULL >> 33) % n;
  };
  uint64_t fresh = 1;
  auto new_session = [&] {
    Session s;
    const uint64_t n = 10 + next(10);
    for (uint64_t i = 0; i < n; ++i) s.context.push_back(fresh++);
    return s;
  };
  std::vector<Session> active;
  for (int i = 0; i < AgenticCase::kActive; ++i) active.push_back(new_session());
  std::vector<Request> rs;
  AgenticCase c;
  std::vector<std::pair<int, size_t>> order;
  for (int i = 0; i < requests; ++i) {
    order.clear();
    for (size_t j = 0; j < active.size(); ++j) order.push_back({active[j].last, j});
    std::sort(order.begin(), order.end());
    Session& s = active[order[next(AgenticCase::kOldestOf)].second];
    c.gap.push_back(s.last < 0 ? -1 : i - s.last);
    s.last = i;
    Request r;
    r.id = "r" + std::to_string(i);
    r.hash_ids = s.context;
    r.trace_block_size = AgenticCase::kB;
    r.prompt_len = static_cast<int64_t>(s.context.size()) * AgenticCase::kB;
    r.output_len = AgenticCase::kB + 1;  // one full output block, unique to the request
    c.context_blocks += static_cast<int64_t>(s.context.size());
    rs.push_back(std::move(r));
    if (next(AgenticCase::kEndOneIn) == 0) {
      s = new_session();  // the session ends: its context is dead from now on
    } else {
      const uint64_t add = 1 + next(6);
      for (uint64_t k = 0; k < add; ++k) s.context.push_back(fresh++);
    }
  }
  c.trace = prepare_trace(std::span<const Request>(rs), AgenticCase::kB);
  return c;
}

// Samples a pool between requests: the share of cached blocks that no
// request from `seq` on looks up (dead content), and of those, the share
// hit since cached (a context that was reused, then its session ended).
class DeadContentSampler {
 public:
  explicit DeadContentSampler(const PreparedTrace& trace) : uses_(trace.num_keys()) {
    for (size_t i = 0; i < trace.size(); ++i)
      for (uint32_t k : trace.lookup_keys(i)) uses_[k].push_back(static_cast<uint32_t>(i));
  }
  void sample(const RetentionProbe& probe, int64_t num_blocks, uint32_t seq) {
    size_t cached = 0, dead = 0, dead_hit = 0;
    for (BlockId b = 1; b < num_blocks; ++b) {
      const uint32_t key = probe.cached_key(b);
      if (key == kNoKey) continue;
      ++cached;
      const std::vector<uint32_t>& u = uses_[key];
      if (std::lower_bound(u.begin(), u.end(), seq) != u.end()) continue;
      ++dead;
      dead_hit += probe.hit_since_cached(b);
    }
    if (!cached) return;
    dead_ += static_cast<double>(dead) / static_cast<double>(cached);
    dead_hit_ += static_cast<double>(dead_hit) / static_cast<double>(cached);
    ++samples_;
  }
  double dead_share() const { return samples_ ? dead_ / samples_ : 0; }
  double dead_after_hit_share() const { return samples_ ? dead_hit_ / samples_ : 0; }

 private:
  std::vector<std::vector<uint32_t>> uses_;  // by key: the requests that look it up
  double dead_ = 0, dead_hit_ = 0;
  int samples_ = 0;
};

}  // namespace prefixsim::test
