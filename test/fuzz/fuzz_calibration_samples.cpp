// libFuzzer target: the calibration samples file (parse_calibration_samples),
// then the fit and the profile built from whatever parsed. Only an
// InputError may come out; a profile that calibrate() builds must also read
// back (its fields are what the profile reader checks).
#include "sim/cost/calibration_samples.h"
#include "sim/cost/profile.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::guarded([&] {
    const CalibrationSamples s = parse_calibration_samples(text, "fuzz.csv");
    const Calibration c = calibrate(s, "fuzz.csv", "h100-sxm-80gb");
    try {
      (void)parse_profile(profile_text(c.profile), "calibrated.json");
    } catch (const InputError& e) {
      std::fprintf(stderr, "calibrate built a profile its reader refuses: %s\n", e.what());
      std::abort();
    }
  });
}
