// The KV tiers of a run (sim/kv/kv_tier.h), from the scenario: the CPU tier
// of --kv-offloading-size (vLLM's flag) and the tiers of --kv-tier, built per
// replica (or once for the fleet when shared), and their report.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "reports/run_report.h"
#include "sim/scenario/scenario.h"
#include "sim/cost/catalog.h"
#include "sim/kv/kv_tier.h"

namespace prefixsim {

struct TierSpec {
  KvTierConfig cfg;            // capacity_blocks and bytes_per_block set by resolve_tiers
  double size_gib = 0;         // per instance; infinity: unbounded
  std::string policy = "lru";  // any online policy of the registry
};

// The CPU tier's link when --kv-offloading-size gives no bandwidth: PCIe Gen5
// x16 is 64 GB/s per direction on paper; vLLM's DMA offloading moves about
// 50 GB/s with its contiguous blocks (an assumption to override with
// --kv-tier cpu:size=...,read=...,write=...).
inline constexpr double kDefaultCpuTierBytesPerS = 50e9;

// The scenario's tiers in lookup order (the CPU tier first), sizes not yet
// in blocks. InputError naming the flag on a bad spec.
std::vector<TierSpec> parse_tiers(const Scenario& s);
// Sizes in blocks: size GiB / (bytes per block x TP), as vLLM's
// --kv-offloading-size is the buffer summed over the TP ranks.
void resolve_tiers(std::vector<TierSpec>& specs, int64_t bytes_per_block, int tp);
// Both, for the scenario's model (bytes per block of one TP shard).
std::vector<TierSpec> scenario_tiers(const Scenario& s, const ModelSpec& model);

// The tiers of a fleet: replicas x per-replica tiers, plus the shared ones,
// and each replica's stack over them.
class FleetTiers {
 public:
  FleetTiers() = default;
  // num_keys > 0: the run replays an interned trace (cache mode's pre-pass).
  FleetTiers(const std::vector<TierSpec>& specs, int replicas, uint32_t num_keys, int32_t block_size);
  bool empty() const { return specs_.empty(); }
  // Replica r's stack, or nullptr when there are no tiers.
  KvTierStack* stack(size_t r) { return empty() ? nullptr : stacks_[r].get(); }
  std::vector<TierReport> report() const;
  // Every tier instance and replica stack tells `o` of its moves.
  void set_observer(TierObserver* o);
  // Empty when every tier's invariant holds.
  std::string check_invariants() const;

 private:
  std::vector<TierSpec> specs_;
  int32_t block_size_ = 16;
  std::vector<std::vector<std::unique_ptr<KvTier>>> instances_;  // by spec: one if shared, else one per replica
  std::vector<std::unique_ptr<KvTierStack>> stacks_;              // by replica
};

}  // namespace prefixsim
