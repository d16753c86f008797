// Property test: over many seeded random operation scripts, after every op
// every usable block is either referenced (ref_count > 0, not free) or free
// exactly once; the free count equals the free queue's length; every cached
// block is findable by its hash; no referenced block is ever evicted.
#include <catch2/catch.hpp>
#include <map>
#include <random>

#include "policies/registry.h"
#include "sim/kv/intrusive_list.h"
#include "sim/kv/kv_cache_manager.h"
#include "sim/kv/lazy_queue.h"

using namespace prefixsim;

namespace {

// Wraps a policy and records every block handed out, so the test can prove
// that a handed-out block was unreferenced at that moment.
class WatchingPolicy final : public EvictionPolicy {
 public:
  explicit WatchingPolicy(std::unique_ptr<EvictionPolicy> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  void reset(const BlockPool& pool, int32_t n) override {
    pool_ = &pool;
    inner_->reset(pool, n);
  }
  void on_hit(BlockId b, bool was_free) override { inner_->on_hit(b, was_free); }
  BlockId pop_free() override {
    BlockId b = inner_->pop_free();
    if (pool_->ref_count(b) != 0) ++referenced_handed_out;
    return b;
  }
  void on_free(BlockId b) override { inner_->on_free(b); }
  void on_cached(BlockId b, const CachedBlockInfo& i) override { inner_->on_cached(b, i); }
  void on_evicted(BlockId b, const BlockHash& h, uint32_t key) override {
    if (pool_->ref_count(b) != 0) ++referenced_evicted;
    inner_->on_evicted(b, h, key);
  }
  bool is_free(BlockId b) const override { return inner_->is_free(b); }
  int32_t num_free() const override { return inner_->num_free(); }
  size_t bytes() const override { return inner_->bytes(); }

  int referenced_handed_out = 0;
  int referenced_evicted = 0;

 private:
  std::unique_ptr<EvictionPolicy> inner_;
  const BlockPool* pool_ = nullptr;
};

struct Live {
  HashExtras extras;
  BlockHashChain chain;
  int64_t num_tokens = 0, computed = 0;
  KvSeq seq;
};

}  // namespace

TEST_CASE("after every op of random scripts each block is referenced xor free once, and cached blocks stay findable",
          "[property][pool]") {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const int32_t bs = (seed % 3 == 0) ? 16 : 4;
    const int32_t n = 8 + static_cast<int32_t>(rng() % 60);
    auto watcher = std::make_unique<WatchingPolicy>(make_policy("lru"));
    WatchingPolicy* watch = watcher.get();
    BlockPool pool(n, true, std::move(watcher));
    KvCacheManager kv(bs, pool);
    std::map<int, Live> live;
    int next_id = 0;
    std::vector<int32_t> toks;
    for (int op = 0; op < 400; ++op) {
      const uint32_t what = rng() % 10;
      if (what < 4 || live.empty()) {  // arrive: shared system prefixes + random tail
        Live r;
        const int prefix = static_cast<int>(rng() % 4);
        const int len = 1 + static_cast<int>(rng() % static_cast<uint32_t>(bs * 6));
        toks.clear();
        for (int i = 0; i < len; ++i)
          toks.push_back(i < bs * 3 ? prefix * 1000 + i : static_cast<int32_t>(rng() % 50));
        if (rng() % 5 == 0) r.extras.salt = (rng() % 2) ? "t1" : "t0";
        auto [it, ok] = live.emplace(next_id++, std::move(r));
        Live& req = it->second;
        req.chain.reset(bs, &req.extras);
        req.chain.append_tokens(toks);
        req.num_tokens = len;
        LookupResult hit = kv.lookup(req.chain, len, false);
        if (kv.allocate(req.seq, req.chain, len, 0, len - hit.hit_tokens, hit.blocks, hit.hit_tokens, true))
          req.computed = len;
        else
          live.erase(it);
      } else if (what < 8) {  // append decode tokens
        auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
        Live& req = it->second;
        const int k = 1 + static_cast<int>(rng() % static_cast<uint32_t>(bs * 2));
        toks.assign(static_cast<size_t>(k), static_cast<int32_t>(rng() % 7));
        req.chain.append_tokens(toks);
        req.num_tokens += k;
        if (kv.allocate(req.seq, req.chain, req.num_tokens, req.computed, req.num_tokens - req.computed, {}, 0, false))
          req.computed = req.num_tokens;
        else {  // what a scheduler's preemption does
          kv.free(req.seq);
          live.erase(it);
        }
      } else {  // finish
        auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
        kv.free(it->second.seq);
        live.erase(it);
      }
      INFO("seed " << seed << " op " << op);
      REQUIRE(pool.check_invariants() == "");
      REQUIRE(watch->referenced_handed_out == 0);
      REQUIRE(watch->referenced_evicted == 0);
      // Every cached hash of a live request is findable (lazy eviction keeps it).
      for (const auto& [id, req] : live)
        for (size_t i = 0; i < req.seq.num_cached; ++i) REQUIRE(pool.find(req.chain.hashes()[i]) != kNoBlock);
    }
    for (auto& [id, req] : live) kv.free(req.seq);
    CHECK(pool.num_free() == n - 1);
  }
}

