// libFuzzer target: observed runs in their JSON forms (BLIS records,
// prefixsim.observed/1): a bad one is InputError, a good one holds requests
// in arrival order with positive lengths.
#include <cstdio>
#include <cstdlib>

#include "sim/study/observed_run.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::guarded([&] {
    const ObservedRun r = parse_observed_run(text, "/nonexistent/fuzz.json");
    for (size_t i = 0; i < r.requests.size(); ++i) {
      const Request& q = r.requests[i];
      if (q.prompt_len < 1 || q.output_len < 1 || (i > 0 && q.arrival < r.requests[i - 1].arrival)) {
        std::fprintf(stderr, "observed run %zu: bad request\n", i);
        std::abort();
      }
    }
  });
}
