// analysis.json and analysis.md for `prefixsim analyze`.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "traces/analysis.h"

namespace prefixsim {

namespace {

using ojson = nlohmann::ordered_json;

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %%", 100.0 * x);
  return buf;
}

// Bucket k of reuse_distance_log2 as [lo, hi] in blocks.
std::pair<uint64_t, uint64_t> bucket_range(size_t k) {
  if (k == 0) return {0, 0};
  return {uint64_t{1} << (k - 1), (uint64_t{1} << k) - 1};
}

}  // namespace

std::string analysis_json(const TraceAnalysis& a, const std::string& trace_path, const std::string& format) {
  ojson j;
  j["schema"] = "prefixsim.analysis/1";
  j["trace"] = {{"path", trace_path}, {"format", format}};
  j["block_size"] = a.block_size;
  j["requests"] = a.requests;
  j["requests_not_analyzed"] = a.requests_not_analyzed;
  j["prompt_tokens"] = a.prompt_tokens;
  j["output_tokens"] = a.output_tokens;
  j["prompt_blocks"] = a.prompt_blocks;
  j["block_accesses"] = a.block_accesses;
  j["unique_blocks"] = a.unique_blocks;
  j["ideal_hit_tokens"] = a.ideal_hit_tokens;
  j["ideal_hit_blocks"] = a.ideal_hit_blocks;
  j["ideal_hit_rate"] = a.ideal_hit_rate;
  j["ideal_block_hit_rate"] = a.ideal_block_hit_rate;
  j["span_s"] = a.span_s;

  ojson buckets = ojson::array();
  for (size_t k = 0; k < a.reuse_distance_log2.size(); ++k) {
    const auto [lo, hi] = bucket_range(k);
    buckets.push_back({{"min_blocks", lo}, {"max_blocks", hi}, {"accesses", a.reuse_distance_log2[k]}});
  }
  j["reuse_distance"] = {{"unit", "distinct blocks touched since the previous access (LRU stack distance)"},
                         {"cold_accesses", a.cold_accesses},
                         {"buckets", buckets}};

  ojson windows = ojson::array();
  uint64_t max_blocks = 0;
  double sum_blocks = 0;
  for (const WindowStat& w : a.windows) {
    windows.push_back({{"start_s", w.start_s},
                       {"requests", w.requests},
                       {"blocks", w.blocks},
                       {"tokens", static_cast<int64_t>(w.blocks) * a.block_size}});
    max_blocks = std::max(max_blocks, w.blocks);
    sum_blocks += static_cast<double>(w.blocks);
  }
  j["working_set"] = {{"window_s", a.window_s},
                      {"max_blocks", max_blocks},
                      {"mean_blocks", a.windows.empty() ? 0.0 : sum_blocks / static_cast<double>(a.windows.size())},
                      {"windows", windows}};

  ojson hot = ojson::array();
  for (size_t i = 0; i < a.hottest.size(); ++i) {
    const HotPrefix& h = a.hottest[i];
    hot.push_back({{"rank", i + 1},
                   {"depth_blocks", h.depth_blocks},
                   {"tokens", h.tokens},
                   {"reuse", h.reuse},
                   {"tokens_saved", h.tokens_saved},
                   {"first_request", h.first_request},
                   {"hash", h.hash}});
  }
  j["hottest_prefixes"] = hot;

  ojson curve = ojson::array();
  for (const CurvePoint& p : a.lru_curve)
    curve.push_back({{"cache_blocks", p.cache_blocks},
                     {"cache_tokens", p.cache_blocks * a.block_size},
                     {"hit_rate", p.hit_rate}});
  j["lru_curve"] = {{"approximation", kLruCurveApproximation}, {"points", curve}};
  if (!a.tier_curve.empty()) {
    ojson tiers = ojson::array();
    for (const TierCurvePoint& p : a.tier_curve)
      tiers.push_back({{"cpu_blocks", p.cpu_blocks},
                       {"cpu_tokens", p.cpu_blocks * a.block_size},
                       {"write_through_hit_rate", p.write_through},
                       {"write_back_hit_rate", p.write_back}});
    j["tier_curve"] = {{"gpu_blocks", a.tier_gpu_blocks},
                       {"gpu_tokens", a.tier_gpu_blocks * a.block_size},
                       {"approximation", kTierCurveApproximation},
                       {"points", tiers}};
  }

  ojson budget = ojson::array();
  for (const BudgetPoint& b : a.kv_budget) {
    ojson e = {{"target", b.target}};
    if (b.cache_blocks) {
      e["cache_blocks"] = *b.cache_blocks;
      e["cache_tokens"] = *b.cache_blocks * a.block_size;
    } else {
      e["cache_blocks"] = nullptr;
      e["cache_tokens"] = nullptr;
    }
    e["raised_to_largest_request"] = b.raised_to_largest_request;
    budget.push_back(e);
  }
  j["largest_request_blocks"] = a.largest_request_blocks;
  j["kv_budget"] = budget;
  ojson of_ideal = ojson::array();
  for (const BudgetPoint& b : a.kv_budget_of_ideal) {
    ojson e = {{"fraction_of_ideal", b.target}, {"hit_rate", b.target * a.ideal_hit_rate}};
    e["cache_blocks"] = b.cache_blocks ? ojson(*b.cache_blocks) : ojson(nullptr);
    e["cache_tokens"] = b.cache_blocks ? ojson(*b.cache_blocks * a.block_size) : ojson(nullptr);
    e["raised_to_largest_request"] = b.raised_to_largest_request;
    of_ideal.push_back(e);
  }
  j["kv_budget_of_ideal"] = of_ideal;

  if (a.lru_check) {
    const LruCheck& c = *a.lru_check;
    j["lru_check"] = {{"num_blocks", c.num_blocks},
                      {"capacity_tokens", (c.num_blocks - 1) * a.block_size},
                      {"requests", c.requests},
                      {"refused_requests", c.refused},
                      {"prompt_tokens", c.prompt_tokens},
                      {"hit_tokens", c.hit_tokens},
                      {"hit_rate", c.hit_rate}};
  }
  return j.dump(2) + "\n";
}

