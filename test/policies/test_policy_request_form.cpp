// Policies on real requests (issue 45). A request's blocks are allocated
// together and pinned while it runs; where pinning never forces a choice,
// a policy must decide on requests as it does when the same blocks come one
// at a time, and where it does, as a hand-worked case says.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "policies/block_future.h"
#include "policies/registry.h"
#include "policies/tinylfu.h"
#include "test/policies/hot_prefix_fixture.h"
#include "test/support.h"

using namespace prefixsim;

namespace {

// A stream of hot single-block requests (Zipf over `hot` objects; a prompt
// of B + 1 tokens looks up one block) and one-off requests of 1..max_k new
// blocks (exactly k x B tokens: no partial block), as interned keys. Key
// hot object x is x; one-off blocks take keys from `hot` on.
struct MixedStream {
  PreparedTrace requests, blocks;
  std::vector<size_t> block_end;  // blocks' entries covering requests 0..i end at block_end[i]
  std::vector<bool> one_off;      // per request
  uint32_t hot = 0;
};
// n block hashes that tinylfu's Count-Min sketch counts exactly in a pool
// of `capacity` blocks: each has one counter (of its four) that no other
// shares, so its estimate is its count whatever the order of additions.
// A sketch's collisions make a duel depend on when the blocks of a request
// are counted (all at once, or one between each eviction), which is not
// what this test is about. Mirrors CountMinSketch's layout (the line from
// bits 32.. of mix(h), row r's counter from bits 4r..4r+3); the caller's
// check_exact proves it on the real sketch.
std::vector<BlockHash> exact_sketch_hashes(uint32_t n, int64_t capacity) {
  uint64_t w = 64;
  while (w < 4 * static_cast<uint64_t>(capacity)) w <<= 1;
  const uint64_t lines = w / 16;
  std::vector<uint8_t> cell(lines * 64, 0);  // 0 free, 1 used, 2 some key's own
  std::vector<BlockHash> out;
  uint64_t x = 12345;
  // Of 64 random hashes, the one that takes the fewest free counters (its
  // own one and the others it touches first), so the free ones last.
  while (out.size() < n) {
    int best_free = 5;
    BlockHash best{};
    uint64_t best_at[4] = {}, best_own = 0;
    for (int tries = 0; tries < 64 || best_free == 5; ++tries) {
      const BlockHash h{x * 0x9e3779b97f4a7c15ULL + 7, ++x};
      const uint64_t m = CountMinSketch::mix(h);
      uint64_t at[4];
      bool reserved = false;
      int own = -1, free = 0;
      for (int r = 0; r < 4; ++r) {
        at[r] = ((m >> 32) & (lines - 1)) * 64 + static_cast<uint64_t>(r) * 16 + ((m >> (4 * r)) & 15);
        reserved = reserved || cell[at[r]] == 2;
        free += cell[at[r]] == 0 ? 1 : 0;
        if (own < 0 && cell[at[r]] == 0) own = r;
      }
      if (reserved || own < 0 || free >= best_free) continue;
      best_free = free, best = h, best_own = at[own];
      std::copy(at, at + 4, best_at);
    }
    for (uint64_t a : best_at) cell[a] = 1;
    cell[best_own] = 2;
    out.push_back(best);
  }
  return out;
}

constexpr int64_t kPool = 4000;  // usable blocks: its sketch has room for every key's own counter
MixedStream mixed_stream(uint64_t seed, uint32_t hot, int max_k, size_t n) {
  constexpr int32_t B = 16;
  MixedStream m;
  m.hot = hot;
  std::mt19937_64 rng(seed);
  std::vector<double> cum(hot);
  double t = 0;
  for (uint32_t i = 0; i < hot; ++i) cum[i] = (t += 1.0 / std::pow(static_cast<double>(i + 1), 0.9));
  std::uniform_real_distribution<double> u(0, t);
  for (PreparedTrace* p : {&m.requests, &m.blocks}) p->block_size = B;
  uint32_t next = hot;
  // First the pool fills with one-off single blocks, looked up alone (as
  // the hot ones): the same requests in both forms. (The first eviction
  // inside a multi-block request is the one place tinylfu's forms differ:
  // the blocks handed out from never-used room before it are counted in
  // the window they will join, and dueled when they overflow it.)
  for (int64_t i = 0; i < kPool + 100; ++i) {
    m.one_off.push_back(true);
    for (PreparedTrace* p : {&m.requests, &m.blocks}) {
      p->requests.push_back({p->keys.size(), 1, B + 1, B + 1});
      p->keys.push_back(next);
    }
    ++next;
    m.block_end.push_back(m.blocks.requests.size());
  }
  for (size_t i = 0; i < n; ++i) {
    const bool off = rng() % 2 == 0;
    m.one_off.push_back(off);
    if (!off) {
      const auto x = static_cast<uint32_t>(std::lower_bound(cum.begin(), cum.end(), u(rng)) - cum.begin());
      for (PreparedTrace* p : {&m.requests, &m.blocks}) {
        p->requests.push_back({p->keys.size(), 1, B + 1, B + 1});
        p->keys.push_back(x);
      }
    } else {
      const auto k = static_cast<uint32_t>(1 + rng() % static_cast<uint64_t>(max_k));
      m.requests.requests.push_back({m.requests.keys.size(), k, k * B, k * B});
      for (uint32_t j = 0; j < k; ++j) m.requests.keys.push_back(next + j);
      // Block form: the request's blocks in the order it releases them
      // (last to first), so that both forms free them in the same order.
      for (uint32_t j = k; j-- > 0;) {
        m.blocks.requests.push_back({m.blocks.keys.size(), 1, B, B});
        m.blocks.keys.push_back(next + j);
      }
      next += k;
    }
    m.block_end.push_back(m.blocks.requests.size());
  }
  m.requests.key_hashes = m.blocks.key_hashes = exact_sketch_hashes(next, kPool);
  return m;
}

std::unique_ptr<CacheReplayer> replayer_for(const PreparedTrace& t, const std::string& spec, int64_t capacity) {
  auto future = BlockFuture::build(t.num_keys(), t.size(), [&](size_t i) { return t.lookup_keys(i); });
  return std::make_unique<CacheReplayer>(t.block_size, capacity + 1, test::any_policy(spec, t.block_size, future),
                                         false, t.num_keys());
}

}  // namespace

