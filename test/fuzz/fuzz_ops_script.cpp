// libFuzzer target: the block-manager operation script (`prefixsim ops`).
#include "sim/kv/ops_runner.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return prefixsim::fuzz::script<prefixsim::OpsOptions>(data, size, prefixsim::run_ops);
}
