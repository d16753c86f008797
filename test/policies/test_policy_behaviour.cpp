// Each policy behaves as its paper describes, on the paper's kind of example
// (single-block objects), and the hot-prefix case of a KV cache: a system
// prompt reused every few requests survives bursts of one-off requests under
// frequency-aware policies, where vLLM's LRU loses it.
#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <random>

#include "policies/arc.h"
#include "policies/greedy_dual.h"
#include "policies/leaf_first.h"
#include "policies/lfu_da.h"
#include "policies/lfu.h"
#include "policies/s3fifo.h"
#include "policies/sieve.h"
#include "policies/tinylfu.h"
#include "test/policies/policy_test_util.h"

using namespace prefixsim;
using test::ObjectCache;

TEST_CASE("arc grows its recency target on B1 ghost hits and shrinks it on B2 ghost hits", "[policies][arc]") {
  ObjectCache c("arc", 2);
  c.access(1), c.access(1), c.access(2), c.access(2);  // both hit once: T2 = {1, 2}
  REQUIRE(c.policy<ArcPolicy>().in_t2(c.block_of(1)));
  c.access(3);  // T1 has nothing free: T2's LRU, 1, goes to B2
  REQUIRE_FALSE(c.cached(1));
  c.access(1);  // B2 ghost hit (p stays at its floor 0); T1's 3 goes to B1
  REQUIRE_FALSE(c.cached(3));
  REQUIRE(c.policy<ArcPolicy>().target_t1() == 0);
  REQUIRE(c.policy<ArcPolicy>().in_t2(c.block_of(1)));  // a ghost comes back into T2
  c.access(3);  // B1 ghost hit: recency would have paid, p grows
  REQUIRE(c.policy<ArcPolicy>().target_t1() == 1);
  REQUIRE_FALSE(c.cached(2));  // evicted into B2 to make room
  c.access(2);  // B2 ghost hit: frequency would have paid, p shrinks
  REQUIRE(c.policy<ArcPolicy>().target_t1() == 0);
}

TEST_CASE("arc keeps a twice-used set through a one-time scan, where lru does not", "[policies][arc]") {
  for (const char* spec : {"arc", "lru"}) {
    ObjectCache c(spec, 6);
    for (uint64_t x = 1; x <= 3; ++x) c.access(x), c.access(x);  // the working set, used twice
    for (uint64_t x = 100; x < 110; ++x) c.access(x);            // a scan of one-offs
    int kept = 0;
    for (uint64_t x = 1; x <= 3; ++x) kept += c.cached(x) ? 1 : 0;
    INFO(spec);
    if (std::string(spec) == "arc") REQUIRE(kept == 3);
    else REQUIRE(kept == 0);
  }
}

TEST_CASE("s3fifo sends one-hit wonders out of its small queue into the ghost list", "[policies][s3fifo]") {
  ObjectCache c("s3fifo", 20);  // small queue: 2 blocks
  c.access(1), c.access(1);     // hit while in S
  for (uint64_t x = 100; x < 160; ++x) c.access(x);
  REQUIRE(c.cached(1));  // promoted to M when it reached the end of S
  REQUIRE(c.policy<S3FifoPolicy>().in_main(c.block_of(1)));
  // The flood went through S: one-hit wonders are gone, remembered as ghosts.
  // (G is a FIFO of c hashes: the latest evicted are still remembered.)
  REQUIRE_FALSE(c.cached(100));
  REQUIRE_FALSE(c.cached(135));
  REQUIRE(c.policy<S3FifoPolicy>().ghosts().contains(ObjectCache::hash(135)));
  int in_small = 0, in_main = 0;
  for (uint64_t x = 100; x < 160; ++x) {
    if (!c.cached(x)) continue;
    (c.policy<S3FifoPolicy>().in_small(c.block_of(x)) ? in_small : in_main)++;
  }
  REQUIRE(in_main == 0);  // no one-off ever reached M
  // A ghost that comes back goes straight to M.
  c.access(135);
  REQUIRE(c.policy<S3FifoPolicy>().in_main(c.block_of(135)));
  // The same flood under plain FIFO loses object 1.
  ObjectCache f("fifo", 20);
  f.access(1), f.access(1);
  for (uint64_t x = 100; x < 160; ++x) f.access(x);
  REQUIRE_FALSE(f.cached(1));
}

