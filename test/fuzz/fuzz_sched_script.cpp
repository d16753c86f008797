// libFuzzer target: the scheduler step script (`prefixsim sched`).
#include "sim/engine/sched_runner.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return prefixsim::fuzz::script<prefixsim::SchedOptions>(data, size, prefixsim::run_sched);
}
