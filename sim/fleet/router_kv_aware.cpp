// kv-aware: NVIDIA Dynamo's KV router (lib/llm/src/kv_router/scheduler.rs,
// "KvScheduler"), the exact-cache kind that llm-d's precise prefix-cache
// scorer also is. It knows which blocks each replica really caches (Dynamo
// and llm-d rebuild that from the replicas' KV events; here the pools are
// read directly, so with no event lag) and scores every replica as
//     logit_i = overlap_weight * prefill_blocks_i + decode_blocks_i
//     prefill_blocks_i = (queued prompt tokens on i + prompt tokens not cached on i) / B
//     decode_blocks_i  = blocks active on i + blocks the request would add there
// lower is better. temperature 0 (Dynamo's default) takes the lowest logit,
// ties to the lowest id (Dynamo breaks ties at random); temperature T > 0
// normalises the logits by their maximum and samples replica i with
// probability proportional to exp(-logit_i / T), seeded (seed=, default 0).
// overlap_weight defaults to Dynamo's 1.0: 0 ignores the cache (pure load),
// larger values favour cache hits (TTFT) over decode balance (ITL).
//
// Differences: Dynamo counts a worker's pending prefill from its own
// predictions until the first token; here it is the prompt tokens of
// requests queued on the replica and not admitted yet. In a mixed fleet
// (--replica-groups) a block is a smaller share of a larger pool, so the
// decode term is weighed by the fleet's mean pool over replica i's
// (capacity_blocks): exactly 1, and Dynamo's logit, when the pools are alike.
#include <cmath>
#include <vector>

#include "sim/base/mix.h"
#include "sim/fleet/router.h"

namespace prefixsim {
namespace {

class KvAwareRouter final : public Router {
 public:
  KvAwareRouter(double weight, double temperature, uint64_t seed)
      : weight_(weight), temperature_(temperature), state_(mix64(seed ^ 0x6b76617761726cULL)) {}
  bool needs_prompt_blocks() const override { return true; }

  uint32_t route(const RouteQuery& q, const FleetView& fleet) override {
    const double bs = q.block_size;
    const int64_t prompt = q.request->prompt_len;
    const int64_t request_blocks = (prompt + q.block_size - 1) / q.block_size;
    logits_.resize(fleet.size());
    double mean_pool = 0;  // a sum of equal integers over their count: exactly each one
    for (uint32_t i = 0; i < fleet.size(); ++i) mean_pool += static_cast<double>(fleet.capacity_blocks(i));
    mean_pool /= fleet.size();
    double max_logit = 0;
    overlaps_.resize(fleet.size());
    fleet.cached_prefix_blocks_all(q.prompt_blocks, overlaps_);
    for (uint32_t i = 0; i < fleet.size(); ++i) {
      const auto overlap = static_cast<int64_t>(overlaps_[i]);
      const double prefill = static_cast<double>(fleet.queued_prompt_tokens(i) + prompt - overlap * q.block_size) / bs;
      const double decode = static_cast<double>(fleet.active_blocks(i) + request_blocks - overlap) *
                            (mean_pool / static_cast<double>(fleet.capacity_blocks(i)));
      logits_[i] = weight_ * prefill + decode;
      max_logit = std::max(max_logit, logits_[i]);
    }
    if (temperature_ <= 0) {
      uint32_t best = 0;
      for (uint32_t i = 1; i < fleet.size(); ++i)
        if (logits_[i] < logits_[best]) best = i;
      return best;
    }
    // Softmax over -logit / max / T, sampled with a seeded draw.
    double total = 0;
    for (double& l : logits_) {
      l = std::exp(-(max_logit > 0 ? l / max_logit : l) / temperature_);
      total += l;
    }
    state_ += 0x9e3779b97f4a7c15ULL;
    double u = static_cast<double>(mix64(state_) >> 11) * 0x1.0p-53 * total;
    for (uint32_t i = 0; i < fleet.size(); ++i) {
      if (u < logits_[i]) return i;
      u -= logits_[i];
    }
    return fleet.size() - 1;
  }

 private:
  double weight_, temperature_;
  uint64_t state_;
  std::vector<double> logits_;
  std::vector<size_t> overlaps_;  // leading cached blocks, by replica
};

}  // namespace

std::unique_ptr<Router> make_kv_aware_router(SpecParams& p, const RouterContext&) {
  const double weight = p.get_double_in("overlap_weight", 1.0, 0.0, 1e6);
  const double temperature = p.get_double_in("temperature", 0.0, 0.0, 1e6);
  return std::make_unique<KvAwareRouter>(weight, temperature, static_cast<uint64_t>(p.get_int("seed", 0)));
}

}  // namespace prefixsim
