// llm-d: the scheduler of llm-d (the Endpoint Picker, EPP, of the Gateway
// API Inference Extension; llm-d/llm-d-inference-scheduler v0.8.0 and GIE
// v1.5.0, read at llm-d-inference-scheduler 520af478). A scheduling profile
// is a set of weighted scorers and a picker:
//     total(p) = sum over scorers s of weight_s * clamp(score_s(p), 0, 1)
// weights raw, not normalised. The scorers, each as llm-d computes it:
//   precise-prefix  (precise-prefix-cache-scorer): raw(p) = the leading
//       blocks of the prompt that p's KV cache holds (vLLM's block size and
//       hash chain; only full blocks; llm-d learns them from KV events, read
//       here without their delay). Released versions (<= v0.8.0, the images
//       the guides deploy; precise-norm=minmax) normalise min-max over the
//       pods that hold block 0 at all: (raw - min) / (max - min), 1 for
//       every holder when max == min, 0 for a pod without block 0. llm-d's
//       main branch (precise-norm=fraction) scores min(1, raw / full blocks).
//   prefix  (prefix-cache-scorer, the approximate one): the router's own
//       index of what it sent where. Each pick adds all the request's
//       blocks (at most prefix-max-blocks, 256) to the chosen pod's LRU,
//       root first, capacity its num_gpu_blocks; match(p) counts leading
//       blocks, stopping at the first block no pod holds, +1 for every pod
//       holding each; score = match / blocks. llm-d hashes 4 x block_size
//       characters of the prompt per block (about one token block); here a
//       block is the prompt's token block.
//   kv-util  (kv-cache-utilization-scorer): 1 - vllm:kv_cache_usage_perc.
//   queue  (queue-scorer): (maxQ - q) / (maxQ - minQ) over the pods, q =
//       vllm:num_requests_waiting; 1 for all when every q is equal.
//   running  (running-requests-size-scorer): the same on num_requests_running.
//   load-aware  (llm-d's load-aware-scorer): 0.5 with an empty queue, else
//       0.5 * (1 - min(q, T) / T), T = load-threshold (128).
//   session  (session-affinity-scorer): 1 for the pod that served the
//       session's previous request (llm-d's x-session-token header), else 0.
// With no weight given the profile is llm-d's built-in default and its
// inference-scheduling guide's: prefix 3, kv-util 2, queue 2. The older
// precise guide is precise-prefix=3,kv-util=2,queue=2.
// Pickers: max-score (the highest total; ties drawn uniformly, seeded where
// llm-d seeds from the clock), random (uniform), weighted-random (chance
// proportional to the total; uniform when every total is 0).
//
// Differences: metrics are read now, unless --router-scrape-ms samples them
// as the EPP's refreshMetricsInterval (50 ms) does; no
// filters or saturation detector (every pod is a candidate, nothing shed);
// one KV tier (GPU, weight 1.0), so the CPU tier's 0.8 weight never applies.
// In a mixed fleet (--replica-groups) each pod's approximate LRU holds its
// own num_gpu_blocks and kv-util is already a share of each pod's pool;
// queue and running stay counts, as llm-d's scorers read them.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/base/error.h"
#include "sim/base/mix.h"
#include "sim/fleet/prefix_set.h"
#include "sim/fleet/router.h"

namespace prefixsim {
namespace llm_d_detail {

enum class Picker { kMaxScore, kRandom, kWeightedRandom };

struct Profile {
  double precise = 0, prefix = 0, kv_util = 0, queue = 0, running = 0, load_aware = 0, session = 0;
  bool precise_fraction = false;  // llm-d main's min(1, raw / blocks); else min-max
  double load_threshold = 128;
  int32_t prefix_max_blocks = 256;
  Picker picker = Picker::kMaxScore;
};

// (max - v) / (max - min) for every entry; 1 for all when they are equal.
void min_max_low_is_best(const std::vector<double>& v, std::vector<double>& out) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = *hi == *lo ? 1.0 : (*hi - v[i]) / (*hi - *lo);
}

class LlmDRouter final : public Router {
 public:
  LlmDRouter(const Profile& profile, const RouterContext& ctx, uint64_t seed)
      : p_(profile), state_(mix64(seed ^ 0x6c6c6d2d64ULL)) {
    if (p_.prefix > 0) {
      approx_.reserve(ctx.replicas);
      for (uint32_t i = 0; i < ctx.replicas; ++i)
        approx_.emplace_back(static_cast<int32_t>(std::clamp<int64_t>(ctx.blocks_of(i), 1, INT32_MAX)));
    }
  }
  bool needs_prompt_blocks() const override { return p_.precise > 0 || p_.prefix > 0; }
  bool reads_scraped_load() const override { return true; }

