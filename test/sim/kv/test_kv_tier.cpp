// KV tiers below the GPU pool (sim/kv/kv_tier.h): a tier's own rules, the
// load-time rule on hand-made cases, the write-through and write-back
// (evict) paths, the engine's loading state and TTFT split, and property
// tests of the accounting over random configurations in cache mode.
#include <catch2/catch.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/engine.h"
#include "sim/engine/vector_source.h"
#include "sim/kv/kv_cache_manager.h"
#include "sim/kv/kv_tier.h"

using namespace prefixsim;

namespace {

constexpr int64_t kBytes = 1000;  // bytes per block in the hand-made cases

KvTierConfig tier(const std::string& name, int64_t blocks, TierStoreRule store = TierStoreRule::kOnCompute) {
  KvTierConfig c;
  c.name = name;
  c.capacity_blocks = blocks;
  c.bytes_per_block = kBytes;
  c.store = store;
  return c;
}

BlockHash h(uint64_t i) { return BlockHash{i * 0x9e3779b97f4a7c15ULL + 1, i}; }

std::vector<BlockHash> chain_of(std::initializer_list<uint64_t> ids) {
  std::vector<BlockHash> v;
  for (uint64_t i : ids) v.push_back(h(i));
  return v;
}

}  // namespace

TEST_CASE("a tier writes a block once, evicts by its policy and never holds more than its capacity", "[tier]") {
  KvTier t(tier("cpu", 3), make_policy("lru"));
  for (uint64_t i = 1; i <= 3; ++i) REQUIRE(t.store(h(i), kNoKey, 0));
  CHECK_FALSE(t.store(h(2), kNoKey, 0));  // already there: nothing written
  CHECK(t.stats().stored_blocks == 3);
  t.touch(h(1), kNoKey);                  // 2 is now the least recently used
  REQUIRE(t.store(h(4), kNoKey, 0));
  CHECK_FALSE(t.contains(h(2), kNoKey));
  CHECK(t.contains(h(1), kNoKey));
  CHECK(t.occupancy() == 3);
  CHECK(t.stats().evicted_blocks == 1);
  CHECK(t.stats().bytes_written == 4 * kBytes);
  CHECK(t.check_invariants().empty());
}

TEST_CASE("an unbounded tier keeps every block it is given", "[tier]") {
  KvTier t(tier("cpu", kUnboundedTier), nullptr);
  for (uint64_t i = 1; i <= 1000; ++i) REQUIRE(t.store(h(i), kNoKey, 0));
  CHECK(t.occupancy() == 1000);
  CHECK(t.stats().evicted_blocks == 0);
  CHECK(t.holds(h(1), kNoKey, 0));
}

