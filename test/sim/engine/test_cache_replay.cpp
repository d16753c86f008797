// Cache-mode replay: it makes the KvCacheManager's decisions, whichever path
// feeds it; it counts refused requests; belady bounds the other policies on
// small traces. (On the real Mooncake traces: test_cache_replay_real.cpp.)
#include <catch2/catch.hpp>
#include <algorithm>
#include <functional>
#include <random>

#include "policies/block_future.h"
#include "policies/belady.h"
#include "policies/fifo.h"
#include "policies/greedy_dual.h"
#include "policies/leaf_first.h"
#include "policies/lfu_da.h"
#include "policies/lfu.h"
#include "sim/kv/block_hash_index.h"
#include "sim/kv/dense_key_index.h"
#include "sim/base/error.h"
#include "sim/kv/kv_cache_manager.h"
#include "test/policies/policy_test_util.h"
#include "test/support.h"

using namespace prefixsim;

namespace {

// Sessions that grow turn by turn over a few shared system prompts, plus
// one-offs: the shapes that make prefix caching matter.
std::vector<Request> small_trace(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int32_t>> sessions(4);
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    const int kind = static_cast<int>(rng() % 6);
    std::vector<int32_t> prefix;
    if (kind < 4) {
      auto& s = sessions[static_cast<size_t>(kind)];
      if (s.empty())
        for (int t = 0; t < 8 + kind * 5; ++t) s.push_back(kind * 1000 + t);
      prefix = s;
    }
    // One draw per statement: the order in which function arguments are
    // evaluated is unspecified (gcc and clang differ), the trace must not be.
    // (This is the order gcc used when the expectations below were set.)
    const int64_t out_len = static_cast<int64_t>(rng() % 6);
    const uint64_t salt = rng();
    const int64_t own = 1 + static_cast<int64_t>(rng() % 9);
    Request r = test::token_request("q" + std::to_string(i), prefix, own, salt, out_len);
    if (kind < 4) {  // the next turn repeats this prompt (a conversation)
      auto& s = sessions[static_cast<size_t>(kind)];
      s = r.tokens;
      if (s.size() > 60) s.resize(8 + static_cast<size_t>(kind) * 5);
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The same content in the same blocks, block for block.
void require_same_blocks(const CacheReplayer& a, const CacheReplayer& b, int64_t blocks) {
  for (BlockId id = 1; id < blocks; ++id) {
    REQUIRE(a.pool().is_cached(id) == b.pool().is_cached(id));
    if (a.pool().is_cached(id)) REQUIRE(a.pool().hash_of(id) == b.pool().hash_of(id));
  }
}

// Replays t under two policies side by side, checking after every request
// that they made the same choices.
// A small interned trace (400 requests) and its future, for belady.
std::pair<PreparedTrace, std::shared_ptr<const BlockFuture>> small_trace_with_future(uint64_t seed, int32_t B) {
  PreparedTrace t = prepare_trace(small_trace(seed, 400), B);
  auto future = BlockFuture::build(t.num_keys(), t.size(), [&](size_t i) { return t.lookup_keys(i); });
  return {std::move(t), std::move(future)};
}

// Replays request i of t on both.
void step_both(CacheReplayer& a, CacheReplayer& b, const PreparedTrace& t, size_t i) {
  for (CacheReplayer* r : {&a, &b})
    r->step_keys(t.keys_of(i), t.key_hashes, t.requests[i].prompt_len, t.requests[i].total_len);
}

void require_same_evictions(const PreparedTrace& t, int64_t blocks, std::unique_ptr<EvictionPolicy> x,
                            std::unique_ptr<EvictionPolicy> y) {
  CacheReplayer a(t.block_size, blocks, std::move(x), true, t.num_keys());
  CacheReplayer b(t.block_size, blocks, std::move(y), true, t.num_keys());
  for (size_t i = 0; i < t.size(); ++i) {
    step_both(a, b, t, i);
    require_same_blocks(a, b, blocks);
  }
  REQUIRE(a.result().hit_tokens == b.result().hit_tokens);
  REQUIRE(a.result().evictions == b.result().evictions);
}

}  // namespace

TEST_CASE("cache replay makes the KvCacheManager's decisions request by request", "[cache-replay]") {
  constexpr int32_t B = 4;
  const auto trace = small_trace(7, 300);
  for (const char* spec : {"lru", "s3fifo", "leaf-first"}) {
    // The manager, driven by hand: lookup, allocate every computed token
    // (prompt and outputs but the last: Request::kv_len), free.
    BlockPool pool(30, true, test::any_policy(spec, B));
    KvCacheManager kv(B, pool);
    CacheReplayer rep(B, 30, test::any_policy(spec, B), true);
    BlockHashChain chain;
    for (const Request& r : trace) {
      chain.reset(B, &r.extras);
      r.append_prompt_to(chain);
      for (int64_t k = 0; k + 1 < r.output_len; ++k) {
        const int32_t t = r.output_token(k);
        chain.append_tokens({&t, 1});
      }
      const int64_t total = r.kv_len();
      const LookupResult hit = kv.lookup(chain, r.prompt_len, false);
      KvSeq seq;
      const bool ok = kv.allocate(seq, chain, total, 0, total - hit.hit_tokens, hit.blocks, hit.hit_tokens, true);
      const auto before = rep.result();
      rep.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
      const auto after = rep.result();
      INFO(spec << " request " << r.id);
      REQUIRE(ok == (after.requests == before.requests + 1));
      if (ok) REQUIRE(after.hit_tokens - before.hit_tokens == hit.hit_tokens);
      kv.free(seq);
      REQUIRE(pool.evictions() == rep.pool().evictions());
    }
  }
}

TEST_CASE("cache replay gives the same result from requests, a prepared trace and a stream", "[cache-replay]") {
  constexpr int32_t B = 4;
  const auto trace = small_trace(3, 400);
  const PreparedTrace prepared = prepare_trace(trace, B);
  const auto a = run_cache_replay(trace, B, 40, test::any_policy("arc", B));
  const auto b = run_cache_replay(prepared, 40, test::any_policy("arc", B));
  REQUIRE(a.hit_tokens == b.hit_tokens);
  REQUIRE(a.evictions == b.evictions);
  REQUIRE(a.prompt_tokens == prepared.prompt_tokens);
  REQUIRE(a.requests == trace.size());
  REQUIRE(a.hit_tokens > 0);
  REQUIRE(a.hit_rate == Approx(static_cast<double>(a.hit_tokens) / static_cast<double>(a.prompt_tokens)));
}

TEST_CASE("an interned (keyed) replay evicts and hits exactly as a hash-indexed one, for every policy",
          "[cache-replay][property]") {
  constexpr int32_t B = 4;
  for (uint64_t seed = 11; seed <= 14; ++seed) {
    const auto trace = small_trace(seed, 300);
    const PreparedTrace t = prepare_trace(trace, B);
    // Interning: one key per distinct hash, first appearance first.
    REQUIRE(t.num_keys() > 0);
    REQUIRE(t.num_keys() < t.keys.size());  // the trace shares prefixes
    for (size_t i = 0, next = 0; i < t.keys.size(); ++i) {
      REQUIRE(t.keys[i] <= next);
      if (t.keys[i] == next) ++next;
    }
    for (const PolicyInfo& info : policy_registry()) {
      if (info.name == "belady") continue;  // its future exists for keyed replays only
      for (int64_t blocks : {9, 25, 70}) {
        INFO("seed " << seed << " policy " << info.name << " blocks " << blocks);
        CacheReplayer by_hash(B, blocks, test::any_policy(info.name, B), true);
        CacheReplayer by_key(B, blocks, test::any_policy(info.name, B), true, t.num_keys());
        BlockHashChain chain;
        std::vector<int32_t> outputs;
        for (size_t i = 0; i < trace.size(); ++i) {
          const Request& r = trace[i];
          chain.reset(B, &r.extras);
          r.append_prompt_to(chain);
          outputs.clear();
          for (int64_t k = 0; k < r.output_len; ++k) outputs.push_back(r.output_token(k));
          chain.append_tokens(outputs);
          by_hash.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
          by_key.step_keys(t.keys_of(i), t.key_hashes, t.requests[i].prompt_len, t.requests[i].total_len);
          require_same_blocks(by_hash, by_key, blocks);
        }
        REQUIRE(by_hash.result().hit_tokens == by_key.result().hit_tokens);
        REQUIRE(by_hash.result().evictions == by_key.result().evictions);
      }
    }
  }
}

// Each fast order beside the heap it replaced (constructor flag false).
TEST_CASE("fifo's cursor, leaf-first's lists and the bucket queues of lfu-da, gdsf and belady evict exactly as "
          "their heaps do",
          "[cache-replay][property][fifo][leaf-first][lfu-da][gdsf][belady]") {
  static constexpr int32_t B = 4;  // static: the lambdas below use it uncaptured
  using Future = std::shared_ptr<const BlockFuture>;
  struct Case {
    const char* name;
    std::function<std::unique_ptr<EvictionPolicy>(bool fast, const Future&)> make;
  };
  const Case cases[] = {
      {"fifo", [](bool fast, const Future&) { return std::make_unique<FifoPolicy>(fast); }},
      {"leaf-first", [](bool fast, const Future&) { return std::make_unique<LeafFirstPolicy>(fast); }},
      {"lfu-da",
       [](bool fast, const Future&) -> std::unique_ptr<EvictionPolicy> {
         if (fast) return std::make_unique<LfuDaPolicy>();
         return std::make_unique<GreedyDualPolicy>("lfu-da", B, 0, false);
       }},
      // A ring of 3 keys: hot blocks go through the heap, keys wrap around.
      {"lfu-da, window 3",
       [](bool fast, const Future&) -> std::unique_ptr<EvictionPolicy> {
         if (fast) return std::make_unique<LfuDaPolicy>(3);
         return std::make_unique<GreedyDualPolicy>("lfu-da", B, 0, false);
       }},
      {"gdsf", [](bool fast, const Future&) { return std::make_unique<GreedyDualPolicy>("gdsf", B, 32768, fast); }},
      // Costs of up to ~100 units: keys spread far beyond gdsf's ring.
      {"gdsf:attn_tokens=4",
       [](bool fast, const Future&) { return std::make_unique<GreedyDualPolicy>("gdsf", B, 4, fast); }},
      {"belady", [](bool fast, const Future& f) { return std::make_unique<BeladyPolicy>(f, fast); }},
  };
  for (uint64_t seed = 31; seed <= 34; ++seed) {
    const auto [t, future] = small_trace_with_future(seed, B);
    for (int64_t blocks : {8, 20, 50})
      for (const Case& c : cases) {
        INFO("seed " << seed << " blocks " << blocks << " " << c.name);
        require_same_evictions(t, blocks, c.make(true, future), c.make(false, future));
      }
  }
}

// belady evicts never-used-again blocks in release order, not deepest first
// as it once did: other blocks go, but no hit or eviction count may change.
TEST_CASE("belady's order among blocks never used again changes no hit and no eviction count",
          "[cache-replay][property][belady]") {
  constexpr int32_t B = 4;
  for (uint64_t seed = 41; seed <= 46; ++seed) {
    const auto [t, future] = small_trace_with_future(seed, B);
    for (int64_t blocks : {8, 20, 50, 120}) {
      INFO("seed " << seed << " blocks " << blocks);
      CacheReplayer now(B, blocks, std::make_unique<BeladyPolicy>(future), true, t.num_keys());
      CacheReplayer before(B, blocks, std::make_unique<BeladyPolicy>(future, false, true), true, t.num_keys());
      bool orders_differ = false;
      for (size_t i = 0; i < t.size(); ++i) {
        step_both(now, before, t, i);
        REQUIRE(now.result().hit_tokens == before.result().hit_tokens);
        REQUIRE(now.result().evictions == before.result().evictions);
        for (BlockId b = 1; b < blocks && !orders_differ; ++b)
          orders_differ = now.pool().is_cached(b) != before.pool().is_cached(b) ||
                          (now.pool().is_cached(b) && now.pool().hash_of(b) != before.pool().hash_of(b));
      }
      if (blocks == 20) REQUIRE(orders_differ);  // the test sees two different orders
    }
  }
}

TEST_CASE("lfu's per-count lists evict exactly as its heap does, hot blocks beyond the lists included",
          "[cache-replay][property][lfu]") {
  constexpr int32_t B = 4;
  std::vector<std::vector<Request>> traces = {small_trace(21, 400), small_trace(22, 400)};
  // 3000 requests behind one shared block: its count passes kBuckets, so
  // it moves to the heap while the others stay in the lists.
  std::vector<Request> hot;
  for (int i = 0; i < 3000; ++i)
    hot.push_back(test::token_request("h" + std::to_string(i), {7, 7, 7, 7}, 1 + i % 7, static_cast<uint64_t>(i),
                                      i % 3));
  traces.push_back(hot);
  for (const auto& trace : traces) {
    const PreparedTrace t = prepare_trace(trace, B);
    for (int64_t blocks : {8, 20, 50}) {
      INFO("requests " << trace.size() << " blocks " << blocks);
      require_same_evictions(t, blocks, std::make_unique<LfuPolicy>(0.0, true), std::make_unique<LfuPolicy>(0.0, false));
    }
  }
  // The hot block really went past the lists.
  const PreparedTrace t = prepare_trace(hot, B);
  auto policy = std::make_unique<LfuPolicy>(0.0, true);
  const LfuPolicy* lfu = policy.get();
  CacheReplayer rep(B, 20, std::move(policy), false, t.num_keys());
  for (size_t i = 0; i < t.size(); ++i)
    rep.step_keys(t.keys_of(i), t.key_hashes, t.requests[i].prompt_len, t.requests[i].total_len);
  const BlockId shared = rep.pool().find_key(t.keys_of(0)[0]);
  REQUIRE(shared != kNoBlock);
  REQUIRE(lfu->count(shared) >= LfuPolicy::kBuckets);
}

TEST_CASE("the dense key index keeps duplicates in insertion order, as the hash index does", "[cache-replay]") {
  DenseKeyIndex ix;
  ix.reset(8, 3);
  REQUIRE(ix.find(1) == kNoBlock);
  ix.insert(5, 1);
  ix.insert(2, 1);
  ix.insert(7, 1);
  ix.insert(3, 0);
  REQUIRE(ix.find(1) == 5);
  REQUIRE(ix.next_duplicate(5) == 2);
  REQUIRE(ix.next_duplicate(2) == 7);
  ix.erase(2);  // from the middle
  REQUIRE(ix.next_duplicate(5) == 7);
  REQUIRE_FALSE(ix.contains_block(2));
  ix.erase(5);  // the head: the next earliest takes its place
  REQUIRE(ix.find(1) == 7);
  ix.erase(7);
  REQUIRE(ix.find(1) == kNoBlock);
  REQUIRE(ix.find(0) == 3);
  REQUIRE(ix.key_of(3) == 0);
  REQUIRE_THROWS_AS(ix.erase(6), InternalError);
}

TEST_CASE("the hash index finds the earliest-inserted block of a hash, whatever shares its chain", "[cache-replay]") {
  // An 8-block index has 32 buckets; both hashes land in bucket 3 with equal
  // tags (high bits), so only the full hash tells them apart.
  std::vector<BlockHash> hashes(8);
  const BlockHash a{3, 0xabcdULL << 32}, b{(1ULL << 40) | 3, 0xabcdULL << 32};
  BlockHashIndex ix;
  ix.reset(8, hashes.data());
  REQUIRE(ix.find(a) == kNoBlock);
  for (auto [blk, h] : {std::pair{5, a}, {6, b}, {2, a}, {7, a}, {1, b}}) {
    hashes[static_cast<size_t>(blk)] = h;
    ix.insert(blk);
  }
  REQUIRE(ix.find(a) == 5);
  REQUIRE(ix.find(b) == 6);
  REQUIRE(ix.next_duplicate(5) == 2);
  REQUIRE(ix.next_duplicate(2) == 7);
  REQUIRE(ix.next_duplicate(7) == kNoBlock);
  REQUIRE(ix.next_duplicate(6) == 1);
  ix.erase(2);  // from the middle
  REQUIRE(ix.next_duplicate(5) == 7);
  REQUIRE_FALSE(ix.contains_block(2));
  ix.erase(5);  // the earliest: the next earliest takes its place
  REQUIRE(ix.find(a) == 7);
  ix.erase(6);
  REQUIRE(ix.find(b) == 1);
  ix.erase(7);
  REQUIRE(ix.find(a) == kNoBlock);
  REQUIRE(ix.size() == 1);
  REQUIRE_THROWS_AS(ix.erase(3), InternalError);
}

TEST_CASE("the hash index agrees with a plain list of insertions under random inserts and erases",
          "[cache-replay]") {
  // Chains are doubly linked (erase unlinks without a walk): against a plain
  // model (every cached block with its hash, in insertion order), after
  // every operation, find() is the earliest of its hash, next_duplicate()
  // the next, contains_block() and size() exact. Few distinct hashes, many
  // sharing a bucket and a tag: long chains with duplicates, erased from
  // the head, the middle and the tail.
  constexpr int32_t N = 64;
  std::vector<BlockHash> hashes(N);
  BlockHashIndex ix;
  ix.reset(N, hashes.data());
  std::vector<BlockId> order;  // cached blocks, earliest first
  std::mt19937_64 rng(44);
  const auto hash_k = [](uint64_t k) { return BlockHash{(k % 3) | (k << 40), (0x77ULL << 32) | (k % 2)}; };
  for (int op = 0; op < 20000; ++op) {
    const auto b = static_cast<BlockId>(1 + rng() % (N - 1));
    const auto at = std::find(order.begin(), order.end(), b);
    if (at == order.end()) {
      hashes[static_cast<size_t>(b)] = hash_k(rng() % 9);
      ix.insert(b);
      order.push_back(b);
    } else {
      ix.erase(b);
      order.erase(at);
    }
    REQUIRE(ix.size() == order.size());
    for (uint64_t k = 0; k < 9; ++k) {
      std::vector<BlockId> same;
      for (BlockId c : order)
        if (hashes[static_cast<size_t>(c)] == hash_k(k)) same.push_back(c);
      BlockId c = ix.find(hash_k(k));
      for (BlockId want : same) {
        REQUIRE(c == want);
        c = ix.next_duplicate(c);
      }
      REQUIRE(c == kNoBlock);
    }
    for (BlockId c = 1; c < N; ++c)
      REQUIRE(ix.contains_block(c) == (std::find(order.begin(), order.end(), c) != order.end()));
  }
}

TEST_CASE("cache replay counts a request larger than the pool as refused, never silently", "[cache-replay]") {
  constexpr int32_t B = 4;
  std::vector<Request> trace = {test::token_request("small", {}, 7, 1, 0), test::token_request("big", {}, 40, 2, 0),
                                test::token_request("small2", {}, 7, 3, 1)};
  const auto r = run_cache_replay(trace, B, 6, test::any_policy("lru", B));
  REQUIRE(r.refused_requests == 1);
  REQUIRE(r.refused_prompt_tokens == 40);
  REQUIRE(r.requests == 2);
  REQUIRE(r.prompt_tokens == 14);
}

// Not a theorem (belady.h: pinned blocks and whole-prefix hits void MIN's
// proof), but it holds on these fixed traces and guards the future's
// plumbing: a belady fed the wrong keys falls far below lru.
TEST_CASE("belady hits at least as much as every other policy on small traces", "[cache-replay][belady]") {
  constexpr int32_t B = 4;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto trace = small_trace(seed, 250);
    const PreparedTrace t = prepare_trace(trace, B);
    const auto future = BlockFuture::build(t.num_keys(), t.size(), [&](size_t i) { return t.lookup_keys(i); });
    for (int64_t blocks : {12, 20, 35, 60}) {
      const auto best = run_cache_replay(t, blocks, test::any_policy("belady", B, future), true);
      for (const PolicyInfo& info : policy_registry()) {
        const auto r = run_cache_replay(t, blocks, test::any_policy(info.name, B, future), true);
        INFO("seed " << seed << " blocks " << blocks << " policy " << info.name);
        REQUIRE(best.hit_tokens >= r.hit_tokens);
      }
    }
  }
}
