#include "sim/scenario/kv_tiers.h"

#include <cmath>

#include "sim/base/error.h"
#include "sim/base/text_fields.h"
#include "sim/base/spec_params.h"
#include "sim/scenario/offline_future.h"
#include "sim/cost/kv_sizing.h"

namespace prefixsim {

namespace {

// One --kv-tier spec: NAME:size=GiB,read=GB/s,write=GB/s[,latency=us][,shared]
// [,policy=NAME][,store=compute|evict].
TierSpec parse_one(std::string_view text) {
  // A bare `shared` is a switch: shared=true.
  std::string spec(text);
  for (size_t at = spec.find("shared"); at != std::string::npos; at = spec.find("shared", at + 1)) {
    const size_t end = at + 6;
    const bool starts = at > 0 && (spec[at - 1] == ':' || spec[at - 1] == ',');
    const bool ends = end == spec.size() || spec[end] == ',';
    if (starts && ends) spec.insert(end, "=true");
  }
  ParsedSpec p = parse_spec(spec, "--kv-tier");
  TierSpec t;
  t.cfg.name = p.name;
  if (t.cfg.name.empty()) throw InputError("--kv-tier: a tier needs a name (NAME:size=...)");
  SpecParams params("--kv-tier " + p.name, std::move(p.params));
  t.size_gib = params.get_double("size", -1);
  if (!(t.size_gib > 0)) throw InputError("--kv-tier " + t.cfg.name + ": size=GiB is required and must be positive (inf: unbounded)");
  t.cfg.read_bytes_per_s = params.get_double_in("read", -1, 1e-6, 1e6) * 1e9;
  t.cfg.write_bytes_per_s = params.get_double_in("write", t.cfg.read_bytes_per_s / 1e9, 1e-6, 1e6) * 1e9;
  t.cfg.latency = static_cast<TimeNs>(std::llround(params.get_double_in("latency", 0, 0, 1e9) * 1e3));
  t.cfg.shared = params.get_bool("shared", false);
  t.policy = params.get_string("policy", "lru");
  const std::string store = params.get_string("store", "compute");
  if (store == "compute") t.cfg.store = TierStoreRule::kOnCompute;
  else if (store == "evict") t.cfg.store = TierStoreRule::kOnEvict;
  else throw InputError("--kv-tier " + t.cfg.name + ": store must be compute or evict, not '" + store + "'");
  params.reject_unused();
  return t;
}

}  // namespace

std::vector<TierSpec> parse_tiers(const Scenario& s) {
  std::vector<TierSpec> out;
  if (s.kv_offloading_size && *s.kv_offloading_size != 0) {  // 0: no offloading, as in vLLM
    if (!(*s.kv_offloading_size > 0))
      throw InputError("--kv-offloading-size: must be a non-negative number of GiB (0: none; inf: unbounded)");
    TierSpec cpu;
    cpu.cfg.name = "cpu";
    cpu.size_gib = *s.kv_offloading_size;
    cpu.cfg.read_bytes_per_s = cpu.cfg.write_bytes_per_s = kDefaultCpuTierBytesPerS;
    out.push_back(cpu);
  }
  std::string_view rest = s.kv_tiers;
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    const std::string_view one = rest.substr(0, semi);
    if (one.empty()) throw InputError("--kv-tier: an empty tier spec (specs are separated by ';')");
    out.push_back(parse_one(one));
    if (semi != std::string_view::npos && semi + 1 == rest.size())
      throw InputError("--kv-tier: an empty tier spec after the last ';'");
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (out[j].cfg.name == out[i].cfg.name)
        throw InputError("--kv-tier: two tiers are named '" + out[i].cfg.name +
                         "'" + (out[i].cfg.name == "cpu" ? " (--kv-offloading-size makes the tier cpu)" : ""));
    if (needs_future(out[i].policy))
      throw InputError("--kv-tier " + out[i].cfg.name + ": policy " + out[i].policy +
                       " needs the trace's future, which a tier has no index of; give an online policy");
    make_policy(out[i].policy);  // a bad name or parameter is exit 2 now, not mid-run
  }
  return out;
}

