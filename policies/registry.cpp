#include "policies/registry.h"

#include <charconv>

#include "policies/lru.h"
#include "sim/error.h"

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

const std::vector<PolicyInfo>& policy_registry() {
  static const std::vector<PolicyInfo> table = {
      {"lru", {"vllm"}, "vLLM v1's free queue: reuse the block released longest ago (exact vLLM behaviour)",
       [](PolicyParams&, const PolicyContext&) { return std::make_unique<LruPolicy>(); }},
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
      kv[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  PolicyParams params(info->name, std::move(kv));
  auto policy = info->make(params, ctx);
  params.reject_unused();
  return policy;
}

}  // namespace prefixsim