namespace {
// Replays m in both forms; the first difference, or "".
std::string first_difference(const MixedStream& m, const std::string& spec, int64_t capacity) {
  auto req = replayer_for(m.requests, spec, capacity);
  auto blk = replayer_for(m.blocks, spec, capacity);
  std::ostringstream out;
  size_t e = 0;
  for (size_t i = 0; i < m.requests.size(); ++i) {
    req->step_keys(m.requests.keys_of(i), m.requests.key_hashes, m.requests.requests[i].prompt_len,
                   m.requests.requests[i].total_len);
    for (; e < m.block_end[i]; ++e)
      blk->step_keys(m.blocks.keys_of(e), m.blocks.key_hashes, m.blocks.requests[e].prompt_len,
                     m.blocks.requests[e].total_len);
    const CacheReplayResult& a = req->totals();
    const CacheReplayResult& b = blk->totals();
    if (a.hit_blocks != b.hit_blocks || req->pool().evictions() != blk->pool().evictions()) {
      out << "request " << i << ": hits " << a.hit_blocks << " vs " << b.hit_blocks << ", evictions "
          << req->pool().evictions() << " vs " << blk->pool().evictions();
      return out.str();
    }
    if (i % 5 != 0 && i + 1 != m.requests.size()) continue;
    for (uint32_t x = 0; x < m.hot; ++x)
      if ((req->pool().find_key(x) != kNoBlock) != (blk->pool().find_key(x) != kNoBlock)) {
        out << "after request " << i << ": hot object " << x << " cached " << (req->pool().find_key(x) != kNoBlock)
            << " in request form";
        return out.str();
      }
    for (size_t j = i >= 600 ? i - 600 : 0; j <= i; ++j) {
      if (!m.one_off[j]) continue;
      int ca = 0, cb = 0;
      for (uint32_t k : m.requests.keys_of(j)) {
        ca += req->pool().find_key(k) != kNoBlock ? 1 : 0;
        cb += blk->pool().find_key(k) != kNoBlock ? 1 : 0;
      }
      if (ca != cb) {
        out << "after request " << i << ": one-off request " << j << " keeps " << ca << " blocks, " << cb
            << " block by block";
        return out.str();
      }
    }
  }
  return "";
}
}  // namespace