TEST_CASE("the lazy free queue pops the linked list's order under random pushes, removals and pops",
          "[block_pool][lazy_queue]") {
  // lru's queue (sim/kv/lazy_queue.h) against IntrusiveList, vLLM's queue
  // shape: the same live order after every operation, across many
  // compactions of its log (a small block count compacts often). It starts
  // empty, or full of blocks 1..n-1 held as an unwritten range (as lru's
  // pool starts), from which pops and removals (written out first) take.
  for (const bool full : {false, true})
    for (int32_t n : {4, 17, 300}) {
      INFO("n = " << n << (full ? ", starting full" : ", starting empty"));
      LazyQueue lazy;
      IntrusiveList list;
      list.reset(n);
      if (full) {
        lazy.reset(n, 1);
        for (BlockId b = 1; b < n; ++b) list.push_back(b);
      } else {
        lazy.reset(n);
      }
      REQUIRE(lazy.size() == list.size());
      for (size_t k = 0; full && k < 3; ++k) CHECK(lazy.peek(k) == static_cast<BlockId>(k + 1));
      std::mt19937_64 rng(static_cast<uint64_t>(n) + (full ? 1000 : 0));
      uint64_t pops = 0;
      for (int op = 0; op < 40000; ++op) {
        const auto b = static_cast<BlockId>(rng() % static_cast<uint64_t>(n));
        switch (rng() % 3) {
          case 0:  // free a block that is not queued
            if (!list.contains(b)) list.push_back(b), lazy.push_back(b);
            break;
          case 1:  // a hit on a queued block takes it out from anywhere
            if (list.contains(b)) list.unlink(b), lazy.unlink(b);
            break;
          default: {
            const BlockId want = list.pop_front();
            REQUIRE(lazy.pop_front() == want);
            pops += want != kNoBlock ? 1 : 0;
          }
        }
        REQUIRE(lazy.size() == list.size());
        REQUIRE(lazy.contains(b) == list.contains(b));
      }
      CHECK(pops > 5000);
      while (!list.empty()) REQUIRE(lazy.pop_front() == list.pop_front());
      CHECK(lazy.pop_front() == kNoBlock);
      CHECK(lazy.empty());
    }
}

TEST_CASE("a full lazy queue pops its unwritten range in id order, then what was freed", "[block_pool][lazy_queue]") {
  LazyQueue q;
  q.reset(6, 1);  // 1..5, as lru's pool starts
  CHECK(q.size() == 5);
  CHECK(q.contains(3));
  CHECK_FALSE(q.contains(0));
  CHECK(q.pop_front() == 1);
  CHECK(q.pop_front() == 2);
  q.push_back(1);  // freed: behind the rest of the range
  CHECK(q.peek(0) == 3);
  CHECK(q.peek(3) == 1);
  CHECK(q.peek(4) == kNoBlock);
  q.unlink(4);  // taken from inside the range: it is written out first
  CHECK(q.pop_front() == 3);
  CHECK(q.pop_front() == 5);
  CHECK(q.pop_front() == 1);
  CHECK(q.pop_front() == kNoBlock);
  CHECK(q.empty());
}