TEST_CASE("sieve's hand clears visited bits, evicts in place and moves towards the newest", "[policies][sieve]") {
  ObjectCache c("sieve", 4);
  for (uint64_t x = 1; x <= 4; ++x) c.access(x);  // queue, oldest first: 1 2 3 4
  c.access(1), c.access(3);                        // visited: 1, 3
  c.access(5);  // hand: 1 visited (cleared), 2 evicted; hand stops at 3
  REQUIRE_FALSE(c.cached(2));
  REQUIRE(c.cached(1));
  REQUIRE(c.replayer().pool().hash_of(c.policy<SievePolicy>().hand()) == ObjectCache::hash(3));
  REQUIRE_FALSE(c.policy<SievePolicy>().visited(c.block_of(1)));
  c.access(6);  // 3 visited (cleared), 4 evicted; hand at 5
  REQUIRE_FALSE(c.cached(4));
  REQUIRE(c.replayer().pool().hash_of(c.policy<SievePolicy>().hand()) == ObjectCache::hash(5));
  c.access(1);  // visited again, but not moved
  c.access(7);  // 5 evicted (unvisited), 1 and 3 stay where they are
  REQUIRE_FALSE(c.cached(5));
  for (uint64_t x : {1, 3, 6, 7}) REQUIRE(c.cached(x));
}

TEST_CASE("tinylfu's count-min sketch never undercounts, saturates at 15, halves, and spreads keys",
          "[policies][tinylfu]") {
  CountMinSketch sk;
  sk.reset(1000, 10);  // halving after 10,000 adds
  // Keys shaped like the test caches' (lo and hi related) and random ones:
  // the hash must separate both.
  std::mt19937_64 rng(5);
  std::vector<BlockHash> keys;
  for (uint64_t x = 0; x < 100; ++x) keys.push_back(ObjectCache::hash(x));
  for (int i = 0; i < 100; ++i) keys.push_back(BlockHash{rng(), rng()});
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t n = 0; n < i % 20; ++n) sk.add(keys[i]);
  int exact = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint32_t want = static_cast<uint32_t>(std::min<size_t>(i % 20, 15));
    REQUIRE(sk.estimate(keys[i]) >= want);  // count-min: collisions only add
    exact += sk.estimate(keys[i]) == want ? 1 : 0;
  }
  REQUIRE(exact >= 180);  // 200 keys in 1,024 counters a row: few collide in all four
  const BlockHash hot = ObjectCache::hash(7777);
  for (int i = 0; i < 40; ++i) sk.add(hot);
  REQUIRE(sk.estimate(hot) == 15);
  // The reset: after the window every counter is halved.
  CountMinSketch small;
  small.reset(2, 8);  // window max(16, 16) = 16 adds
  for (int i = 0; i < 15; ++i) small.add(hot);
  REQUIRE(small.estimate(hot) == 15);
  small.add(hot);  // the 16th add: 15 -> halved to 7
  REQUIRE(small.estimate(hot) == 7);
}

TEST_CASE("tinylfu's count-min sketch matches exact aged counts on a small zipf stream", "[policies][tinylfu]") {
  // 3,000 adds of 300 keys (Zipf 1.0) into a sketch sized for 100 entries,
  // halved every 1,000 adds; the exact counts saturate at 15 and are halved
  // at the same adds. Count-Min never undercounts, and at this load few keys
  // collide in all four rows.
  CountMinSketch sk;
  sk.reset(100, 10);
  std::map<uint64_t, uint32_t> exact;
  std::mt19937_64 rng(11);
  std::vector<double> cum;
  double t = 0;
  for (int i = 1; i <= 300; ++i) cum.push_back(t += 1.0 / i);
  for (int n = 1; n <= 3000; ++n) {
    const uint64_t x = static_cast<uint64_t>(
        std::lower_bound(cum.begin(), cum.end(), std::uniform_real_distribution<double>(0, t)(rng)) - cum.begin());
    sk.add(ObjectCache::hash(x));
    uint32_t& c = exact[x];
    if (c < 15) ++c;
    if (n % 1000 == 0)
      for (auto& [k, v] : exact) v /= 2;
    if (n % 250 == 0) {
      int equal = 0;
      for (uint64_t k = 0; k < 300; ++k) {
        const uint32_t want = exact.count(k) ? exact[k] : 0;
        INFO("add " << n << " key " << k);
        REQUIRE(sk.estimate(ObjectCache::hash(k)) >= want);
        REQUIRE(sk.estimate(ObjectCache::hash(k)) <= want + 4);
        equal += sk.estimate(ObjectCache::hash(k)) == want ? 1 : 0;
      }
      INFO("add " << n);
      REQUIRE(equal >= 285);  // 95 % exact
    }
  }
}

