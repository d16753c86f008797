#include "sim/scenario/offline_future.h"

#include "sim/base/error.h"

namespace prefixsim {

bool needs_future(const std::string& spec) { return canonical_policy_name(spec) == "belady"; }

void refuse_future_in_engine_mode(const std::string& flag) {
  throw InputError(flag + ": belady runs in cache mode only (its future is indexed by request, and the engine "
                          "looks requests up again after refusals and preemptions)");
}

std::shared_ptr<const BlockFuture> no_future() {
  return BlockFuture::build(0, 0, [](size_t) { return std::span<const uint32_t>{}; });
}

PreparedTrace prepass(RequestSource& src, int32_t block_size, bool need_future, PolicyContext& ctx,
                      IdealHitSource* ideal) {
  PreparedTrace trace = prepare_trace(src, block_size, ideal);
  if (need_future)
    ctx.future = BlockFuture::build(trace.num_keys(), trace.size(), [&](size_t i) { return trace.lookup_keys(i); });
  return trace;
}

}  // namespace prefixsim
