// prefix: SGLang's cache-aware router (sgl-router / SGLang Model Gateway,
// policies/cache_aware.rs). Per replica it keeps an approximate prefix tree
// of the prompts it routed there (PrefixSet: it never asks the replica
// what it really caches), and per request:
//   1. If load is imbalanced, i.e. (max - min) > balance_abs AND
//      max > balance_rel * min over the replicas' in-flight requests, the
//      least-loaded replica takes it (shortest queue).
//   2. Else the replica whose tree matches the longest prefix takes it when
//      the match covers more than cache_threshold of the prompt; otherwise
//      the least-loaded replica does.
//   3. The prompt is inserted into the chosen replica's tree either way.
// Defaults are the gateway's command-line ones: cache_threshold 0.3,
// balance_abs 64, balance_rel 1.5 (its library defaults, 0.5 / 32 / 1.1,
// differ; pass them to compare). Differences, on purpose:
//  - the tree holds block hashes, not characters, so a match is counted in
//    full blocks of the prompt (match tokens / prompt tokens);
//  - SGLang trims each tree to max_tree_size nodes every eviction_interval
//    seconds (its nodes are string segments, so the bound is loose); here a
//    tree of max_tree_blocks evicts its least recently used block at insert.
//    The default, 4 x the replica's KV pool (each its own in a mixed
//    fleet), keeps the tree an
//    approximation of that cache: a far larger tree routes by prefixes the
//    replica evicted long ago, and costs memory for nothing;
//  - ties in the longest match go to the less loaded, then the lower id.
// In a mixed fleet the balance rule stays SGLang's, in requests (its router
// does not know the workers' sizes); only the trees follow the pools.
#include <algorithm>

#include "sim/fleet/prefix_set.h"
#include "sim/fleet/router.h"

namespace prefixsim {
namespace {

class PrefixRouter final : public Router {
 public:
  PrefixRouter(const std::vector<int32_t>& max_blocks, double threshold, int64_t balance_abs, double balance_rel)
      : threshold_(threshold), balance_abs_(balance_abs), balance_rel_(balance_rel) {
    trees_.reserve(max_blocks.size());
    for (const int32_t m : max_blocks) trees_.emplace_back(m);
  }
  bool needs_prompt_blocks() const override { return true; }

  uint32_t route(const RouteQuery& q, const FleetView& fleet) override {
    const uint32_t choice = choose(q, fleet);
    trees_[choice].insert(q.prompt_blocks);
    return choice;
  }

 private:
  uint32_t choose(const RouteQuery& q, const FleetView& fleet) const {
    uint32_t least = 0;  // least_loaded_replica's rule: the lowest id among the least loaded
    size_t hi = fleet.load(0);
    for (uint32_t i = 1; i < fleet.size(); ++i) {
      if (fleet.load(i) < fleet.load(least)) least = i;
      hi = std::max(hi, fleet.load(i));
    }
    const size_t lo = fleet.load(least);
    const bool imbalanced = static_cast<int64_t>(hi - lo) > balance_abs_ &&
                            static_cast<double>(hi) > balance_rel_ * static_cast<double>(lo);
    if (imbalanced) return least;
    uint32_t best = 0;
    size_t best_match = 0;
    for (uint32_t i = 0; i < fleet.size(); ++i) {
      const size_t m = trees_[i].match(q.prompt_blocks);
      if (m > best_match || (m == best_match && m > 0 && fleet.load(i) < fleet.load(best))) {
        best = i;
        best_match = m;
      }
    }
    const double rate = q.request->prompt_len > 0
                            ? static_cast<double>(best_match) * q.block_size / static_cast<double>(q.request->prompt_len)
                            : 0.0;
    return rate > threshold_ ? best : least;
  }

  double threshold_;
  int64_t balance_abs_;
  double balance_rel_;
  std::vector<PrefixSet> trees_;
};

}  // namespace

std::unique_ptr<Router> make_prefix_router(SpecParams& p, const RouterContext& ctx) {
  const double threshold = p.get_double_in("cache_threshold", 0.3, 0.0, 1.0);
  const auto balance_abs = static_cast<int64_t>(p.get_double_in("balance_abs", 64, 0, 1e9));
  const double balance_rel = p.get_double_in("balance_rel", 1.5, 1.0, 1e9);
  auto pool4 = [&](uint32_t i) { return std::min(4.0 * static_cast<double>(std::max<int64_t>(ctx.blocks_of(i), 1024)), 1e9); };
  const bool given = p.values().count("max_tree_blocks") > 0;
  const auto fixed = static_cast<int32_t>(p.get_double_in("max_tree_blocks", pool4(0), 1, 1e9));
  std::vector<int32_t> max_blocks(ctx.replicas, fixed);
  if (!given)
    for (uint32_t i = 0; i < ctx.replicas; ++i) max_blocks[i] = static_cast<int32_t>(pool4(i));
  return std::make_unique<PrefixRouter>(max_blocks, threshold, balance_abs, balance_rel);
}

}  // namespace prefixsim
