// round-robin: request k goes to replica k mod N, blind to load and cache.
// The baseline of every router comparison (vLLM production-stack's
// "roundrobin", SGLang router's "round_robin", llm-d without scorers).
#include "sim/fleet/router.h"

namespace prefixsim {
namespace {

class RoundRobinRouter final : public Router {
 public:
  uint32_t route(const RouteQuery&, const FleetView& fleet) override {
    const uint32_t r = static_cast<uint32_t>(next_ % fleet.size());
    ++next_;
    return r;
  }

 private:
  uint64_t next_ = 0;
};

}  // namespace

std::unique_ptr<Router> make_round_robin_router(SpecParams&, const RouterContext&) {
  return std::make_unique<RoundRobinRouter>();
}

}  // namespace prefixsim