TEST_CASE("load time is bytes over bandwidth, serialised per link, plus latency; tiers load in parallel", "[tier]") {
  KvTierConfig a = tier("cpu", 100), b = tier("ssd", 100);
  a.read_bytes_per_s = 1e6;   // 1 ms per block
  a.latency = 500'000;        // 0.5 ms
  b.read_bytes_per_s = 2e6;   // 0.5 ms per block
  b.latency = 2'000'000;      // 2 ms
  KvTier ta(a, make_policy("lru")), tb(b, make_policy("lru"));
  KvTierStack stack({&ta, &tb});
  stack.set_timed(true);
  for (uint64_t i : {1, 2, 3}) ta.store(h(i), kNoKey, 0);
  for (uint64_t i : {4, 5}) tb.store(h(i), kNoKey, 0);
  const auto c = chain_of({1, 2, 3, 4, 5, 6});
  // Blocks 0-2 from cpu, 3-4 from ssd, block 5 nowhere: the walk stops there.
  REQUIRE(stack.lookup(c, {}, 0, c.size(), 0) == 5);
  CHECK(stack.blocks_from(0) == 3);
  CHECK(stack.blocks_from(1) == 2);
  // cpu: 3 ms + 0.5 ms; ssd: 1 ms + 2 ms: the later one.
  CHECK(stack.load(0) == 3'500'000);
  // The next load on the cpu link waits for the first one's 3 ms of transfer.
  const auto c2 = chain_of({1});
  REQUIRE(stack.lookup(c2, {}, 0, 1, 1'000'000) == 1);
  CHECK(stack.load(1'000'000) == 3'000'000 + 1'000'000 + 500'000);
  CHECK(ta.stats().hit_blocks == 4);
  CHECK(ta.stats().bytes_read == 4 * kBytes);
  CHECK(tb.stats().bytes_read == 2 * kBytes);
  // A lookup starting past the GPU prefix counts only what follows it.
  REQUIRE(stack.lookup(c, {}, 2, c.size(), 10'000'000) == 3);
  CHECK(stack.blocks_from(0) == 1);
}

TEST_CASE("a written block is readable only once its write is done on the write link", "[tier]") {
  KvTierConfig a = tier("cpu", 100);
  a.write_bytes_per_s = 1e6;  // 1 ms per block
  KvTier ta(a, make_policy("lru"));
  KvTierStack stack({&ta});
  stack.set_timed(true);
  stack.set_now(0);
  const auto c = chain_of({1, 2});
  stack.offer(c, {}, 0, 2);  // written one after the other: ready at 1 ms and 2 ms
  CHECK(stack.lookup(c, {}, 0, 2, 999'999) == 0);
  CHECK(stack.lookup(c, {}, 0, 2, 1'000'000) == 1);
  CHECK(stack.lookup(c, {}, 0, 2, 2'000'000) == 2);
  CHECK(ta.stats().bytes_written == 2 * kBytes);
}

TEST_CASE("write-back tiers take the evictions of the level above: GPU, then tier 0, then tier 1", "[tier]") {
  KvTier t0(tier("cpu", 2, TierStoreRule::kOnEvict), make_policy("lru"));
  KvTier t1(tier("ssd", 10, TierStoreRule::kOnEvict), make_policy("lru"));
  KvTierStack stack({&t0, &t1});
  BlockPool gpu(3, true, make_policy("lru"));  // 2 usable blocks
  KvCacheManager kv(16, gpu);
  stack.attach(gpu);
  // Six one-block requests 1..6 through a GPU of two blocks: each evicts.
  for (uint64_t i = 1; i <= 6; ++i) {
    BlockHashChain chain(16, nullptr);
    std::vector<int32_t> toks(16, static_cast<int32_t>(i));
    chain.append_tokens(toks);
    KvSeq seq;
    REQUIRE(kv.allocate(seq, chain, 16, 0, 16, {}, 0, true));
    kv.free(seq);
  }
  // Nothing written through (compute-mode tiers are absent); the GPU holds
  // the last two, cpu the two evicted before them, ssd the two before those.
  CHECK(gpu.evictions() == 4);
  CHECK(t0.stats().stored_blocks == 4);
  CHECK(t0.occupancy() == 2);
  CHECK(t1.stats().stored_blocks == 2);
  CHECK(t0.stats().evicted_blocks == 2);
  CHECK(t1.check_invariants().empty());
}

namespace {

// 5 ms per step plus 1 us per new token.
class LinearExecutor final : public Executor {
 public:
  TimeNs step_time(const Batch& b) override { return 5'000'000 + 1'000 * b.total_new_tokens(); }
};

class Collect final : public EngineObserver {
 public:
  void on_request_finished(const RequestRecord& r) override { done.emplace_back(r.request->id, r); }
  const RequestRecord& of(const std::string& id) const {
    for (const auto& [name, rec] : done)
      if (name == id) return rec;
    FAIL("request " << id << " did not finish");
    return done.front().second;
  }
  std::vector<std::pair<std::string, RequestRecord>> done;
};

// One replica with one CPU tier (read/write rates in bytes/s) under it.
struct TierRig {
  BlockPool pool;
  KvCacheManager kv;
  KvTier cpu;
  KvTierStack stack;
  LinearExecutor exec;
  Collect obs;
  Engine engine;
  TierRig(int32_t num_blocks, double read, double write, TimeNs latency, bool async = false)
      : pool(num_blocks, true, make_policy("lru")),
        kv(16, pool),
        cpu(rates(read, write, latency), make_policy("lru")),
        stack({&cpu}),
        engine(config(async), kv, exec) {
    engine.set_observer(&obs);
    engine.set_tiers(&stack);
  }
  static SchedulerConfig config(bool async) {
    SchedulerConfig c;
    c.async_scheduling = async;
    return c;
  }
  static KvTierConfig rates(double read, double write, TimeNs latency) {
    KvTierConfig c = tier("cpu", 100);
    c.read_bytes_per_s = read;
    c.write_bytes_per_s = write;
    c.latency = latency;
    return c;
  }
};

Request make(const std::string& id, TimeNs t, int32_t first, int n) {
  Request r;
  r.id = id;
  r.arrival = t;
  for (int i = 0; i < n; ++i) r.tokens.push_back(first + i);
  r.prompt_len = n;
  r.output_len = 1;
  return r;
}

}  // namespace

TEST_CASE("engine: a prefix evicted from the GPU is loaded from the CPU tier, and TTFT = queue + load + prefill",
          "[tier][engine]") {
  const bool async = GENERATE(false, true);  // vLLM's sync loop, and its async one
  INFO("async scheduling " << async);
  TierRig rig(6, 1e6, 1e9, 500'000, async);  // 5 usable blocks of 16 tokens; 1 ms per block read, + 0.5 ms
  std::vector<Request> reqs;
  reqs.push_back(make("a", 0, 1, 48));                 // 3 blocks, written through to the CPU
  reqs.push_back(make("c", 100'000'000, 1000, 80));    // 5 blocks: evicts a's from the GPU
  Request b = make("b", 200'000'000, 1, 64);           // a's 48 tokens, then 16 more
  reqs.push_back(b);
  VectorSource src(std::move(reqs));
  const EngineResult res = rig.engine.run(src);
  REQUIRE(res.finished == 3);
  const RequestRecord& rb = rig.obs.of("b");
  CHECK(rb.hit_tokens == 0);
  CHECK(rb.tier_hit_tokens == 48);
  // The load: 3 blocks at 1 ms + 0.5 ms, from its arrival (the engine was idle).
  CHECK(rb.load_start == 200'000'000);
  CHECK(rb.loading() == 3'500'000);
  CHECK(rb.queueing() == 0);
  CHECK(rb.prefill() == 5'000'000 + 16'000);  // only the 16 tokens not loaded are computed
  CHECK(rb.ttft() == rb.queueing() + rb.loading() + rb.prefill());
  CHECK(res.admitted_tier_hit_tokens == 48);
  CHECK(res.tier_cache.hits == 48);
  CHECK(rig.cpu.stats().hit_blocks == 3);
  CHECK(rig.cpu.stats().bytes_read == 3 * kBytes);
  CHECK(rig.pool.num_free() == 5);  // everything released
  CHECK(rig.pool.check_invariants().empty());
}

TEST_CASE("engine: a request loading from a tier does not block the queue behind it", "[tier][engine]") {
  TierRig rig(12, 1e4, 1e12, 0);  // 100 ms per block read: a slow link
  // The CPU tier holds the first block of "x" already.
  BlockHashChain chain(16, nullptr);
  std::vector<int32_t> x(16);
  for (int i = 0; i < 16; ++i) x[i] = 500 + i;
  chain.append_tokens(x);
  rig.cpu.store(chain.hashes()[0], kNoKey, 0);
  std::vector<Request> reqs;
  reqs.push_back(make("x", 0, 500, 32));  // loads 1 block for 100 ms
  reqs.push_back(make("y", 0, 900, 32));  // behind it in the queue, admitted at once
  VectorSource src(std::move(reqs));
  REQUIRE(rig.engine.run(src).finished == 2);
  CHECK(rig.obs.of("y").first_scheduled == 0);
  CHECK(rig.obs.of("x").loading() >= 100'000'000);
  CHECK(rig.obs.of("x").tier_hit_tokens == 16);
}

namespace {

// A trace with shared prefixes: 6 documents of 2..12 blocks, each request a
// document, maybe another, and a unique tail.
std::vector<Request> random_trace(std::mt19937_64& rng, int n) {
  std::vector<std::vector<int32_t>> docs;
  for (int d = 0; d < 6; ++d) {
    std::vector<int32_t> doc(static_cast<size_t>(16 * (2 + static_cast<int>(rng() % 11))));
    for (auto& t : doc) t = static_cast<int32_t>(rng() % 30000) + 1;
    docs.push_back(doc);
  }
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    Request r;
    r.id = "r" + std::to_string(i);
    r.arrival = i;
    for (int k = 0, m = 1 + static_cast<int>(rng() % 2); k < m; ++k) {
      const auto& d = docs[rng() % docs.size()];
      r.tokens.insert(r.tokens.end(), d.begin(), d.end());
    }
    for (int k = 0, m = 1 + static_cast<int>(rng() % 40); k < m; ++k)
      r.tokens.push_back(static_cast<int32_t>(rng() % 30000) + 1);
    r.prompt_len = static_cast<int64_t>(r.tokens.size());
    r.output_len = 1 + static_cast<int64_t>(rng() % 20);
    out.push_back(std::move(r));
  }
  return out;
}

const char* const kTierPolicies[] = {"lru", "fifo", "lfu", "arc", "s3fifo", "sieve", "2q"};

}  // namespace

TEST_CASE("property: tier accounting holds over random configurations (cache mode)", "[tier][property]") {
  std::mt19937_64 rng(20261125);
  for (int round = 0; round < 40; ++round) {
    INFO("round " << round);
    const auto trace = random_trace(rng, 150);
    const int64_t gpu_blocks = 8 + static_cast<int64_t>(rng() % 60);
    const size_t num_tiers = 1 + rng() % 3;
    std::vector<std::unique_ptr<KvTier>> owned;
    std::vector<KvTier*> tiers;
    for (size_t k = 0; k < num_tiers; ++k) {
      const int64_t cap = rng() % 5 == 0 ? kUnboundedTier : 1 + static_cast<int64_t>(rng() % 80);
      const TierStoreRule store = rng() % 2 ? TierStoreRule::kOnCompute : TierStoreRule::kOnEvict;
      owned.push_back(std::make_unique<KvTier>(tier("t" + std::to_string(k), cap, store),
                                               make_policy(kTierPolicies[rng() % std::size(kTierPolicies)])));
      tiers.push_back(owned.back().get());
    }
    KvTierStack stack(tiers);
    CacheReplayer rep(16, gpu_blocks, make_policy("lru"), true);
    rep.set_tiers(&stack);
    BlockHashChain chain;
    std::vector<int32_t> out;
    for (const Request& r : trace) {
      r.hash_prompt(chain, 16);
      out.clear();
      for (int64_t k = 0; k + 1 < r.output_len; ++k) out.push_back(r.output_token(r.output_key(), k));
      chain.append_tokens(out);
      rep.step(chain.hashes(), r.prompt_len, r.prompt_len + r.output_len);
      for (KvTier* t : tiers) {
        REQUIRE(t->check_invariants().empty());  // occupancy <= capacity, stored - evicted = held
        if (t->config().capacity_blocks != kUnboundedTier) REQUIRE(t->occupancy() <= t->config().capacity_blocks);
      }
    }
    const CacheReplayResult res = rep.result();
    uint64_t hits = 0;
    for (KvTier* t : tiers) {
      hits += t->stats().hit_blocks;
      CHECK(t->stats().bytes_read == t->stats().hit_blocks * kBytes);
      CHECK(t->stats().bytes_written == t->stats().stored_blocks * kBytes);
    }
    CHECK(hits == res.tier_hit_blocks);  // hits per tier sum to the total
    CHECK(res.tier_hit_tokens == static_cast<int64_t>(res.tier_hit_blocks) * 16);
    // Never above what an unbounded cache finds.
    const CacheReplayResult ideal = run_cache_replay(trace, 16, 1 << 20, make_policy("lru"));
    CHECK(res.hit_tokens + res.tier_hit_tokens <= ideal.hit_tokens);
  }
}

TEST_CASE("property: with an unbounded write-through tier, GPU + tier hits are the ideal hit rate", "[tier][property]") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    const auto trace = random_trace(rng, 120);
    const CacheReplayResult ideal = run_cache_replay(trace, 16, 1 << 20, make_policy("lru"));
    // Cache mode over the interned trace, as compare runs it.
    const PreparedTrace prepared = prepare_trace(std::span<const Request>(trace), 16);
    KvTier keyed(tier("cpu", kUnboundedTier), nullptr, prepared.num_keys());
    KvTierStack keyed_stack({&keyed});
    const CacheReplayResult r =
        run_cache_replay(prepared, 40 + static_cast<int64_t>(rng() % 30), make_policy("lru"), true, {}, &keyed_stack);
    CHECK(r.hit_tokens + r.tier_hit_tokens == ideal.hit_tokens);
    CHECK(r.requests == ideal.requests);
  }
}
