#include "policies/registry.h"

#include <charconv>

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

PolicyParams::PolicyParams(std::string policy, std::map<std::string, std::string> kv)
    : policy_(std::move(policy)), kv_(std::move(kv)) {}

double PolicyParams::get_double(const std::string& key, double fallback) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return fallback;
  used_[key] = true;
  double v = 0;
  const char* b = it->second.data();
  const char* e = b + it->second.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e)
    throw InputError("--policy " + policy_ + ": " + key + "=" + it->second + " is not a number");
  return v;
}

int64_t PolicyParams::get_int(const std::string& key, int64_t fallback) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return fallback;
  used_[key] = true;
  int64_t v = 0;
  const char* b = it->second.data();
  const char* e = b + it->second.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e)
    throw InputError("--policy " + policy_ + ": " + key + "=" + it->second + " is not an integer");
  return v;
}

bool PolicyParams::get_bool(const std::string& key, bool fallback) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return fallback;
  used_[key] = true;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  throw InputError("--policy " + policy_ + ": " + key + "=" + it->second + " is not true/false");
}

void PolicyParams::reject_unused() const {
  for (const auto& [k, v] : kv_)
    if (!used_.count(k)) throw InputError("--policy " + policy_ + ": unknown parameter '" + k + "'");
}

namespace {
// A parameter that must lie in [lo, hi].
double in_range(PolicyParams& p, const std::string& policy, const std::string& key, double fallback, double lo,
                double hi) {
  const double v = p.get_double(key, fallback);
  if (!(v >= lo && v <= hi))
    throw InputError("--policy " + policy + ": " + key + " must be in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  return v;
}
}  // namespace

const std::vector<PolicyInfo>& policy_registry() {
  static const std::vector<PolicyInfo> table = {
      {"lru", {"vllm"}, "vLLM v1's free queue: reuse the block released longest ago (exact vLLM behaviour)",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<LruPolicy>(); }},
      {"fifo", {}, "evict the content cached longest ago; hits do not refresh",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<FifoPolicy>(); }},
      {"lfu", {}, "evict the least used block, LRU among equals; half_life=H (block accesses) decays counts",
       [](PolicyParams& p, const PolicyContext&) {
         return std::make_unique<LfuPolicy>(in_range(p, "lfu", "half_life", 0, 0, 1e18));
       }},
      {"lfu-da", {}, "LFU with dynamic aging (GreedyDual, cost 1): new content starts at the evicted priority",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<LfuDaPolicy>(); }},
      {"gdsf", {}, "GreedyDual-Size-Frequency, cost = prefill compute a block saves; attn_tokens=32768",
       [](PolicyParams& p, const PolicyContext& c) {
         return std::make_unique<GreedyDualPolicy>("gdsf", c.block_size,
                                                   in_range(p, "gdsf", "attn_tokens", 32768, 1, 1e12));
       }},
      {"arc", {}, "Adaptive Replacement Cache: recency (T1) vs frequency (T2), tuned by ghost hits",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<ArcPolicy>(); }},
      {"2q", {"twoq"}, "2Q: FIFO A1in for new content, LRU Am for content seen again after eviction; kin=0.25,kout=0.5",
       [](PolicyParams& p, const PolicyContext&) {
         const double kin = in_range(p, "2q", "kin", 0.25, 0.0, 1.0);
         return std::make_unique<TwoQPolicy>(kin, in_range(p, "2q", "kout", 0.5, 0.0, 4.0));
       }},
      {"s3fifo", {}, "S3-FIFO: small FIFO filters one-hit wonders, main FIFO with 2-bit CLOCK; small=0.1,promote=1",
       [](PolicyParams& p, const PolicyContext&) {
         const double small = in_range(p, "s3fifo", "small", 0.1, 0.0, 1.0);
         return std::make_unique<S3FifoPolicy>(small,
                                               static_cast<int32_t>(in_range(p, "s3fifo", "promote", 1, 1, 3)));
       }},
      {"sieve", {}, "SIEVE: FIFO queue, visited bit, a hand that keeps survivors in place",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<SievePolicy>(); }},
      {"tinylfu", {"w-tinylfu"}, "W-TinyLFU: LRU window, then a Count-Min-sketch admission duel into an SLRU main (probation, protected 0.8); "
       "window=0.01,sample=10",
       [](PolicyParams& p, const PolicyContext&) {
         const auto sample = static_cast<int64_t>(in_range(p, "tinylfu", "sample", 10, 1, 1e6));
         return std::make_unique<TinyLfuPolicy>(sample, in_range(p, "tinylfu", "window", 0.01, 0.0, 1.0));
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
  std::map<std::string, std::string> kv;
  if (colon != std::string_view::npos) {
    std::string_view rest = spec.substr(colon + 1);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0)
        throw InputError("--policy " + name + ": expected key=value, got '" + std::string(item) + "'");
      const std::string key(item.substr(0, eq));
      if (!kv.emplace(key, std::string(item.substr(eq + 1))).second)
        throw InputError("--policy " + name + ": parameter '" + key + "' given twice");
      if (comma != std::string_view::npos && comma + 1 == rest.size())
        throw InputError("--policy " + name + ": empty parameter after the last ','");
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  PolicyParams params(info->name, std::move(kv));
  auto policy = info->make(params, ctx);
  params.reject_unused();
  return policy;
}

}  // namespace prefixsim