TEST_CASE("tinylfu refuses a one-off block in favour of a hot one that lru would evict", "[policies][tinylfu]") {
  for (const char* spec : {"tinylfu", "lru"}) {
    ObjectCache c(spec, 2);
    for (int i = 0; i < 5; ++i) c.access(1);  // hot
    for (uint64_t x = 100; x < 110; ++x) c.access(x);  // one-offs, each newer than the hot block
    INFO(spec);
    if (std::string(spec) == "tinylfu") {
      REQUIRE(c.cached(1));
      REQUIRE(c.policy<TinyLfuPolicy>().in_main(c.block_of(1)));
      REQUIRE(c.policy<TinyLfuPolicy>().estimate(ObjectCache::hash(1)) >
              c.policy<TinyLfuPolicy>().estimate(ObjectCache::hash(109)));
    } else {
      REQUIRE_FALSE(c.cached(1));
    }
  }
}

TEST_CASE("lfu evicts the least used block and breaks ties by release order", "[policies][lfu]") {
  ObjectCache c("lfu", 3);
  c.access(1), c.access(1), c.access(1);  // count 3
  c.access(2);                            // count 1, released before 3
  c.access(3), c.access(3);               // count 2
  c.access(4);                            // evicts 2 (lowest count)
  REQUIRE_FALSE(c.cached(2));
  c.access(5);  // 4 (count 1) goes; 1 and 3 stay
  REQUIRE_FALSE(c.cached(4));
  REQUIRE(c.cached(1));
  REQUIRE(c.cached(3));
}

TEST_CASE("lfu with aging lets an old hot block fade", "[policies][lfu]") {
  ObjectCache plain("lfu", 2), aged("lfu:half_life=2", 2);
  for (ObjectCache* c : {&plain, &aged}) {
    for (int i = 0; i < 4; ++i) c->access(1);  // hot long ago
    for (uint64_t x = 10; x < 20; ++x) c->access(x), c->access(x);  // newer, used twice each
  }
  REQUIRE(plain.cached(1));       // 4 uses beat 2 forever
  REQUIRE_FALSE(aged.cached(1));  // decayed below the recent pairs
}

TEST_CASE("lfu-da and gdsf raise their inflation value to each evicted priority", "[policies][gdsf]") {
  ObjectCache c("lfu-da", 2);
  c.access(1), c.access(1), c.access(2);
  REQUIRE(c.policy<LfuDaPolicy>().inflation() == 0);
  c.access(3);  // evicts 2 (K = 1)
  REQUIRE_FALSE(c.cached(2));
  REQUIRE(c.policy<LfuDaPolicy>().inflation() == 1);
  REQUIRE(c.policy<LfuDaPolicy>().priority(c.block_of(3)) == 2);  // L + 1
}

TEST_CASE("gdsf keeps deep blocks of long prompts, whose prefill costs the most", "[policies][gdsf]") {
  // A 3-block chain and a 1-block prompt; the chain's root is hit once more.
  // One eviction is then forced. gdsf drops the shallow block (cheapest to
  // recompute); lfu-da, blind to cost, drops the chain's tail, the least
  // recently released of the blocks used once (a block table is freed last
  // to first).
  constexpr int32_t B = 16;
  const BlockHash deep[3] = {{1, 1}, {2, 2}, {3, 3}};
  const BlockHash shallow{9, 9}, other{7, 7};
  for (const char* spec : {"gdsf:attn_tokens=64", "lfu-da"}) {
    CacheReplayer rep(B, 3 + 1 + 1 + 1, test::any_policy(spec, B));
    rep.step({deep, 3}, 3 * B + 1, 3 * B + 1);
    rep.step({&shallow, 1}, B + 1, B + 1);
    rep.step({deep, 1}, B + 1, B + 1);
    REQUIRE(rep.result().evictions == 0);
    rep.step({&other, 1}, B + 1, B + 1);
    REQUIRE(rep.result().evictions == 1);
    INFO(spec);
    if (std::string(spec) == "lfu-da") {
      REQUIRE(rep.pool().find(deep[2]) == kNoBlock);
      REQUIRE(rep.pool().find(shallow) != kNoBlock);
    } else {
      REQUIRE(rep.pool().find(shallow) == kNoBlock);
      REQUIRE(rep.pool().find(deep[2]) != kNoBlock);
    }
  }
}

