// A crafted RunReport with known numbers, shared by the reports tests.
#pragma once

#include "reports/run_report.h"

namespace prefixsim::test {

// engine == true: an engine-mode run of 50 requests with a falling queue and
// rising hit rate; false: the same run in cache mode (no timed section).
RunReport sample_run_report(bool engine = true);
// The engine-mode run above as `replay --backend gpu --backend-check 20
// --shadow` would report it: 3,000 steps on two replicas, modeled within
// -15 % .. +15 % of measured, every 97th a 180 ms prefill.
RunReport sample_gpu_shadow_report();

}  // namespace prefixsim::test
