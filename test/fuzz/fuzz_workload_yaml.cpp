// libFuzzer target: the workload YAML (make_workload on a file).
#include "test/fuzz/fuzz_util.h"
#include "workloads/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string path = fuzz::write_temp(data, size, ".yaml");
  return fuzz::guarded([&] {
    WorkloadOverrides o;
    o.requests = 64;  // bound the work per input; the YAML's own size is still parsed
    auto src = make_workload(path, o);
    fuzz::drain(*src, 64);
  });
}
