// least-loaded: the replica with the fewest requests waiting or running,
// ties to the lowest id: the "shortest queue" of SGLang's router and the
// queue scorer of llm-d's inference scheduler, without any cache affinity.
// It reads the engines' reported load, so --router-scrape-ms applies to it
// (as to llm-d's queue scorer); SGLang's shortest queue counts its own
// dispatches, which is this router with a period of 0. In a mixed fleet
// (--replica-groups) load is weighed by each replica's KV pool: the fewest
// requests per block, so a replica with four times the blocks takes four
// times the requests before it counts as busier (least_loaded_replica).
#include "sim/fleet/router.h"

namespace prefixsim {
namespace {

class LeastLoadedRouter final : public Router {
 public:
  uint32_t route(const RouteQuery&, const FleetView& fleet) override { return least_loaded_replica(fleet); }
  bool reads_scraped_load() const override { return true; }
};

}  // namespace

std::unique_ptr<Router> make_least_loaded_router(SpecParams&, const RouterContext&) {
  return std::make_unique<LeastLoadedRouter>();
}

}  // namespace prefixsim
