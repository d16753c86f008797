// libFuzzer target: the agentic Mooncake JSONL trace reader (open_trace, format "agentic-mooncake").
#include "test/fuzz/fuzz_util.h"
#include "traces/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string path = fuzz::write_temp(data, size, ".jsonl");
  return fuzz::guarded([&] {
    TraceOptions opts;
    opts.format = "agentic-mooncake";
    auto src = open_trace(path, opts);
    fuzz::drain(*src);
  });
}
