// A crafted RunReport with known numbers, shared by the reports tests.
#pragma once

#include "reports/run_report.h"

namespace prefixsim::test {

// engine == true: an engine-mode run of 50 requests with a falling queue and
// rising hit rate; false: the same run in cache mode (no timed section).
RunReport sample_run_report(bool engine = true);

}  // namespace prefixsim::test