TEST_CASE("on the hot-prefix case every policy keeps the system prompt on requests as block by block, tinylfu >= 99 %",
          "[policies][request-form][tinylfu]") {
  // Issue 45: tinylfu kept the 32-block prompt block by block (7,967 of
  // 8,000 accesses hit) and lost it on requests (0): each one-off request
  // of 188 blocks spent the window's 6 free blocks in duels, then took
  // main's LRU blocks undueled (its own blocks, the candidates Caffeine
  // would evict, are pinned), and on release its window overflow went into
  // probation undueled, ahead of the prompt. Figures from the third
  // occurrence on (the first two warm the sketch), of 7,936 accesses:
  //   block form: s3fifo, tinylfu, belady 7,936; the others 0
  //   request form: the same (before the fix: tinylfu 0)
  const test::HotPrefixCase c = test::hot_prefix_case();
  std::vector<std::string> specs;
  for (const PolicyInfo& p : policy_registry()) specs.push_back(p.name);
  specs.push_back("tinylfu:window=0.2");
  for (const std::string& spec : specs) {
    const test::HotPrefixHits blocks = test::replay_hot_prefix(c, spec, true);
    const test::HotPrefixHits requests = test::replay_hot_prefix(c, spec, false);
    INFO(spec << ": block form " << blocks.total << " (" << blocks.after_two << " after two), request form "
              << requests.total << " (" << requests.after_two << ")");
    CHECK(requests.after_two == blocks.after_two);
    const bool keeps = spec == "s3fifo" || spec == "belady" || spec.rfind("tinylfu", 0) == 0;
    CHECK((requests.after_two_share() >= 0.99) == keeps);
  }
}

