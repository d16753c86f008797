// The offline policy's pre-pass, one for `replay --mode cache` and
// `compare`: belady must know, before the first eviction, which request
// will next look up every block, so the whole trace is read, hashed and
// interned first (PreparedTrace, 4 bytes a block) and its future built from
// the prepared lookups. The engine cannot use it: it looks requests up
// again after refusals and preemptions, while the future is indexed by the
// request's position in the trace.
#pragma once

#include <memory>
#include <string>

#include "policies/block_future.h"
#include "policies/registry.h"
#include "sim/engine/cache_replay.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

// Whether the policy spec names one that needs the future (belady).
bool needs_future(const std::string& spec);
// The usage error (exit 2) for such a policy in engine mode; `flag` names
// the option that asked for it ("--policy", "--policies").
[[noreturn]] void refuse_future_in_engine_mode(const std::string& flag);
// An empty future: lets make_policy check a spec before the trace is read.
std::shared_ptr<const BlockFuture> no_future();
// Reads `src` to its end into a PreparedTrace; with `need_future`, also sets
// ctx.future to the trace's future; with `ideal` (deferred), counts the
// ideal hit rate on the trace's interning (prepare_trace).
PreparedTrace prepass(RequestSource& src, int32_t block_size, bool need_future, PolicyContext& ctx,
                      IdealHitSource* ideal = nullptr);

}  // namespace prefixsim
