// random: each request to a replica drawn uniformly at random (SGLang
// router's "random"). Seeded (seed=, default 0) so that a run repeats byte
// for byte: the k-th draw is SplitMix64 of (seed, k), mapped to [0, N) by a
// 128-bit multiply (Lemire), which no library's distribution can change.
#include "sim/base/mix.h"
#include "sim/fleet/router.h"

namespace prefixsim {
namespace {

class RandomRouter final : public Router {
 public:
  explicit RandomRouter(uint64_t seed) : state_(mix64(seed ^ 0x726f75746572ULL)) {}
  uint32_t route(const RouteQuery&, const FleetView& fleet) override {
    state_ += 0x9e3779b97f4a7c15ULL;
    const unsigned __int128 x = static_cast<unsigned __int128>(mix64(state_)) * fleet.size();
    return static_cast<uint32_t>(x >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace

std::unique_ptr<Router> make_random_router(SpecParams& p, const RouterContext&) {
  return std::make_unique<RandomRouter>(static_cast<uint64_t>(p.get_int("seed", 0)));
}

}  // namespace prefixsim