  uint32_t route(const RouteQuery& q, const FleetView& fleet) override {
    const uint32_t n = fleet.size();
    total_.assign(n, 0.0);
    if (p_.precise > 0) add_precise(q, fleet);
    std::span<const BlockHash> approx_blocks =
        q.prompt_blocks.first(std::min(q.prompt_blocks.size(), static_cast<size_t>(p_.prefix_max_blocks)));
    if (p_.prefix > 0) add_approx(approx_blocks);
    if (p_.kv_util > 0)
      for (uint32_t i = 0; i < n; ++i) total_[i] += p_.kv_util * std::clamp(1.0 - fleet.kv_usage(i), 0.0, 1.0);
    if (p_.queue > 0) add_spread(fleet, p_.queue, [&](uint32_t i) { return fleet.waiting(i); });
    if (p_.running > 0) add_spread(fleet, p_.running, [&](uint32_t i) { return fleet.running(i); });
    if (p_.load_aware > 0)
      for (uint32_t i = 0; i < n; ++i) {
        const double w = static_cast<double>(fleet.waiting(i));
        total_[i] += p_.load_aware * (w == 0 ? 0.5 : 0.5 * (1.0 - std::min(w, p_.load_threshold) / p_.load_threshold));
      }
    const std::string& session = q.request->session;
    auto last = p_.session > 0 && !session.empty() ? sessions_.find(session) : sessions_.end();
    if (last != sessions_.end()) total_[last->second] += p_.session;

    const uint32_t choice = pick();
    if (p_.prefix > 0) approx_[choice].insert_root_first(approx_blocks);
    if (p_.session > 0 && !session.empty()) sessions_[session] = choice;
    return choice;
  }

 private:
  void add_precise(const RouteQuery& q, const FleetView& fleet) {
    const uint32_t n = fleet.size();
    raw_.assign(n, 0.0);
    overlaps_.resize(n);
    fleet.cached_prefix_blocks_all(q.prompt_blocks, overlaps_);
    double lo = 0, hi = 0;
    bool any = false;
    for (uint32_t i = 0; i < n; ++i) {
      raw_[i] = static_cast<double>(overlaps_[i]);
      if (raw_[i] == 0) continue;  // no block 0: not in llm-d's index map
      lo = any ? std::min(lo, raw_[i]) : raw_[i];
      hi = any ? std::max(hi, raw_[i]) : raw_[i];
      any = true;
    }
    const double blocks = static_cast<double>(q.prompt_blocks.size());
    for (uint32_t i = 0; i < n; ++i) {
      if (raw_[i] == 0) continue;
      const double s = p_.precise_fraction ? std::min(1.0, raw_[i] / blocks) : (hi == lo ? 1.0 : (raw_[i] - lo) / (hi - lo));
      total_[i] += p_.precise * s;
    }
  }

  void add_approx(std::span<const BlockHash> blocks) {
    const uint32_t n = static_cast<uint32_t>(approx_.size());
    match_.assign(n, 0);
    for (const BlockHash& h : blocks) {
      bool held = false;
      for (uint32_t i = 0; i < n; ++i)
        if (approx_[i].contains(h)) {
          ++match_[i];
          held = true;
        }
      if (!held) break;
    }
    if (blocks.empty()) return;
    for (uint32_t i = 0; i < n; ++i)
      total_[i] += p_.prefix * static_cast<double>(match_[i]) / static_cast<double>(blocks.size());
  }

  template <typename Count>
  void add_spread(const FleetView& fleet, double weight, Count count) {
    values_.resize(fleet.size());
    for (uint32_t i = 0; i < fleet.size(); ++i) values_[i] = static_cast<double>(count(i));
    min_max_low_is_best(values_, scores_);
    for (uint32_t i = 0; i < fleet.size(); ++i) total_[i] += weight * scores_[i];
  }