void resolve_tiers(std::vector<TierSpec>& specs, int64_t bytes_per_block, int tp) {
  for (TierSpec& t : specs) {
    if (bytes_per_block <= 0)
      throw InputError("--kv-tier " + t.cfg.name + ": a tier's size needs the model's bytes per block (--model)");
    t.cfg.bytes_per_block = bytes_per_block;
    if (std::isinf(t.size_gib)) {
      t.cfg.capacity_blocks = kUnboundedTier;
      continue;
    }
    const double blocks = std::floor(t.size_gib * 1073741824.0 / (static_cast<double>(bytes_per_block) * tp));
    if (blocks < 1)
      throw InputError("--kv-tier " + t.cfg.name + ": " + number_text(t.size_gib) + " GiB holds no block of " +
                       std::to_string(bytes_per_block * tp) + " bytes");
    if (blocks >= static_cast<double>(INT32_MAX))
      throw InputError("--kv-tier " + t.cfg.name + ": " + number_text(t.size_gib) +
                       " GiB is more than 2^31-2 blocks; give inf for an unbounded tier");
    t.cfg.capacity_blocks = static_cast<int64_t>(blocks);
  }
}

std::vector<TierSpec> scenario_tiers(const Scenario& s, const ModelSpec& model) {
  std::vector<TierSpec> specs = parse_tiers(s);
  if (specs.empty()) return specs;
  // The pool's element size: fp8 when asked, else the model's (as size_kv_pool).
  const int dtype = kv_dtype_bytes(s) > 0 ? kv_dtype_bytes(s) : model.dtype_bytes;
  resolve_tiers(specs, kv_bytes_per_token(model, s.tp, dtype) * s.block_size, s.tp);
  return specs;
}

FleetTiers::FleetTiers(const std::vector<TierSpec>& specs, int replicas, uint32_t num_keys, int32_t block_size)
    : specs_(specs), block_size_(block_size) {
  PolicyContext ctx;
  ctx.block_size = block_size;
  for (const TierSpec& t : specs_) {
    std::vector<std::unique_ptr<KvTier>> inst;
    const int n = t.cfg.shared ? 1 : replicas;
    for (int r = 0; r < n; ++r) inst.push_back(std::make_unique<KvTier>(t.cfg, make_policy(t.policy, ctx), num_keys));
    instances_.push_back(std::move(inst));
  }
  if (specs_.empty()) return;
  for (int r = 0; r < replicas; ++r) {
    std::vector<KvTier*> mine;
    for (size_t k = 0; k < specs_.size(); ++k)
      mine.push_back(specs_[k].cfg.shared ? instances_[k][0].get() : instances_[k][static_cast<size_t>(r)].get());
    stacks_.push_back(std::make_unique<KvTierStack>(std::move(mine)));
  }
}

std::vector<TierReport> FleetTiers::report() const {
  std::vector<TierReport> out;
  for (size_t k = 0; k < specs_.size(); ++k) {
    const TierSpec& t = specs_[k];
    TierReport r;
    r.name = t.cfg.name;
    r.shared = t.cfg.shared;
    r.store = t.cfg.store == TierStoreRule::kOnCompute ? "compute" : "evict";
    r.policy = canonical_policy_name(t.policy);
    r.instances = instances_[k].size();
    r.size_gib = std::isinf(t.size_gib) ? kNotAvailable : t.size_gib;
    r.capacity_blocks = t.cfg.capacity_blocks;
    r.capacity_tokens = t.cfg.capacity_blocks == kUnboundedTier ? -1 : t.cfg.capacity_blocks * block_size_;
    r.read_gb_s = t.cfg.read_bytes_per_s / 1e9;
    r.write_gb_s = t.cfg.write_bytes_per_s / 1e9;
    r.latency_us = static_cast<double>(t.cfg.latency) / 1e3;
    for (const auto& inst : instances_[k]) {
      const KvTierStats& s = inst->stats();
      r.hit_blocks += s.hit_blocks;
      r.stored_blocks += s.stored_blocks;
      r.evicted_blocks += s.evicted_blocks;
      r.bytes_read += s.bytes_read;
      r.bytes_written += s.bytes_written;
      r.max_occupancy_blocks = std::max(r.max_occupancy_blocks, s.max_occupancy);
    }
    r.hit_tokens = r.hit_blocks * static_cast<uint64_t>(block_size_);
    out.push_back(r);
  }
  return out;
}

void FleetTiers::set_observer(TierObserver* o) {
  for (auto& per_spec : instances_)
    for (auto& t : per_spec) t->set_observer(o);
  for (size_t r = 0; r < stacks_.size(); ++r) stacks_[r]->set_observer(o, static_cast<uint32_t>(r));
}

std::string FleetTiers::check_invariants() const {
  std::string err;
  for (const auto& inst : instances_)
    for (const auto& t : inst) err += t->check_invariants();
  return err;
}

}  // namespace prefixsim
