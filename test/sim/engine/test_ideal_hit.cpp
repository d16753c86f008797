// The replay's ideal hit rate (IdealHitSource), which counts an identity
// run as one entry, against the definition computed block by block over a
// set of full 128-bit hashes.
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "sim/engine/cache_replay.h"
#include "sim/engine/ideal_hit.h"
#include "sim/engine/vector_source.h"
#include "sim/kv/kv_tier.h"
#include "test/policies/policy_test_util.h"
#include "test/support.h"

using namespace prefixsim;

namespace {

// Unbounded cache, vLLM's rules: walk from block 0 to the first miss, at most
// floor((prompt-1)/B) blocks; then insert prompt and outputs but the last.
double reference_ideal(const std::vector<Request>& reqs, int32_t bs) {
  std::set<std::pair<uint64_t, uint64_t>> seen;
  int64_t hit_tokens = 0, tokens = 0;
  for (const Request& r : reqs) {
    BlockHashChain c(bs, &r.extras);
    r.append_prompt_to(c);
    const size_t max_hit = static_cast<size_t>((r.prompt_len - 1) / bs);
    size_t hit = 0;
    while (hit < max_hit && hit < c.hashes().size() && seen.count({c.hashes()[hit].lo, c.hashes()[hit].hi})) ++hit;
    std::vector<int32_t> out;
    for (int64_t k = 0; k + 1 < r.output_len; ++k) out.push_back(r.output_token(k));
    c.append_tokens(out);
    for (const BlockHash& h : c.hashes()) seen.insert({h.lo, h.hi});
    hit_tokens += static_cast<int64_t>(hit) * bs;
    tokens += r.prompt_len;
  }
  return static_cast<double>(hit_tokens) / static_cast<double>(tokens);
}

// Conversations over a small id space: each request extends or truncates an
// earlier one's ids, so runs are hit whole, in part, and grown later.
std::vector<Request> identity_trace(uint32_t seed, int32_t trace_block, bool with_lora) {
  std::mt19937 rng(seed);
  std::vector<std::vector<uint64_t>> prefixes = {{}};
  std::vector<Request> reqs;
  uint64_t next_id = 0;
  for (int i = 0; i < 300; ++i) {
    Request r;
    r.id = "r" + std::to_string(i);
    r.trace_block_size = trace_block;
    std::vector<uint64_t> ids = prefixes[rng() % prefixes.size()];
    if (!ids.empty() && rng() % 3 == 0) ids.resize(1 + rng() % ids.size());
    const uint32_t extend = rng() % 4;
    for (uint32_t k = 0; k < extend || ids.empty(); ++k) ids.push_back(next_id++);
    r.hash_ids = ids;
    // The last id covers 1..trace_block tokens.
    r.prompt_len = static_cast<int64_t>(ids.size() - 1) * trace_block + 1 + rng() % trace_block;
    r.output_len = rng() % 40;
    if (with_lora && rng() % 4 == 0) r.extras.lora = 1;
    prefixes.push_back(ids);
    reqs.push_back(std::move(r));
  }
  return reqs;
}

double ideal_of(std::vector<Request> reqs, int32_t bs) {
  VectorSource inner(std::move(reqs));
  IdealHitSource ideal(inner, bs);
  Request r;
  while (ideal.next(r)) {
  }
  REQUIRE(ideal.valid());
  return ideal.hit_rate();
}

}  // namespace

TEST_CASE("the ideal hit rate with identity runs equals the block-by-block definition", "[ideal][property]") {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    for (int32_t bs : {16, 48}) {  // 48 does not divide 128: straddling blocks
      const bool lora = seed % 2 == 0;
      const auto reqs = identity_trace(seed, 128, lora);
      INFO("seed " << seed << " block size " << bs << (lora ? " with LoRA" : ""));
      const double want = reference_ideal(reqs, bs);
      CHECK(want > 0.1);  // the trace does share prefixes
      CHECK(ideal_of(reqs, bs) == want);
    }
  }
}

