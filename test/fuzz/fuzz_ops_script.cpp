// libFuzzer target: the block-manager operation script (`prefixsim ops`).
#include <sstream>

#include "sim/ops_runner.h"
#include "policies/registry.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The parser accepts pools up to 2^28 blocks (refusing more); a fuzz
  // iteration must not allocate gigabytes, so large pools are skipped here.
  if (fuzz::first_int_after(text, "\"num_blocks\"") > 100'000) return 0;
  std::istringstream in{std::string(text)};
  std::ostringstream out;
  return fuzz::guarded([&] {
    OpsOptions opts;
    opts.check_invariants = true;
    opts.make_policy = [] { return make_policy("lru"); };
    run_ops(in, "fuzz.jsonl", out, opts);
  });
}
