// libFuzzer target: the calibrated cost-model profile JSON (parse_profile).
#include "sim/cost/profile.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::guarded([&] {
    const Profile p = parse_profile(text, "fuzz.json");
    // A profile that parses must round-trip.
    if (!(parse_profile(profile_text(p), "roundtrip.json") == p)) {
      std::fprintf(stderr, "profile does not round-trip\n");
      std::abort();
    }
  });
}
