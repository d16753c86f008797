#include "policies/registry.h"

#include "policies/arc.h"
#include "policies/belady.h"
#include "policies/fifo.h"
#include "policies/greedy_dual.h"
#include "policies/leaf_first.h"
#include "policies/lfu_da.h"
#include "policies/lfu.h"
#include "policies/lru.h"
#include "policies/s3fifo.h"
#include "policies/sieve.h"
#include "policies/tinylfu.h"
#include "policies/two_q.h"
#include "sim/base/error.h"

namespace prefixsim {

const std::vector<PolicyInfo>& policy_registry() {
  static const std::vector<PolicyInfo> table = {
      {"lru", {"vllm"}, "vLLM v1's free queue: reuse the block released longest ago (exact vLLM behaviour)",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<LruPolicy>(); }},
      {"fifo", {}, "evict the content cached longest ago; hits do not refresh",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<FifoPolicy>(); }},
      {"lfu", {}, "evict the least used block, LRU among equals; half_life=H (block accesses) decays counts",
       [](PolicyParams& p, const PolicyContext&) {
         return std::make_unique<LfuPolicy>(p.get_double_in("half_life", 0, 0, 1e18));
       }},
      {"lfu-da", {}, "LFU with dynamic aging (GreedyDual, cost 1): new content starts at the evicted priority",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<LfuDaPolicy>(); }},
      {"gdsf", {}, "GreedyDual-Size-Frequency, cost = prefill compute a block saves; attn_tokens=32768",
       [](PolicyParams& p, const PolicyContext& c) {
         return std::make_unique<GreedyDualPolicy>("gdsf", c.block_size,
                                                   p.get_double_in("attn_tokens", 32768, 1, 1e12));
       }},
      {"arc", {}, "Adaptive Replacement Cache: recency (T1) vs frequency (T2), tuned by ghost hits",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<ArcPolicy>(); }},
      {"2q", {"twoq"}, "2Q: FIFO A1in for new content, LRU Am for content seen again after eviction; kin=0.25,kout=0.5",
       [](PolicyParams& p, const PolicyContext&) {
         const double kin = p.get_double_in("kin", 0.25, 0.0, 1.0);
         return std::make_unique<TwoQPolicy>(kin, p.get_double_in("kout", 0.5, 0.0, 4.0));
       }},
      {"s3fifo", {}, "S3-FIFO: small FIFO filters one-hit wonders, main FIFO with 2-bit CLOCK; small=0.1,promote=1",
       [](PolicyParams& p, const PolicyContext&) {
         const double small = p.get_double_in("small", 0.1, 0.0, 1.0);
         return std::make_unique<S3FifoPolicy>(small,
                                               static_cast<int32_t>(p.get_double_in("promote", 1, 1, 3)));
       }},
      {"sieve", {}, "SIEVE: FIFO queue, visited bit, a hand that keeps survivors in place",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<SievePolicy>(); }},
      {"tinylfu", {"w-tinylfu"}, "W-TinyLFU: LRU window, then a Count-Min-sketch admission duel into an SLRU main (probation, protected 0.8); "
       "the window adapts by Caffeine's hill climber from 0.01 unless window=F fixes it; sample=10 (adaptive=1 climbs from window=F)",
       [](PolicyParams& p, const PolicyContext&) {
         const auto sample = static_cast<int64_t>(p.get_double_in("sample", 10, 1, 1e6));
         const bool adaptive = p.get_bool("adaptive", p.values().count("window") == 0);
         return std::make_unique<TinyLfuPolicy>(sample, p.get_double_in("window", 0.01, 0.0, 1.0), adaptive);
       }},
      {"leaf-first", {"sglang"}, "SGLang radix-tree eviction: only blocks without cached descendants, LRU among them",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<LeafFirstPolicy>(); }},
      {"belady", {"opt"}, "offline: evict the block whose next use is farthest (needs the whole trace in advance)",
       [](PolicyParams&, const PolicyContext& c) -> std::unique_ptr<EvictionPolicy> {
         if (!c.future)
           throw InputError("--policy belady: the offline policy needs the whole trace ahead of time; "
                            "it is available in cache-mode replays (replay --mode cache, compare)");
         return std::make_unique<BeladyPolicy>(c.future);
       }},
  };
  return table;
}

const PolicyInfo* find_policy(std::string_view name) {
  for (const PolicyInfo& p : policy_registry()) {
    if (p.name == name) return &p;
    for (const std::string& a : p.aliases)
      if (a == name) return &p;
  }
  return nullptr;
}

namespace {
std::string known_names() {
  std::string out;
  for (const PolicyInfo& p : policy_registry()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}
}  // namespace

std::string canonical_policy_name(std::string_view spec) {
  const std::string_view name = spec.substr(0, spec.find(':'));
  const PolicyInfo* info = find_policy(name);
  if (!info) throw InputError("--policy: unknown policy '" + std::string(name) + "' (known: " + known_names() + ")");
  return info->name;
}

std::unique_ptr<EvictionPolicy> make_policy(std::string_view spec, const PolicyContext& ctx) {
  const size_t colon = spec.find(':');
  const std::string name(spec.substr(0, colon));
  const PolicyInfo* info = find_policy(name);
  if (!info) throw InputError("--policy: unknown policy '" + name + "' (known: " + known_names() + ")");
  ParsedSpec parsed = parse_spec(spec, "--policy");
  PolicyParams params("--policy " + info->name, std::move(parsed.params));
  auto policy = info->make(params, ctx);
  params.reject_unused();
  return policy;
}

}  // namespace prefixsim
