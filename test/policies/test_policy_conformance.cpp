// Every registered policy, driven through the real KvCacheManager by seeded
// random operation scripts (concurrent requests sharing prefixes, decode
// appends, finishes): the pool's invariants hold after every op, no
// referenced block is ever handed out, never-used blocks go before cached
// ones (all but lru), and the same script gives the same blocks every time.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <sstream>

#include "policies/registry.h"
#include "sim/kv/block_pool.h"
#include "sim/base/error.h"
#include "sim/kv/kv_cache_manager.h"
#include "test/policies/policy_test_util.h"

using namespace prefixsim;

namespace {

struct Live {
  BlockHashChain chain;
  KvSeq seq;
  int64_t num_tokens = 0;
};

int32_t uncached_free(const BlockPool& pool) {
  int32_t n = 0;
  for (BlockId b = 1; b < pool.num_blocks(); ++b) n += pool.ref_count(b) == 0 && !pool.is_cached(b) ? 1 : 0;
  return n;
}

// Runs one random script; returns a transcript of block tables and hits.
std::string run_script(const std::string& spec, uint64_t seed, int32_t num_blocks, int ops) {
  constexpr int32_t B = 4;
  std::mt19937_64 rng(seed);
  BlockPool pool(num_blocks, true, test::any_policy(spec, B));
  KvCacheManager kv(B, pool);
  std::map<int, Live> live;
  std::ostringstream log;
  const bool lru = pool.policy().name() == "lru";
  int next_id = 0;
  for (int op = 0; op < ops; ++op) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 4 || live.empty()) {  // arrive: one of 5 prefixes, random tail
      Live r;
      r.chain.reset(B, nullptr);
      std::vector<int32_t> tokens;
      const int prefix = static_cast<int>(rng() % 5);
      const int prefix_len = static_cast<int>(rng() % 24);
      for (int i = 0; i < prefix_len; ++i) tokens.push_back(prefix * 1000 + i);
      const int tail = 1 + static_cast<int>(rng() % 12);
      for (int i = 0; i < tail; ++i) tokens.push_back(static_cast<int32_t>(rng() % 50));
      r.chain.append_tokens(tokens);
      r.num_tokens = static_cast<int64_t>(tokens.size());
      const LookupResult hit = kv.lookup(r.chain, r.num_tokens, false);
      const uint64_t ev = pool.evictions();
      const int32_t fresh = uncached_free(pool);
      const int64_t need = (r.num_tokens + B - 1) / B - static_cast<int64_t>(hit.blocks.size());
      const bool ok = kv.allocate(r.seq, r.chain, r.num_tokens, 0, r.num_tokens - hit.hit_tokens, hit.blocks,
                                  hit.hit_tokens, true);
      if (!lru && ok && fresh >= need) REQUIRE(pool.evictions() == ev);  // never-used blocks first
      log << "A" << ok << ":" << hit.hit_tokens << ":";
      for (BlockId b : r.seq.blocks) log << b << ",";
      if (ok) live.emplace(next_id++, std::move(r));
    } else if (kind < 7) {  // decode append of 1-5 tokens to a live request
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      Live& r = it->second;
      const int n = 1 + static_cast<int>(rng() % 5);
      std::vector<int32_t> tokens;
      for (int i = 0; i < n; ++i) tokens.push_back(static_cast<int32_t>(rng() % 50));
      r.chain.append_tokens(tokens);
      const int64_t computed = r.num_tokens;
      r.num_tokens += n;
      const bool ok = kv.allocate(r.seq, r.chain, r.num_tokens, computed, n, {}, 0, false);
      log << "P" << ok << ":" << r.seq.blocks.size();
      if (!ok) {  // no room to grow: the request is dropped, as a preemption would
        kv.free(r.seq);
        live.erase(it);
      }
    } else {  // finish
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      kv.free(it->second.seq);
      live.erase(it);
      log << "F";
    }
    log << "|";
    const std::string err = pool.check_invariants();
    INFO(spec << " seed " << seed << " op " << op);
    REQUIRE(err.empty());
    // No referenced block can be in the free set (so none can be evicted).
    for (BlockId b = 1; b < pool.num_blocks(); ++b)
      if (pool.ref_count(b) > 0) REQUIRE_FALSE(pool.policy().is_free(b));
  }
  return log.str();
}

}  // namespace

TEST_CASE("every registered policy keeps the pool invariants on random concurrent scripts", "[policies][conformance]") {
  for (const PolicyInfo& info : policy_registry()) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      INFO("policy " << info.name << " seed " << seed);
      run_script(info.name, seed, 12 + static_cast<int32_t>(seed * 7), 400);
    }
  }
}

TEST_CASE("every registered policy gives the same blocks for the same script", "[policies][determinism]") {
  for (const PolicyInfo& info : policy_registry()) {
    INFO("policy " << info.name);
    const std::string a = run_script(info.name, 42, 40, 300);
    const std::string b = run_script(info.name, 42, 40, 300);
    REQUIRE(a == b);
  }
}

TEST_CASE("every registered policy is reachable by name and aliases, with parameters checked", "[policies][registry]") {
  for (const PolicyInfo& info : policy_registry()) {
    REQUIRE(test::any_policy(info.name)->name() == info.name);
    for (const std::string& alias : info.aliases) REQUIRE(canonical_policy_name(alias) == info.name);
    REQUIRE_THROWS_AS(test::any_policy(info.name + ":nonsense=1"), InputError);
  }
  REQUIRE(test::any_policy("lfu:half_life=1000")->name() == "lfu");
  REQUIRE(test::any_policy("s3fifo:small=0.2,promote=2")->name() == "s3fifo");
  REQUIRE_THROWS_AS(test::any_policy("s3fifo:small=1.5"), InputError);
  REQUIRE_THROWS_AS(test::any_policy("2q:kin=abc"), InputError);
  REQUIRE_THROWS_AS(make_policy("belady"), InputError);  // no future given
}
