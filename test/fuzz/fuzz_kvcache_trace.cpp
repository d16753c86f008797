// libFuzzer target: the kv-cache-tester conversation JSON reader.
#include "test/fuzz/fuzz_util.h"
#include "traces/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string path = fuzz::write_temp(data, size, ".json");
  return fuzz::guarded([&] {
    TraceOptions opts;
    opts.format = "kvcache-tester";
    auto src = open_trace(path, opts);
    fuzz::drain(*src);
  });
}