TEST_CASE("every policy makes the same evictions on requests as block by block where pinning never binds",
          "[policies][request-form]") {
  // Requests of at most 8 blocks in a pool of 4,000 (tinylfu's 1 % window
  // holds 40): no policy is kept from its choice by a pinned block. The
  // block form cannot show the order among one request's own new blocks
  // (a request caches them first to last and releases them last to first;
  // the block form does both last to first), so the fates compared are
  // per request: every hit, the evictions so far, which hot objects are
  // cached and how many blocks of each one-off request are.
  //
  // lfu-da and gdsf differ, by design: a request's new blocks all enter at
  // the inflation value L reached after the evictions that made room for
  // them (block by block, each enters at the L of its own eviction), so
  // equal keys and the tail released first keep a chain's head longest;
  // and gdsf's cost is a block's depth in its chain, which the block form
  // does not have (its one-off blocks are all depth 0, worth less than the
  // request form's deep ones). Measured on these streams (seeds 1-4, about
  // 2,000 hot accesses each): lfu-da the same hits, cached sets apart after
  // requests 1,710-5,830; gdsf 25-31 fewer hits on requests (1.5 %).
  std::vector<std::string> specs;
  for (const PolicyInfo& p : policy_registry())
    if (p.name != "lfu-da" && p.name != "gdsf") specs.push_back(p.name);
  for (const char* t : {"tinylfu:window=0.2", "tinylfu:window=0.5,sample=3"}) specs.push_back(t);
  const size_t n = static_cast<size_t>(test::sanitized_share(4000));
  for (uint64_t seed : {1, 2}) {
    const MixedStream m = mixed_stream(seed, 400, 8, n);
    CountMinSketch sketch;  // sized as tinylfu sizes it; no halving within the stream
    sketch.reset(kPool, 1000);
    for (uint32_t k = 0; k < m.requests.num_keys(); ++k)
      for (uint32_t c = 0; c <= k % 3; ++c) sketch.add(m.requests.key_hashes[k]);
    for (uint32_t k = 0; k < m.requests.num_keys(); ++k)
      if (sketch.estimate(m.requests.key_hashes[k]) != k % 3 + 1) FAIL("key " << k << " is not counted exactly");
    for (const std::string& spec : specs) {
      INFO(spec << " seed " << seed);
      CHECK(first_difference(m, spec, kPool) == "");
    }
    for (const char* spec : {"lfu-da", "gdsf"}) {
      auto req = replayer_for(m.requests, spec, kPool);
      auto blk = replayer_for(m.blocks, spec, kPool);
      for (size_t i = 0; i < m.requests.size(); ++i)
        req->step_keys(m.requests.keys_of(i), m.requests.key_hashes, m.requests.requests[i].prompt_len,
                       m.requests.requests[i].total_len);
      for (size_t i = 0; i < m.blocks.size(); ++i)
        blk->step_keys(m.blocks.keys_of(i), m.blocks.key_hashes, m.blocks.requests[i].prompt_len,
                       m.blocks.requests[i].total_len);
      const double a = static_cast<double>(req->totals().hit_blocks), b = static_cast<double>(blk->totals().hit_blocks);
      INFO(spec << " seed " << seed << ": hits " << a << " on requests, " << b << " block by block");
      CHECK(std::abs(a - b) <= 0.02 * b);
    }
  }
}

namespace {
// Steps request i of t and names the blocks it evicted ("H", "A0", ...),
// in key order.
std::string step_named(CacheReplayer& rep, const PreparedTrace& t, size_t i, const std::vector<std::string>& names) {
  std::vector<bool> before(names.size());
  for (uint32_t k = 0; k < names.size(); ++k) before[k] = rep.pool().find_key(k) != kNoBlock;
  const uint64_t hits = rep.totals().hit_blocks;
  rep.step_keys(t.keys_of(i), t.key_hashes, t.requests[i].prompt_len, t.requests[i].total_len);
  std::string out = rep.totals().hit_blocks > hits ? "hit" : "miss";
  std::string gone;
  for (uint32_t k = 0; k < names.size(); ++k)
    if (before[k] && rep.pool().find_key(k) == kNoBlock) gone += " " + names[k];
  return gone.empty() ? out : out + ", evicts" + gone;
}
}  // namespace