std::string analysis_markdown(const TraceAnalysis& a, const std::string& trace_path, const std::string& format) {
  std::ostringstream o;
  const int64_t B = a.block_size;
  o << "# Prefix reuse of `" << trace_path << "`\n\n";
  o << "Format " << format << ", block size " << B << " tokens.\n\n";
  if (a.requests_not_analyzed)
    o << "**Only the first " << a.requests << " requests were analyzed**: the next would have passed the "
      << "distinct-block cap (--max-distinct-blocks, memory bound), so the last " << a.requests_not_analyzed
      << " requests are left out of every figure below.\n\n";
  o << "| | |\n| --- | ---: |\n";
  o << "| requests | " << a.requests << " |\n";
  o << "| prompt tokens | " << a.prompt_tokens << " |\n";
  o << "| output tokens | " << a.output_tokens << " |\n";
  o << "| span | " << a.span_s << " s |\n";
  o << "| unique full blocks | " << a.unique_blocks << " (" << a.unique_blocks * static_cast<uint64_t>(B)
    << " tokens) |\n";
  o << "| ideal hit rate (tokens) | " << pct(a.ideal_hit_rate) << " |\n";
  o << "| ideal hit rate (blocks) | " << pct(a.ideal_block_hit_rate) << " |\n";
  if (a.lru_check)
    o << "| vLLM LRU hit rate, " << (a.lru_check->num_blocks - 1) * B << " tokens of cache | "
      << pct(a.lru_check->hit_rate) << " |\n";
  o << "\nIdeal: an unbounded cache with vLLM's semantics (requests in order, only full blocks cached, at most "
       "floor((len-1)/B) blocks hit per request; prompt blocks are inserted after each request, outputs are not, so "
       "a re-sent output first hits once a later prompt has carried it). Block hit rate: hit blocks / ceil(len/B) "
       "per request.\n";
  if (a.lru_check)
    o << "The vLLM LRU figure replays every request alone through the KV cache manager (prompt + output "
         "allocated, then freed) on a pool of "
      << a.lru_check->num_blocks << " blocks; " << a.lru_check->refused
      << " requests larger than the pool were left out.\n";

  o << "\n## KV cache needed for a target hit rate (LRU)\n\n| target | cache blocks | cache tokens |\n"
       "| ---: | ---: | ---: |\n";
  for (const BudgetPoint& b : a.kv_budget) {
    o << "| " << pct(b.target) << " | ";
    if (b.cache_blocks)
      o << *b.cache_blocks << (b.raised_to_largest_request ? "*" : "") << " | " << *b.cache_blocks * B << " |\n";
    else o << "unreachable | above the ideal " << pct(a.ideal_hit_rate) << " |\n";
  }
  o << "\nThe same, for fractions of the ideal hit rate (always reachable):\n\n"
       "| fraction of ideal | hit rate | cache blocks | cache tokens |\n| ---: | ---: | ---: | ---: |\n";
  for (const BudgetPoint& b : a.kv_budget_of_ideal) {
    o << "| " << pct(b.target) << " | " << pct(b.target * a.ideal_hit_rate) << " | ";
    if (b.cache_blocks)
      o << *b.cache_blocks << (b.raised_to_largest_request ? "*" : "") << " | " << *b.cache_blocks * B << " |\n";
    else o << "- | - |\n";
  }
  o << "\nA pool holds a running request's blocks all at once, so no budget is below the largest request ("
    << a.largest_request_blocks << " blocks); a budget raised to it is marked *, and its hit rate is above the "
       "target.\n";
  o << "\nApproximation: " << kLruCurveApproximation << "\n";
  o << "\n| cache blocks | cache tokens | LRU hit rate |\n| ---: | ---: | ---: |\n";
  for (const CurvePoint& p : a.lru_curve)
    o << "| " << p.cache_blocks << " | " << p.cache_blocks * B << " | " << pct(p.hit_rate) << " |\n";

  if (!a.tier_curve.empty()) {
    o << "\n## A CPU tier below " << a.tier_gpu_blocks * B << " GPU tokens\n\nHit rate (GPU + CPU) as the CPU tier "
         "grows. Approximation: " << kTierCurveApproximation << "\n\n| CPU blocks | CPU tokens | write-through | "
         "write-back |\n| ---: | ---: | ---: | ---: |\n";
    for (const TierCurvePoint& p : a.tier_curve)
      o << "| " << p.cpu_blocks << " | " << p.cpu_blocks * B << " | " << pct(p.write_through) << " | "
        << pct(p.write_back) << " |\n";
  }
  o << "\n## Hottest prefixes\n\nMaximal shared prefixes (no longer prefix is hit as often), by tokens saved = "
       "reuse x length.\n\n| rank | blocks | tokens | reuse | tokens saved | first request |\n"
       "| ---: | ---: | ---: | ---: | ---: | --- |\n";
  for (size_t i = 0; i < a.hottest.size(); ++i) {
    const HotPrefix& h = a.hottest[i];
    o << "| " << i + 1 << " | " << h.depth_blocks << " | " << h.tokens << " | " << h.reuse << " | "
      << h.tokens_saved << " | " << h.first_request << " |\n";
  }

  o << "\n## Reuse distance\n\nLRU stack distance of every full-block access (distinct blocks touched since its "
       "previous access); a cache of C blocks hits the accesses below C.\n\n| distance (blocks) | accesses |\n"
       "| --- | ---: |\n";
  o << "| first access (cold) | " << a.cold_accesses << " |\n";
  for (size_t k = 0; k < a.reuse_distance_log2.size(); ++k) {
    const auto [lo, hi] = bucket_range(k);
    o << "| " << lo << (hi > lo ? " - " + std::to_string(hi) : "") << " | " << a.reuse_distance_log2[k] << " |\n";
  }

  o << "\n## Working set\n\nDistinct full blocks touched per " << a.window_s << " s window";
  const size_t n = a.windows.size();
  const size_t step = n > 40 ? (n + 39) / 40 : 1;
  if (step > 1) o << " (every " << step << "th window shown; analysis.json has all " << n << ")";
  o << ".\n\n| window start (s) | requests | blocks | tokens |\n| ---: | ---: | ---: | ---: |\n";
  for (size_t i = 0; i < n; i += step) {
    const WindowStat& w = a.windows[i];
    o << "| " << w.start_s << " | " << w.requests << " | " << w.blocks << " | "
      << static_cast<int64_t>(w.blocks) * B << " |\n";
  }
  return o.str();
}

}  // namespace prefixsim
