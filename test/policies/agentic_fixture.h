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
//
// PolicyObserver wraps a policy and records, for the explanation: which
// evicted blocks had been hit since they were cached, whether an eviction
// went back to an older block than the one before (a FIFO hand's wrap),
// how many hits landed on recomputed blocks (content evicted before), and
// how much of the pool holds content no later request looks up.
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

class PolicyObserver final : public EvictionPolicy {
 public:
  struct Figures {
    uint64_t evictions = 0, evicted_after_hit = 0, wraps = 0;
    uint64_t hits = 0, hits_on_recomputed = 0;
    double dead_share = 0, dead_after_hit_share = 0;  // means over samples of the pool
  };
  PolicyObserver(std::unique_ptr<EvictionPolicy> inner, const PreparedTrace& trace) : in_(std::move(inner)) {
    uses_.resize(trace.num_keys());
    for (size_t i = 0; i < trace.size(); ++i)
      for (uint32_t k : trace.lookup_keys(i)) uses_[k].push_back(static_cast<uint32_t>(i));
    evicted_.assign(trace.num_keys(), 0);
  }
  Figures figures() const {
    Figures f = f_;
    if (samples_) {
      f.dead_share = dead_ / samples_;
      f.dead_after_hit_share = dead_hit_ / samples_;
    }
    return f;
  }
  const EvictionPolicy& inner() const { return *in_; }

  std::string name() const override { return in_->name(); }
  void reset(const BlockPool& p, int32_t n) override {
    in_->reset(p, n);
    hit_.assign(n, 0);
    recomputed_.assign(n, 0);
    born_.assign(n, 0);
    key_.assign(n, kNoKey);
  }
  void on_hit(BlockId b, bool was_free) override {
    in_->on_hit(b, was_free);
    hit_[b] = 1;
    ++f_.hits;
    f_.hits_on_recomputed += recomputed_[b];
  }
  BlockId pop_free() override { return in_->pop_free(); }
  void on_free(BlockId b) override { in_->on_free(b); }
  void on_cached(BlockId b, const CachedBlockInfo& i) override {
    in_->on_cached(b, i);
    hit_[b] = 0;
    born_[b] = seq_;
    key_[b] = i.key;
    recomputed_[b] = evicted_[i.key];
  }
  void on_evicted(BlockId b, const BlockHash& h, uint32_t key) override {
    ++f_.evictions;
    f_.evicted_after_hit += hit_[b];
    if (born_[b] + 1 < last_born_) ++f_.wraps;  // back to content older than the last eviction's
    last_born_ = born_[b];
    evicted_[key] = 1;
    key_[b] = kNoKey;
    in_->on_evicted(b, h, key);
  }
  void on_request(uint64_t seq) override {
    if (seq > 0 && seq % 50 == 0) sample(static_cast<uint32_t>(seq));
    seq_ = static_cast<uint32_t>(seq);
    in_->on_request(seq);
  }
  bool is_free(BlockId b) const override { return in_->is_free(b); }
  int32_t num_free() const override { return in_->num_free(); }
  size_t bytes() const override { return in_->bytes(); }
  int64_t ghost_capacity() const override { return in_->ghost_capacity(); }

 private:
  bool looked_up_from(uint32_t key, uint32_t seq) const {
    const std::vector<uint32_t>& u = uses_[key];
    return std::lower_bound(u.begin(), u.end(), seq) != u.end();
  }
  // Before request seq: the share of cached blocks no request from seq on looks up.
  void sample(uint32_t seq) {
    size_t cached = 0, dead = 0, dead_hit = 0;
    for (size_t b = 1; b < key_.size(); ++b) {
      if (key_[b] == kNoKey) continue;
      ++cached;
      if (looked_up_from(key_[b], seq)) continue;
      ++dead;
      dead_hit += hit_[b];
    }
    if (!cached) return;
    dead_ += static_cast<double>(dead) / static_cast<double>(cached);
    dead_hit_ += static_cast<double>(dead_hit) / static_cast<double>(cached);
    ++samples_;
  }

  std::unique_ptr<EvictionPolicy> in_;
  std::vector<std::vector<uint32_t>> uses_;  // by key: the requests that look it up
  std::vector<uint8_t> evicted_;             // by key: evicted at least once
  std::vector<uint8_t> hit_, recomputed_;    // by block
  std::vector<uint32_t> born_, key_;         // by block
  uint32_t seq_ = 0, last_born_ = 0;
  double dead_ = 0, dead_hit_ = 0;
  int samples_ = 0;
  Figures f_;
};

}  // namespace prefixsim::test