  // A uniform draw in [0, 1), the k-th SplitMix64 output of the seed.
  double uniform() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return static_cast<double>(mix64(state_) >> 11) * 0x1.0p-53;
  }
  uint32_t uniform_below(size_t n) { return static_cast<uint32_t>(std::min(uniform() * static_cast<double>(n), static_cast<double>(n - 1))); }

  uint32_t pick() {
    const size_t n = total_.size();
    if (p_.picker == Picker::kRandom) return uniform_below(n);
    if (p_.picker == Picker::kWeightedRandom) {
      double sum = 0;
      for (double t : total_) sum += t;
      if (sum <= 0) return uniform_below(n);
      double u = uniform() * sum;
      for (uint32_t i = 0; i < n; ++i) {
        if (u < total_[i]) return i;
        u -= total_[i];
      }
      for (uint32_t i = static_cast<uint32_t>(n); i-- > 0;)  // rounding left u past the end
        if (total_[i] > 0) return i;
    }
    const double best = *std::max_element(total_.begin(), total_.end());
    tied_.clear();
    for (uint32_t i = 0; i < n; ++i)
      if (total_[i] == best) tied_.push_back(i);
    return tied_.size() == 1 ? tied_[0] : tied_[uniform_below(tied_.size())];
  }

  Profile p_;
  uint64_t state_;
  std::vector<PrefixSet> approx_;
  std::unordered_map<std::string, uint32_t> sessions_;
  std::vector<double> total_, raw_, values_, scores_;
  std::vector<size_t> overlaps_;  // leading cached blocks, by replica (precise scorer)
  std::vector<uint32_t> match_, tied_;
};

Picker parse_picker(SpecParams& p) {
  const std::string name = p.get_string("picker", "max-score");
  if (name == "max-score") return Picker::kMaxScore;
  if (name == "random") return Picker::kRandom;
  if (name == "weighted-random") return Picker::kWeightedRandom;
  throw InputError(p.owner() + ": picker must be max-score, random or weighted-random, not '" + name + "'");
}

}  // namespace llm_d_detail

std::unique_ptr<Router> make_llm_d_router(SpecParams& p, const RouterContext& ctx) {
  using namespace llm_d_detail;
  Profile profile;
  const char* weights[] = {"precise-prefix", "prefix", "kv-util", "queue", "running", "load-aware", "session"};
  bool any_weight = false;
  for (const char* w : weights) any_weight = any_weight || p.values().count(w) > 0;
  if (!any_weight) {  // llm-d's default profile
    profile.prefix = 3;
    profile.kv_util = 2;
    profile.queue = 2;
  }
  profile.precise = p.get_double_in("precise-prefix", profile.precise, 0, 1e6);
  profile.prefix = p.get_double_in("prefix", profile.prefix, 0, 1e6);
  profile.kv_util = p.get_double_in("kv-util", profile.kv_util, 0, 1e6);
  profile.queue = p.get_double_in("queue", profile.queue, 0, 1e6);
  profile.running = p.get_double_in("running", profile.running, 0, 1e6);
  profile.load_aware = p.get_double_in("load-aware", profile.load_aware, 0, 1e6);
  profile.session = p.get_double_in("session", profile.session, 0, 1e6);
  profile.load_threshold = p.get_double_in("load-threshold", 128, 1, 1e9);
  const int64_t max_blocks = p.get_int("prefix-max-blocks", 256);
  if (max_blocks < 1 || max_blocks > 1'000'000)
    throw InputError(p.owner() + ": prefix-max-blocks must be in [1, 1000000], not " + std::to_string(max_blocks));
  profile.prefix_max_blocks = static_cast<int32_t>(max_blocks);
  const std::string norm = p.get_string("precise-norm", "minmax");
  if (norm != "minmax" && norm != "fraction")
    throw InputError(p.owner() + ": precise-norm must be minmax (llm-d <= v0.8.0) or fraction (llm-d main), not '" +
                     norm + "'");
  profile.precise_fraction = norm == "fraction";
  profile.picker = parse_picker(p);
  if (profile.precise + profile.prefix + profile.kv_util + profile.queue + profile.running + profile.load_aware +
          profile.session <= 0)
    throw InputError(p.owner() + ": every scorer's weight is 0 (give one a positive weight)");
  return std::make_unique<LlmDRouter>(profile, ctx, static_cast<uint64_t>(p.get_int("seed", 0)));
}

}  // namespace prefixsim