TEST_CASE("leaf-first cuts a prefix chain from its tail and keeps a shared root", "[policies][leaf-first]") {
  constexpr int32_t B = 4;
  // Pool: 6 usable blocks. Chain a0-a1-a2 then chain b0-b1; then a one-off.
  CacheReplayer rep(B, 7, test::any_policy("leaf-first", B));
  BlockHash a[3] = {{1, 1}, {2, 2}, {3, 3}}, b[2] = {{4, 4}, {5, 5}};
  rep.step({a, 3}, 3 * B, 3 * B);  // 3 full blocks cached
  rep.step({b, 2}, 2 * B, 2 * B);
  const auto& lf = dynamic_cast<const LeafFirstPolicy&>(rep.pool().policy());
  REQUIRE(lf.children(rep.pool().find(a[0])) == 1);
  REQUIRE(lf.children(rep.pool().find(a[2])) == 0);
  BlockHash c[3] = {{6, 6}, {7, 7}, {8, 8}};
  rep.step({c, 3}, 3 * B, 3 * B);  // needs 3 blocks: 1 never used, then 2 leaves
  // The leaves a2 (released first) and then b1 or a1 go; never a root.
  REQUIRE(rep.pool().find(a[0]) != kNoBlock);
  REQUIRE(rep.pool().find(b[0]) != kNoBlock);
  REQUIRE(rep.pool().find(a[2]) == kNoBlock);
  REQUIRE(rep.pool().check_invariants().empty());
}

TEST_CASE("a hot 512-token system prompt survives one-off bursts under lfu, arc and s3fifo but not lru",
          "[policies][hot-prefix]") {
  constexpr int32_t B = 16;
  std::vector<int32_t> system_prompt;
  for (int32_t i = 0; i < 512; ++i) system_prompt.push_back(100000 + i);
  std::vector<Request> trace;
  int id = 0;
  auto with_prompt = [&] {
    trace.push_back(test::token_request("r" + std::to_string(id), system_prompt, 64, static_cast<uint64_t>(id), 16));
    ++id;
  };
  with_prompt(), with_prompt();
  for (int round = 0; round < 8; ++round) {
    for (int k = 0; k < 4; ++k) {  // 4 one-offs of 64 blocks: more than the whole pool
      trace.push_back(test::token_request("r" + std::to_string(id), {}, 1000, static_cast<uint64_t>(id), 16));
      ++id;
    }
    with_prompt();
  }
  const int64_t num_blocks = 200 + 1;
  for (const char* spec : {"lru", "lfu", "arc", "s3fifo"}) {
    // Hit tokens of the system-prompt requests after the first two.
    CacheReplayer rep(B, num_blocks, test::any_policy(spec, B), true);
    BlockHashChain chain;
    int64_t sp_hits = 0;
    for (size_t i = 0; i < trace.size(); ++i) {
      const Request& r = trace[i];
      chain.reset(B, &r.extras);
      r.append_prompt_to(chain);
      std::vector<int32_t> out;
      for (int64_t k = 0; k < r.output_len; ++k) out.push_back(r.output_token(k));
      chain.append_tokens(out);
      const int64_t before = rep.result().hit_tokens;
      rep.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
      if (i >= 2 && r.tokens.front() == 100000) sp_hits += rep.result().hit_tokens - before;
    }
    INFO(spec);
    if (std::string(spec) == "lru") REQUIRE(sp_hits == 0);
    else REQUIRE(sp_hits == 8 * 512);
  }
}
