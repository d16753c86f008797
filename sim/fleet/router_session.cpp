// session: a consistent hash of the request's session id (its own id when
// it has none), so a conversation's turns meet their earlier turns' KV on
// one replica: vLLM production-stack's "session" routing (a hash ring keyed
// by a session header). The ring here is Lamping & Veach's jump consistent
// hash ("A Fast, Minimal Memory, Consistent Hash Algorithm", 2014) over
// XXH3 of the key: no table, and going from N to N+1 replicas moves only
// 1/(N+1) of the sessions, as a ring with many virtual nodes does.
#include <xxhash.h>

#include "sim/fleet/router.h"

namespace prefixsim {
namespace {

uint32_t jump_consistent_hash(uint64_t key, uint32_t buckets) {
  int64_t b = -1, j = 0;
  while (j < static_cast<int64_t>(buckets)) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<int64_t>(static_cast<double>(b + 1) *
                             (static_cast<double>(1LL << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<uint32_t>(b);
}

class SessionRouter final : public Router {
 public:
  uint32_t route(const RouteQuery& q, const FleetView& fleet) override {
    const std::string& key = q.request->session.empty() ? q.request->id : q.request->session;
    return jump_consistent_hash(XXH3_64bits(key.data(), key.size()), fleet.size());
  }
};

}  // namespace

std::unique_ptr<Router> make_session_router(SpecParams&, const RouterContext&) {
  return std::make_unique<SessionRouter>();
}

}  // namespace prefixsim
