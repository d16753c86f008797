#include "sim/base/error.h"
#include "sim/fleet/router.h"

namespace prefixsim {

const std::vector<RouterInfo>& router_registry() {
  static const std::vector<RouterInfo> table = {
      {"round-robin", "replicas in turn, whatever their load or cache", make_round_robin_router},
      {"random", "a replica drawn uniformly (seeded: seed=0)", make_random_router},
      {"least-loaded", "the replica with the fewest waiting + running requests, ties to the lowest id",
       make_least_loaded_router},
      {"session", "a consistent hash of the request's session (else its id): a conversation stays on one replica",
       make_session_router},
      {"prefix",
       "SGLang's cache-aware router: an approximate prefix tree per replica of what was routed there; the longest "
       "match wins unless load is imbalanced",
       make_prefix_router},
      {"kv-aware",
       "Dynamo's KV router / llm-d's precise prefix scorer: the blocks each replica really caches, against its "
       "prefill queue and active blocks",
       make_kv_aware_router},
      {"llm-d",
       "llm-d's scheduler (EPP): weighted scorers (precise-prefix, prefix, kv-util, queue, running, load-aware, "
       "session) and a picker; default prefix=3,kv-util=2,queue=2",
       make_llm_d_router},
  };
  return table;
}

std::string router_names() {
  std::string out;
  for (const RouterInfo& r : router_registry()) out += (out.empty() ? "" : ", ") + r.name;
  return out;
}

std::unique_ptr<Router> make_router(std::string_view spec, const RouterContext& ctx) {
  ParsedSpec parsed = parse_spec(spec, "--router");
  for (const RouterInfo& r : router_registry()) {
    if (r.name != parsed.name) continue;
    SpecParams params("--router " + r.name, std::move(parsed.params));
    auto router = r.make(params, ctx);
    params.reject_unused();
    return router;
  }
  throw InputError("--router: unknown router '" + parsed.name + "' (known: " + router_names() + ")");
}

bool less_loaded(const FleetView& fleet, uint32_t a, uint32_t b) {
  // Cross-multiplied in 128 bits: exact, with no division and no overflow.
  return static_cast<unsigned __int128>(fleet.load(a)) * static_cast<uint64_t>(fleet.capacity_blocks(b)) <
         static_cast<unsigned __int128>(fleet.load(b)) * static_cast<uint64_t>(fleet.capacity_blocks(a));
}

uint32_t least_loaded_replica(const FleetView& fleet) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < fleet.size(); ++i)
    if (less_loaded(fleet, i, best)) best = i;
  return best;
}

}  // namespace prefixsim