TEST_CASE("tinylfu worked example on requests: losers of the release duels are reused first, so a one-off "
          "request no longer flushes a hot block from probation",
          "[policies][request-form][tinylfu][worked]") {
  // Pool of 10 blocks, window=0.2: window 2, main 8 (protected 6). H is
  // one block looked up alone (plus a partial block); A has 3 full blocks
  // and a partial one, B..G 4 and a partial one, all one-offs. Keys are
  // counted exactly by the sketch (exact_sketch_hashes), no halving (31
  // additions, the sample is 100). A request releases its blocks last to
  // first, the partial one (uncached: reused first) before them.
  const std::vector<std::string> names = {"H",  "A0", "A1", "A2", "B0", "B1", "B2", "B3", "C0", "C1",
                                          "C2", "C3", "D0", "D1", "D2", "D3", "E0", "E1", "E2", "E3",
                                          "F0", "F1", "F2", "F3", "G0", "G1", "G2", "G3"};
  constexpr int32_t B = 16;
  PreparedTrace t;
  t.block_size = B;
  t.key_hashes = exact_sketch_hashes(static_cast<uint32_t>(names.size()), 10);
  auto add = [&](std::vector<uint32_t> keys) {
    const auto k = static_cast<uint32_t>(keys.size());
    t.requests.push_back({t.keys.size(), k, k * B + 1, k * B + 1});
    t.keys.insert(t.keys.end(), keys.begin(), keys.end());
  };
  add({0});
  add({0});
  add({1, 2, 3});
  for (uint32_t first = 4; first < 28; first += 4) {
    add({first, first + 1, first + 2, first + 3});
    if (first == 8) add({0});  // H again after C
  }
  add({0});
  CacheReplayer rep(B, 11, test::any_policy("tinylfu:window=0.2", B), true, t.num_keys());
  const auto& p = dynamic_cast<const TinyLfuPolicy&>(rep.pool().policy());
  REQUIRE(p.window_max() == 2);
  REQUIRE(p.protected_max() == 6);
  size_t i = 0;
  auto step = [&] { return step_named(rep, t, i++, names); };
  REQUIRE(step() == "miss");  // H: window [H]
  REQUIRE(step() == "hit");   // H counted twice
  // A0 joins the window; A1 pushes H into probation (the pool is filling:
  // no duel); A2 overflows on release. Window [A1 A0], probation [H A2].
  REQUIRE(step() == "miss");
  // The same: window [B1 B0], probation [H A2 A1 A0 B3 B2]; 2 blocks left.
  REQUIRE(step() == "miss");
  REQUIRE(p.segment(rep.pool().find_key(0)) == TinyLfuPolicy::kProbation);
  // C takes the 2 free blocks, then duels B1 and B0 (count 1) against H
  // (2): both lose. Its fifth block finds no window block free (C's own,
  // the next candidates, are pinned): main's victim, H, goes undueled.
  // On release C's window overflow, C3 and C2, duels A2 and loses: they
  // are rejected, still cached. (Before issue 45's fix they entered
  // probation undueled, ahead of everything in it.)
  REQUIRE(step() == "miss, evicts H B0 B1");
  REQUIRE(p.segment(rep.pool().find_key(11)) == TinyLfuPolicy::kRejected);
  REQUIRE(p.segment(rep.pool().find_key(10)) == TinyLfuPolicy::kRejected);
  // H again (count 3): its block reuses C3, the first rejected; it joins
  // the window, whose overflow C1 duels A2 and loses.
  REQUIRE(step() == "miss, evicts C3");
  REQUIRE(p.segment(rep.pool().find_key(9)) == TinyLfuPolicy::kRejected);
  // D: the rejected C2 and C1 first, then the window's duels: C0 loses to
  // A2 (1 = 1: the candidate must be strictly more frequent), H beats it
  // (3 > 1): H enters probation, A2 goes. D3 and D2 lose to A1 on release.
  REQUIRE(step() == "miss, evicts A2 C0 C1 C2");
  REQUIRE(p.segment(rep.pool().find_key(0)) == TinyLfuPolicy::kProbation);
  // From here on every one-off request takes the previous one's rejected
  // blocks and the window's two, which lose to probation's LRU (A1, then
  // A0, B3, ...), never reaching H. Before the fix G evicted H: the
  // one-offs' overflow entered probation undueled and G's pops, past the
  // window's two, took probation's LRU blocks (B3 B2 C3 C2 H ...).
  REQUIRE(step() == "miss, evicts D0 D1 D2 D3");
  REQUIRE(step() == "miss, evicts E0 E1 E2 E3");
  REQUIRE(step() == "miss, evicts F0 F1 F2 F3");
  REQUIRE(step() == "hit");  // H: promoted to protected
  REQUIRE(p.segment(rep.pool().find_key(0)) == TinyLfuPolicy::kProtected);
  REQUIRE(i == t.size());
}
