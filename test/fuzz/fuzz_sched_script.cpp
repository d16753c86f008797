// libFuzzer target: the scheduler step script (`prefixsim sched`).
#include <sstream>

#include "sim/sched_runner.h"
#include "policies/registry.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Pools up to 2^28 blocks are valid; skip large ones to bound memory.
  if (fuzz::first_int_after(text, "\"num_blocks\"") > 100'000) return 0;
  std::istringstream in{std::string(text)};
  std::ostringstream out;
  return fuzz::guarded([&] {
    SchedOptions opts;
    opts.check_invariants = true;
    opts.make_policy = [] { return make_policy("lru"); };
    run_sched(in, "fuzz.jsonl", out, opts);
  });
}
