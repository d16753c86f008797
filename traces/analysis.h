// `prefixsim analyze`: what a trace's prefix reuse looks like, independent of
// any engine. One streaming pass (PrefixAnalyzer::add per request) gives
//   - requests, tokens, unique full blocks;
//   - the ideal hit rate with an unbounded cache, in tokens and in blocks,
//     with vLLM's semantics: requests in order, only full blocks are cached,
//     a lookup walks the prompt's full blocks from block 0 to the first miss
//     and hits at most floor((len-1)/B) of them, and every full block the
//     request computed (prompt and outputs but the last: Request::kv_len) is
//     inserted after it -- the definition replay's ideal_hit_rate uses too;
//   - the reuse (LRU stack) distance of every block access;
//   - the working set (distinct blocks touched) per time window;
//   - the prefix forest (one vertex per distinct block, edge parent -> child),
//     as a Boost.Graph adjacency_list: the hottest prefixes and a Graphviz
//     drawing of the hottest subtree;
//   - a hit-rate-vs-capacity curve for LRU from stack distances, and from it
//     the cache needed for target hit rates (see kLruCurveApproximation);
//   - optionally, the exact hit rate of vLLM's LRU at one capacity, by
//     replaying each request alone through KvCacheManager (lru_hit_rate).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/kv/block_hash.h"
#include "sim/kv/eviction_policy.h"
#include "sim/engine/request.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

// What the one-pass LRU curve assumes, for reports.
inline constexpr const char* kLruCurveApproximation =
    "Stack-distance LRU over the full blocks each request computes (prompt and outputs but the last; Mattson's one-pass algorithm): requests are served one at a "
    "time, a request's blocks become most recent in reverse order (block 0 last, as vLLM frees a block table "
    "last to first), and a lookup hits block i at capacity C when every block 0..i has stack distance < C "
    "(the prefix property of the hash chain). It differs from vLLM's free-queue LRU in that "
    "partial tail blocks and the running request's own blocks take no cache space, so it needs fewer blocks "
    "than a real pool; the exact vLLM figure at one capacity is lru_check.";

struct AnalysisOptions {
  int32_t block_size = 16;
  size_t top_k = 10;
  double window_s = 60;                            // working-set window
  std::vector<double> targets = {0.5, 0.8, 0.9, 0.95};  // hit rates to size the cache for
  // When > 0, also replay through KvCacheManager with `lru_policy` on a pool
  // of this many blocks (null block included).
  int64_t lru_num_blocks = 0;
  // When > 0: the hit rate of a GPU pool of this many blocks with a CPU tier
  // of growing size below it (TraceAnalysis::tier_curve).
  int64_t tier_gpu_blocks = 0;
  // Memory bound: every distinct block costs about kBytesPerDistinctBlock
  // (its vertex, hash-table slot, stack-distance stamp and forest edge). A
  // request that would pass the cap ends the analysis: the figures then
  // cover the requests before it, and TraceAnalysis says how many were left.
  uint64_t max_distinct_blocks = uint64_t{1} << 25;
  static constexpr uint64_t kBytesPerDistinctBlock = 300;  // measured: 3.9 GB for 14 M on claude-code
};

struct HotPrefix {
  uint32_t depth_blocks = 0;   // length of the prefix in blocks
  int64_t tokens = 0;          // depth_blocks * B
  uint64_t reuse = 0;          // lookups that hit the whole prefix
  int64_t tokens_saved = 0;    // reuse * tokens
  std::string first_request;   // id of the request that first computed it
  std::string hash;            // hex hash of its last block
};

struct WindowStat {
  double start_s = 0;
  uint64_t requests = 0;
  uint64_t blocks = 0;  // distinct full prompt blocks touched in the window
};

struct CurvePoint {
  int64_t cache_blocks = 0;
  double hit_rate = 0;
};

// A GPU pool of G blocks over a CPU tier of `cpu_blocks`, from the LRU
// curve: a write-back (exclusive, victim) tier under LRU holds the next
// cpu_blocks of the LRU stack, as one LRU of G + C does; a write-through
// (inclusive) tier holds the most recent C blocks, so only C > G adds hits,
// as an LRU of max(G, C).
struct TierCurvePoint {
  int64_t cpu_blocks = 0;
  double write_through = 0;
  double write_back = 0;
};
inline constexpr const char* kTierCurveApproximation =
    "From the stack-distance LRU curve: a write-back (exclusive) CPU tier under LRU as one LRU of GPU + CPU "
    "blocks, a write-through (inclusive, vLLM's offloading connector) one as an LRU of max(GPU, CPU) blocks. "
    "Blocks held by running requests and the tiers' own touch order are left out; `compare "
    "--kv-offloading-size` simulates the tiers exactly.";

