// libFuzzer target: the replay scenario YAML (sim/scenario/scenario.cpp).
#include "sim/scenario/scenario.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prefixsim;
  const std::string path = fuzz::write_temp(data, size, ".yaml");
  return fuzz::guarded([&] {
    Scenario s;
    load_scenario_yaml(path, s);
    validate(s);
    (void)to_json(s).dump();
  });
}