TEST_CASE("the ideal hit rate of a token-form trace equals the block-by-block definition", "[ideal]") {
  std::vector<Request> reqs;
  for (int i = 0; i < 50; ++i) {
    Request r;
    r.id = "t" + std::to_string(i);
    for (int k = 0; k < 40 + i % 7 * 9; ++k) r.tokens.push_back(k < 64 ? k : i * 1000 + k);
    r.prompt_len = static_cast<int64_t>(r.tokens.size());
    r.output_len = i % 5;
    reqs.push_back(std::move(r));
  }
  const double want = reference_ideal(reqs, 16);
  CHECK(want > 0.3);
  CHECK(ideal_of(reqs, 16) == want);
}

TEST_CASE("the ideal pass hands each request's computed sequence chain on only when asked to", "[ideal]") {
  const auto reqs = identity_trace(7, 128, false);
  for (const bool hand_on : {true, false}) {
    VectorSource inner(reqs);
    IdealHitSource ideal(inner, 16, hand_on);
    Request r;
    size_t n = 0;
    while (ideal.next(r)) {
      // Prompt and every output token but the last (Request::kv_len).
      BlockHashChain want(16, &r.extras);
      r.append_prompt_to(want);
      std::vector<int32_t> out;
      for (int64_t k = 0; k + 1 < r.output_len; ++k) out.push_back(r.output_token(k));
      want.append_tokens(out);
      if (hand_on) CHECK(r.prompt_chain.num_tokens() == r.kv_len());
      INFO("request " << n << (hand_on ? " (hand on)" : " (keep)"));
      if (hand_on)
        CHECK(r.prompt_chain.hashes() == want.hashes());
      else
        CHECK(r.prompt_chain.hashes().empty());
      ++n;
    }
    CHECK(n == reqs.size());
  }
}

TEST_CASE("the ideal pass's cap is exact and its table never grows past the cap's size", "[ideal][memory]") {
  // Token-form requests of distinct content: every full block is a new entry.
  std::vector<Request> reqs;
  for (int i = 0; i < 400; ++i) {
    Request r;
    r.id = "d" + std::to_string(i);
    for (int k = 0; k < 16 * 50; ++k) r.tokens.push_back(i * 100000 + k);
    r.prompt_len = static_cast<int64_t>(r.tokens.size());
    r.output_len = 1;  // no output block is computed
    reqs.push_back(std::move(r));
  }
  const size_t distinct = 400 * 50;  // 20,000 blocks
  auto run = [&](size_t cap) {
    VectorSource inner(reqs);
    IdealHitSource ideal(inner, 16, true, cap);
    Request r;
    while (ideal.next(r)) {
    }
    return std::make_pair(ideal.valid(), ideal.peak_table_bytes());
  };
  CHECK(run(distinct).first);        // exactly at the cap: kept
  CHECK_FALSE(run(distinct - 1).first);  // one past: not available
  // A cap of 2^14 entries: the single-block table stops at 2^15 slots of
  // 8 bytes (load 3/4), the run table at its initial 2^12 slots of 16 bytes.
  const auto [valid, peak] = run(size_t{1} << 14);
  CHECK_FALSE(valid);
  CHECK(peak <= (size_t{1} << 15) * 8 + (size_t{1} << 12) * 16);
}

TEST_CASE("the ideal pass at its cap does not grow its table for content it already holds", "[ideal][memory]") {
  // 256 requests of 64 distinct blocks fill a cap of 2^14 entries exactly;
  // the first request again is all hits and adds nothing, so the table
  // stays at 2^15 slots (it used to double for an entry it held).
  std::vector<Request> reqs;
  auto make = [](int i) {
    Request r;
    r.id = "c" + std::to_string(i);  // the repeat's id too: no output block is computed
    for (int k = 0; k < 16 * 64; ++k) r.tokens.push_back(i * 100000 + k);
    r.prompt_len = static_cast<int64_t>(r.tokens.size());
    r.output_len = 1;
    return r;
  };
  for (int i = 0; i < 256; ++i) reqs.push_back(make(i));
  reqs.push_back(make(0));
  VectorSource inner(reqs);
  IdealHitSource ideal(inner, 16, false, size_t{1} << 14);
  Request r;
  while (ideal.next(r)) {
  }
  CHECK(ideal.valid());
  CHECK(ideal.peak_table_bytes() <= (size_t{1} << 15) * 8 + (size_t{1} << 12) * 16);
  // The repeat hit all it may: 63 of its 64 blocks (the last token is recomputed).
  CHECK(ideal.hit_rate() == Approx(63.0 * 16 / (257.0 * 1024)));
}

