#include "sim/scenario/run_memory.h"

#include <algorithm>
#include <cstdio>

#include "sim/base/error.h"

namespace prefixsim {

double RunBlocks::total() const {
  double n = 0;
  for (const Part& p : parts) n += static_cast<double>(p.instances) * static_cast<double>(p.blocks);
  return n;
}

RunBlocks run_blocks(const Scenario& s, const KvSizing& pool, const std::vector<TierSpec>& tiers) {
  RunBlocks b;
  b.replicas = s.replicas;
  const std::string pool_flag = pool.source == "derived" ? "--gpu-mem-util" : pool.source;
  b.parts.push_back({s.replicas, pool.num_blocks, "GPU pool", pool_flag});
  // The CPU tier is --kv-offloading-size's when that is given (a --kv-tier
  // may not then be named cpu: parse_tiers).
  const bool offloading = s.kv_offloading_size && *s.kv_offloading_size != 0;
  for (const TierSpec& t : tiers) {
    if (t.cfg.capacity_blocks == kUnboundedTier) continue;
    const std::string flag = offloading && t.cfg.name == "cpu" ? "--kv-offloading-size" : "--kv-tier " + t.cfg.name;
    b.parts.push_back({t.cfg.shared ? 1 : s.replicas, t.cfg.capacity_blocks, "tier " + t.cfg.name, flag});
  }
  return b;
}

RunBlocks run_blocks(const std::vector<FleetPool>& pools, const std::vector<TierSpec>& tiers) {
  RunBlocks all;
  all.replicas = 0;
  for (const FleetPool& p : pools) {
    const RunBlocks b = run_blocks(p.scenario, p.kv, tiers);
    all.replicas += b.replicas;
    all.parts.insert(all.parts.end(), b.parts.begin(), b.parts.end());
  }
  return all;
}

std::string fleet_size_flag(const Scenario& s) {
  if (disaggregated(s)) return "--prefill-replicas/--decode-replicas";
  return mixed_fleet(s) ? "--replica-groups" : "--replicas";
}

void check_run_fits_memory(const RunBlocks& b, const std::string& replicas_flag, double limit_bytes) {
  if (limit_bytes <= 0) return;  // unknown: nothing to check against
  const double total = b.total();
  const double needed = total * kMinPoolBytesPerBlock;
  if (needed <= limit_bytes) return;
  std::vector<std::string> lower;
  if (b.replicas > 1) lower.push_back(replicas_flag);
  std::string sum;
  const RunBlocks::Part* largest = nullptr;
  for (const RunBlocks::Part& p : b.parts) {
    if (p.blocks == 0) continue;
    sum += (sum.empty() ? "" : " + ") + std::to_string(p.instances) + " x " + std::to_string(p.blocks) + " in the " +
           p.what + " (" + p.flag + ")";
    if (std::find(lower.begin(), lower.end(), p.flag) == lower.end()) lower.push_back(p.flag);
    if (!largest || static_cast<double>(p.instances) * static_cast<double>(p.blocks) >
                        static_cast<double>(largest->instances) * static_cast<double>(largest->blocks))
      largest = &p;
  }
  const std::string lead = b.replicas > 1 || !largest ? replicas_flag : largest->flag;
  std::string flags;
  for (size_t i = 0; i < lower.size(); ++i) flags += (i == 0 ? "" : i + 1 == lower.size() ? " or " : ", ") + lower[i];
  char blocks[32];
  std::snprintf(blocks, sizeof blocks, "%.0f", total);
  throw InputError(lead + ": the run's KV pools and tiers hold " + blocks + " blocks (" + std::to_string(b.replicas) +
                   " replica" + (b.replicas == 1 ? "" : "s") + ": " + sum + "), which need at least " +
                   gib_text(needed) + " GiB of this machine's memory to simulate, more than half of its " +
                   gib_text(2 * limit_bytes) + " GiB; lower " + flags);
}

}  // namespace prefixsim
