// libFuzzer target: the step model JSON (parse_step_model): a model that
// parses must round-trip.
#include <cstdio>
#include <cstdlib>

#include "sim/cost/step_model.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::guarded([&] {
    const StepModel m = parse_step_model(text, "fuzz.json");
    if (!(parse_step_model(step_model_text(m), "roundtrip.json").terms == m.terms)) {
      std::fprintf(stderr, "step model does not round-trip\n");
      std::abort();
    }
  });
}
