// `analyze` on traces small enough to compute by hand, and properties of the
// LRU curve on generated workloads.
#include <catch2/catch.hpp>
#include <sstream>

#include "policies/registry.h"
#include "traces/analysis.h"
#include "traces/hot_prefixes.h"
#include "traces/prefix_reuse.h"
#include "workloads/workload.h"

using namespace prefixsim;

namespace {

Request make(const std::string& id, double t_s, std::vector<int32_t> tokens) {
  Request r;
  r.id = id;
  r.arrival = static_cast<TimeNs>(t_s * 1e9);
  r.tokens = std::move(tokens);
  r.prompt_len = static_cast<int64_t>(r.tokens.size());
  r.output_len = 1;
  return r;
}

std::vector<int32_t> iota_tokens(int32_t from, int32_t to) {
  std::vector<int32_t> v;
  for (int32_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Block size 4. A = [1..4], B = [5..8].
//   r0 [1..10]          full A B,   max hit floor(9/4)=2:  0 hits (cold)
//   r1 [1..8,20..24]    full A B C, max hit 3:             A B hit (8 tokens)
//   r2 [1..8]           full A B,   max hit floor(7/4)=1:  A hits (4 tokens: last token recomputed)
//   r3 [9,9,9,9,1..4]   full X Y:                          0 hits (X is a different first block)
//   r4 [1..8,30..33]    full A B D, max hit floor(11/4)=2: A B hit (8 tokens)
// prompt tokens 10+13+8+8+12 = 51, hit tokens 20; unique blocks A B C X Y D = 6;
// prompt blocks 3+4+2+2+3 = 14, hit blocks 5.
std::vector<Request> hand_trace() {
  return {make("r0", 0, iota_tokens(1, 10)), make("r1", 1, cat(iota_tokens(1, 8), iota_tokens(20, 24))),
          make("r2", 2, iota_tokens(1, 8)), make("r3", 3, cat({9, 9, 9, 9}, iota_tokens(1, 4))),
          make("r4", 70, cat(iota_tokens(1, 8), iota_tokens(30, 33)))};
}

TraceAnalysis analyze(const std::vector<Request>& rs, PrefixAnalyzer* keep = nullptr) {
  AnalysisOptions o;
  o.block_size = 4;
  o.window_s = 60;
  if (keep) {
    for (const Request& r : rs) keep->add(r);
    return keep->finish();
  }
  PrefixAnalyzer an(o);
  for (const Request& r : rs) an.add(r);
  return an.finish();
}

}  // namespace

TEST_CASE("analyze counts unique blocks and the ideal hit rate of a hand-computed trace", "[analysis]") {
  const TraceAnalysis a = analyze(hand_trace());
  CHECK(a.requests == 5);
  CHECK(a.prompt_tokens == 51);
  CHECK(a.unique_blocks == 6);
  CHECK(a.ideal_hit_tokens == 20);
  CHECK(a.ideal_hit_rate == Approx(20.0 / 51));
  CHECK(a.prompt_blocks == 14);
  CHECK(a.ideal_hit_blocks == 5);
  CHECK(a.ideal_block_hit_rate == Approx(5.0 / 14));
  CHECK(a.span_s == Approx(70));
}

TEST_CASE("analyze finds the hottest prefix with its depth, reuse and tokens saved", "[analysis]") {
  const TraceAnalysis a = analyze(hand_trace());
  // A is hit 3 times (saves 3 x 4 tokens), A-B twice (2 x 8 = 16): A-B ranks first.
  REQUIRE(a.hottest.size() == 2);
  CHECK(a.hottest[0].depth_blocks == 2);
  CHECK(a.hottest[0].tokens == 8);
  CHECK(a.hottest[0].reuse == 2);
  CHECK(a.hottest[0].tokens_saved == 16);
  CHECK(a.hottest[0].first_request == "r0");
  CHECK(a.hottest[1].depth_blocks == 1);
  CHECK(a.hottest[1].reuse == 3);
  CHECK(a.hottest[1].tokens_saved == 12);
}

TEST_CASE("analyze reports reuse distances and working sets per window", "[analysis]") {
  const TraceAnalysis a = analyze(hand_trace());
  // Accesses: r0 A B (cold), r1 A B C, r2 A B, r3 X Y (cold), r4 A B D.
  CHECK(a.block_accesses == 2 + 3 + 2 + 2 + 3);
  CHECK(a.cold_accesses == 6);
  // Recency after r0 is A, B (A most recent, block 0 last). r1: A at distance 0, B at 1.
  // After r1: A C... order A,B,C from most recent: A=0,B=1,C=2. r2: A 0, B 1.
  // After r3: X, Y, A, B, C. r4: A at 2, B at 3.
  uint64_t total = 0;
  for (uint64_t c : a.reuse_distance_log2) total += c;
  CHECK(total == 6);
  REQUIRE(a.reuse_distance_log2.size() == 3);
  CHECK(a.reuse_distance_log2[0] == 2);  // d = 0: A in r1 and r2
  CHECK(a.reuse_distance_log2[1] == 2);  // d = 1: B in r1 and r2
  CHECK(a.reuse_distance_log2[2] == 2);  // d in 2..3: A and B in r4
  // Windows of 60 s: r0..r3 in [0, 60), r4 in [60, 120).
  REQUIRE(a.windows.size() == 2);
  CHECK(a.windows[0].requests == 4);
  CHECK(a.windows[0].blocks == 5);  // A B C X Y
  CHECK(a.windows[1].start_s == 60);
  CHECK(a.windows[1].blocks == 3);  // A B D
}

TEST_CASE("the LRU curve needs the stack distance of a prefix's deepest block", "[analysis][lru]") {
  AnalysisOptions o;
  o.block_size = 4;
  o.targets = {0.1, 0.2, 0.5};
  PrefixAnalyzer an(o);
  const TraceAnalysis a = analyze(hand_trace(), &an);
  // Running max of stack distances along each lookup: r1 A 0, B 1; r2 A 0;
  // r4 A 2, B 3. A cache of C blocks hits those below C.
  auto rate = [&](int64_t c) {
    for (const CurvePoint& p : a.lru_curve)
      if (p.cache_blocks == c) return p.hit_rate;
    return -1.0;
  };
  CHECK(rate(1) == Approx(8.0 / 51));
  CHECK(rate(2) == Approx(12.0 / 51));
  CHECK(rate(4) == Approx(20.0 / 51));
  REQUIRE(a.kv_budget.size() == 3);
  // The curve asks for 1 block (10 % of 51 = 5.1 tokens <= 8) and 2 (10.2 <=
  // 12), but r1 computes 13 tokens, 4 blocks at once: a pool of fewer blocks
  // refuses it, so both budgets are raised to 4.
  CHECK(a.largest_request_blocks == 4);
  CHECK(a.kv_budget[0].cache_blocks == 4);
  CHECK(a.kv_budget[0].raised_to_largest_request);
  CHECK(a.kv_budget[1].cache_blocks == 4);
  CHECK(a.kv_budget[1].raised_to_largest_request);
  CHECK(!a.kv_budget[2].cache_blocks);  // 50 % is above the ideal 39 %
}

TEST_CASE("the LRU curve is non-decreasing and reaches the ideal hit rate with room for every block",
          "[analysis][lru]") {
  for (const char* preset : {"chatbot", "rag", "multi-turn"}) {
    INFO(preset);
    WorkloadOverrides o;
    o.requests = 400;
    auto src = make_workload(preset, o);
    AnalysisOptions opts;
    const TraceAnalysis a = analyze_trace(*src, opts);
    REQUIRE(!a.lru_curve.empty());
    for (size_t i = 1; i < a.lru_curve.size(); ++i) CHECK(a.lru_curve[i].hit_rate >= a.lru_curve[i - 1].hit_rate);
    // The last point is where the curve saturates: never more blocks than exist.
    CHECK(a.lru_curve.back().cache_blocks <= static_cast<int64_t>(a.unique_blocks));
    CHECK(a.lru_curve.back().hit_rate == Approx(a.ideal_hit_rate));
    // A budget that is reachable is no bigger than every block there is.
    for (const BudgetPoint& b : a.kv_budget)
      if (b.cache_blocks) CHECK(*b.cache_blocks <= static_cast<int64_t>(a.unique_blocks));
  }
}

TEST_CASE("analyze's exact LRU check agrees with a separate LRU replay of the same requests", "[analysis][lru]") {
  WorkloadOverrides o;
  o.requests = 300;
  AnalysisOptions opts;
  opts.lru_num_blocks = 2000;
  auto a_src = make_workload("code", o);
  const TraceAnalysis a = analyze_trace(*a_src, opts, make_policy("lru"));
  auto b_src = make_workload("code", o);
  const LruCheck b = lru_hit_rate(*b_src, 16, 2000, make_policy("lru"));
  REQUIRE(a.lru_check);
  CHECK(a.lru_check->hit_tokens == b.hit_tokens);
  CHECK(a.lru_check->prompt_tokens == b.prompt_tokens);
  // With a bounded cache LRU cannot beat the unbounded ideal.
  CHECK(b.hit_rate <= a.ideal_hit_rate + 1e-12);
}

TEST_CASE("the Graphviz drawing of the hottest subtree names its shared chain", "[analysis][graphviz]") {
  AnalysisOptions o;
  o.block_size = 4;
  PrefixAnalyzer an(o);
  analyze(hand_trace(), &an);
  std::ostringstream dot;
  an.write_graphviz(dot);
  const std::string s = dot.str();
  CHECK_THAT(s, Catch::StartsWith("digraph"));
  CHECK_THAT(s, Catch::Contains("blocks 0 (tokens 0-3)\\nreuse 3"));
  CHECK_THAT(s, Catch::Contains("blocks 1 (tokens 4-7)\\nreuse 2"));
  CHECK_THAT(s, Catch::Contains("unshared continuation"));
}

TEST_CASE("analysis.json carries the contract keys", "[analysis]") {
  const TraceAnalysis a = analyze(hand_trace());
  const std::string j = analysis_json(a, "t.jsonl", "native");
  for (const char* key : {"\"requests\": 5", "\"prompt_tokens\": 51", "\"unique_blocks\": 6", "\"ideal_hit_rate\"",
                          "\"ideal_block_hit_rate\"", "\"hottest_prefixes\"", "\"kv_budget\"", "\"lru_curve\""})
    CHECK_THAT(j, Catch::Contains(key));
  CHECK_THAT(analysis_markdown(a, "t.jsonl", "native"), Catch::Contains("ideal hit rate (tokens) | 39.22 %"));
}

TEST_CASE("stack distances stay exact when the stamps are renumbered (far more accesses than blocks)",
          "[analysis][lru]") {
  // One 100-block prompt sent 1,000 times: 100,000 accesses of 100 blocks,
  // past the stamp tree's first 65,536 stamps, so the live stamps are
  // renumbered. Every repeat sees block i at stack distance i (blocks 0..i-1
  // were touched after it: a request's blocks are stamped last to first).
  std::vector<Request> rs;
  for (int k = 0; k < 1000; ++k) rs.push_back(make("r" + std::to_string(k), k, iota_tokens(1, 400)));
  const TraceAnalysis a = analyze(rs);
  CHECK(a.cold_accesses == 100);
  std::vector<uint64_t> want;
  for (int64_t i = 0; i < 100; ++i) {
    size_t b = 0;
    for (int64_t d = i; d > 0; d >>= 1) ++b;
    if (want.size() <= b) want.resize(b + 1, 0);
    want[b] += 999;
  }
  CHECK(a.reuse_distance_log2 == want);
  // A lookup hits its first 99 blocks (the last token is recomputed); with C
  // blocks of cache, the ones at distance < C.
  for (const CurvePoint& p : a.lru_curve) {
    const int64_t hit_blocks = std::min<int64_t>(p.cache_blocks, 99);
    INFO("cache blocks " << p.cache_blocks);
    CHECK(p.hit_rate == Approx(999.0 * hit_blocks * 4 / (1000.0 * 400)));
  }
}

TEST_CASE("analyze stops before the distinct-block cap and says how many requests it left out",
          "[analysis][memory]") {
  const std::vector<Request> trace = hand_trace();
  for (uint64_t cap : {uint64_t{6}, uint64_t{5}, uint64_t{3}, uint64_t{1}}) {
    INFO("cap " << cap);
    AnalysisOptions o;
    o.block_size = 4;
    o.max_distinct_blocks = cap;
    PrefixAnalyzer an(o);
    const TraceAnalysis a = analyze(trace, &an);
    CHECK(a.unique_blocks <= cap);
    CHECK(a.requests + a.requests_not_analyzed == trace.size());
    if (cap >= 6) CHECK(a.requests_not_analyzed == 0);  // the whole trace has 6 distinct blocks
    else CHECK(a.requests_not_analyzed > 0);
  }
  // r0 computes 3 blocks ([1..4], [5..8], and 9,10 + its output do not fill a third: 2 full):
  // with a cap of 1 not even r0 fits.
  AnalysisOptions o;
  o.block_size = 4;
  o.max_distinct_blocks = 1;
  PrefixAnalyzer an(o);
  CHECK(analyze(trace, &an).requests == 0);
}

TEST_CASE("the hot-prefix ranking keeps maximal prefixes by tokens saved, ties to the lower vertex",
          "[analysis][hot]") {
  // A forest of block size 4 (parent, depth, reuse):
  //   0 (root, reuse 5) -> 1 (reuse 5) -> 2 (reuse 2): 1 covers 0 (same reuse), 2 does not cover 1.
  //   3 (root, reuse 3) -> 4 (reuse 0)
  //   5 (root, reuse 6)
  // Maximal: 1 (5 x 2 blocks x 4 = 40 tokens), 2 (2 x 3 x 4 = 24), 3 (3 x 1 x 4 = 12),
  // 5 (6 x 1 x 4 = 24). Not 0 (covered by 1), not 4 (never reused). 2 and 5 tie at 24: the lower vertex first.
  constexpr uint32_t kNone = UINT32_MAX;
  const std::vector<uint32_t> parent = {kNone, 0, 1, kNone, 3, kNone};
  const std::vector<uint32_t> depth = {0, 1, 2, 0, 1, 0};
  const std::vector<uint64_t> reuse = {5, 5, 2, 3, 0, 6};
  const auto all = rank_hot_prefixes(parent, depth, reuse, 4, 10, kNone);
  REQUIRE(all.size() == 4);
  CHECK((all[0].vertex == 1 && all[0].tokens_saved == 40));
  CHECK((all[1].vertex == 2 && all[1].tokens_saved == 24));
  CHECK((all[2].vertex == 5 && all[2].tokens_saved == 24));
  CHECK((all[3].vertex == 3 && all[3].tokens_saved == 12));
  // The top 2 are the first 2 of the whole ranking; none for k = 0.
  const auto two = rank_hot_prefixes(parent, depth, reuse, 4, 2, kNone);
  REQUIRE(two.size() == 2);
  CHECK((two[0].vertex == 1 && two[1].vertex == 2));
  CHECK(rank_hot_prefixes(parent, depth, reuse, 4, 0, kNone).empty());
}

TEST_CASE("analyze and compare's reuse explanation list the same hot prefixes", "[analysis][hot]") {
  workloads::WorkloadOverrides w;
  w.requests = 400;
  auto src = workloads::make_workload("multi-turn", w);
  std::vector<Request> rs;
  for (Request r; src->next(r);) rs.push_back(r);
  AnalysisOptions o;
  o.block_size = 16;
  o.top_k = 8;
  PrefixAnalyzer an(o);
  for (const Request& r : rs) an.add(r);
  const TraceAnalysis a = an.finish();
  const std::vector<PrefixReuse> reuse = hot_prefix_reuse(prepare_trace(std::span<const Request>(rs), 16), 8);
  REQUIRE(a.hottest.size() == reuse.size());
  REQUIRE_FALSE(reuse.empty());
  for (size_t i = 0; i < reuse.size(); ++i) {
    INFO(i);
    CHECK(a.hottest[i].tokens_saved == reuse[i].tokens_saved);
    CHECK(a.hottest[i].depth_blocks == reuse[i].blocks);
    CHECK(a.hottest[i].reuse == reuse[i].reuses);
  }
}