struct BudgetPoint {
  double target = 0;
  std::optional<int64_t> cache_blocks;  // nullopt: above the ideal hit rate
  // The LRU curve asked for fewer blocks than the largest request needs at
  // once; a real pool cannot run it, so cache_blocks is that request's size
  // (and the hit rate there is above the target).
  bool raised_to_largest_request = false;
};

struct LruCheck {
  int64_t num_blocks = 0;        // pool size, null block included
  uint64_t requests = 0;         // replayed
  uint64_t refused = 0;          // larger than the whole pool: left out
  int64_t prompt_tokens = 0;
  int64_t hit_tokens = 0;
  double hit_rate = 0;           // hit_tokens / prompt_tokens
};

struct TraceAnalysis {
  int32_t block_size = 16;
  uint64_t requests = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  uint64_t prompt_blocks = 0;      // sum of ceil(len / B): the blocks lookups ask for
  uint64_t block_accesses = 0;     // sum of floor(kv_len / B): full blocks computed (prompt and outputs)
  uint64_t unique_blocks = 0;
  int64_t ideal_hit_tokens = 0;
  uint64_t ideal_hit_blocks = 0;
  double ideal_hit_rate = 0;        // ideal_hit_tokens / prompt_tokens
  double ideal_block_hit_rate = 0;  // ideal_hit_blocks / prompt_blocks
  double span_s = 0;                // last arrival - first arrival
  int64_t largest_request_blocks = 0;
  // Requests after the distinct-block cap (AnalysisOptions::max_distinct_blocks),
  // left out of every figure; 0 when the whole trace was analyzed.
  uint64_t requests_not_analyzed = 0;  // ceil(kv_len / B) of the largest request: the smallest pool that runs it

  uint64_t cold_accesses = 0;                 // first access of a block
  std::vector<uint64_t> reuse_distance_log2;  // [0]: d = 0; [k]: 2^(k-1) <= d < 2^k

  double window_s = 60;
  std::vector<WindowStat> windows;

  std::vector<HotPrefix> hottest;
  std::vector<CurvePoint> lru_curve;
  int64_t tier_gpu_blocks = 0;
  std::vector<TierCurvePoint> tier_curve;  // empty unless AnalysisOptions::tier_gpu_blocks
  std::vector<BudgetPoint> kv_budget;           // absolute targets (opts.targets)
  std::vector<BudgetPoint> kv_budget_of_ideal;  // targets x ideal_hit_rate, always reachable
  std::optional<LruCheck> lru_check;
};

class PrefixAnalyzer {
 public:
  // `lru_policy` is needed only when opts.lru_num_blocks > 0 (e.g.
  // make_policy("lru")); the analyzer does not depend on the registry.
  explicit PrefixAnalyzer(const AnalysisOptions& opts, std::unique_ptr<EvictionPolicy> lru_policy = nullptr);
  ~PrefixAnalyzer();
  PrefixAnalyzer(const PrefixAnalyzer&) = delete;
  PrefixAnalyzer& operator=(const PrefixAnalyzer&) = delete;

  // Requests must come in arrival order.
  void add(const Request& r);
  // Builds the prefix forest and every figure. Call once, after the last add().
  TraceAnalysis finish();
  // The hottest subtree (rooted at the first block of the hottest prefix),
  // blocks with at least one hit, unary chains of equal reuse drawn as one
  // node. Valid after finish().
  void write_graphviz(std::ostream& out, size_t max_nodes = 200) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Streams `src` through a PrefixAnalyzer.
TraceAnalysis analyze_trace(RequestSource& src, const AnalysisOptions& opts,
                            std::unique_ptr<EvictionPolicy> lru_policy = nullptr);

// The simplest honest LRU check: every request alone, in order, through
// KvCacheManager over a pool of num_blocks blocks with `policy`: lookup of
// the prompt, allocation of its computed tokens (Request::kv_len: outputs
// from Request::output_token, so blocks of re-sent outputs hit), free.
LruCheck lru_hit_rate(RequestSource& src, int32_t block_size, int64_t num_blocks,
                      std::unique_ptr<EvictionPolicy> policy);

// analysis.json (schema prefixsim.analysis/1) and analysis.md.
std::string analysis_json(const TraceAnalysis& a, const std::string& trace_path, const std::string& format);
std::string analysis_markdown(const TraceAnalysis& a, const std::string& trace_path, const std::string& format);

}  // namespace prefixsim