// Cache mode's streaming replay accounts each request to the ideal after its
// lookup and skips the blocks its pool and tiers held (IdealHitSource::defer):
// the figure must be the one the pass computes alone, whatever the pool
// holds, and the pool's hit rate must not change either.
TEST_CASE("the deferred ideal pass, skipping what the pool held, equals the ideal pass alone", "[ideal][property]") {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    for (int32_t bs : {16, 48}) {
      const auto reqs = identity_trace(seed, 128, seed % 2 == 0);
      const double want = reference_ideal(reqs, bs);
      for (int64_t blocks : {12, 60, 400, 5000}) {
        if (test::kSanitized && blocks == 5000) continue;  // see kSanitized
        for (const bool with_tier : {false, true}) {
          INFO("seed " << seed << " block size " << bs << " pool " << blocks << (with_tier ? " with a CPU tier" : ""));
          KvTierConfig tc;
          tc.name = "cpu";
          tc.capacity_blocks = 3 * blocks;
          tc.bytes_per_block = 1000;
          KvTier tier(tc, test::any_policy("lru", bs));
          KvTierStack stack({&tier});
          VectorSource inner(reqs);
          IdealHitSource ideal(inner, bs);
          ideal.defer();
          const CacheReplayResult deferred = run_cache_replay(ideal, bs, blocks, test::any_policy("lru", bs), true, {},
                                                              with_tier ? &stack : nullptr, &ideal);
          REQUIRE(ideal.valid());
          CHECK(ideal.hit_rate() == want);
          KvTier tier2(tc, test::any_policy("lru", bs));
          KvTierStack stack2({&tier2});
          VectorSource inner2(reqs);
          IdealHitSource plain(inner2, bs);
          const CacheReplayResult alone = run_cache_replay(plain, bs, blocks, test::any_policy("lru", bs), true, {},
                                                           with_tier ? &stack2 : nullptr);
          CHECK(plain.hit_rate() == want);
          CHECK(deferred.hit_tokens == alone.hit_tokens);
          CHECK(deferred.tier_hit_tokens == alone.tier_hit_tokens);
          CHECK(deferred.refused_requests == alone.refused_requests);
        }
      }
    }
  }
}

// belady's pre-pass interns every distinct block once (PreparedTrace); the
// ideal rides on that interning (a key below the count before a request is
// content computed earlier) instead of a table of its own. Warm-up requests
// fill the set and are not counted, as in the pass alone.
TEST_CASE("the ideal hit rate counted on the prepared trace's keys equals the block-by-block definition",
          "[ideal][property]") {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    for (int32_t bs : {16, 48, 128}) {
      INFO("seed " << seed << " block size " << bs);
      auto reqs = identity_trace(seed, 128, seed % 2 == 0);
      VectorSource inner(reqs);
      IdealHitSource ideal(inner, bs);
      ideal.defer();
      const PreparedTrace trace = prepare_trace(ideal, bs, &ideal);
      CHECK(trace.size() == reqs.size());
      REQUIRE(ideal.valid());
      CHECK(ideal.hit_rate() == reference_ideal(reqs, bs));
      // With warm-up requests: the same figure as the pass that probes its own table.
      for (size_t i = 0; i < 40; ++i) reqs[i].warmup = true;
      VectorSource inner2(reqs), inner3(reqs);
      IdealHitSource keyed(inner2, bs), plain(inner3, bs);
      keyed.defer();
      prepare_trace(keyed, bs, &keyed);
      Request r;
      while (plain.next(r)) {
      }
      CHECK(keyed.hit_rate() == plain.hit_rate());
    }
  }
}

TEST_CASE("the ideal pass counts by keys only when deferred", "[ideal]") {
  VectorSource inner(identity_trace(1, 128, false));
  IdealHitSource ideal(inner, 16);
  CHECK_THROWS_AS(prepare_trace(ideal, 16, &ideal), InternalError);
}
