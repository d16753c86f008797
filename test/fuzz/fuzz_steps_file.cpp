// libFuzzer target: the engine steps file (parse_steps_file). Only an
// InputError may come out; what parses must hold what the reader promises
// (steps ascending, every sequence with new tokens).
#include <cstdio>
#include <cstdlib>

#include "sim/cost/steps_file.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::guarded([&] {
    const StepsFile f = parse_steps_file(text, "fuzz.csv");
    uint64_t last = 0;
    for (const StepShape& s : f.steps) {
      if (s.step <= last || s.seqs.empty()) {
        std::fprintf(stderr, "steps file: step %llu out of order or empty\n", static_cast<unsigned long long>(s.step));
        std::abort();
      }
      last = s.step;
      for (const auto& [n, c] : s.seqs)
        if (n < 1 || c < 0) std::abort();
    }
  });
}
