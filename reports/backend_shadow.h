// The cost model held against measured steps (`replay --backend gpu
// --shadow`): every step the real backend ran, priced by the cost model
// beside the time the GPU took, summarised for report.json, summary.md and
// report.html's chart.
#pragma once

#include <cstddef>
#include <span>

#include "reports/run_report.h"

namespace prefixsim {

// The most steps report.html's modeled-against-measured chart draws: a long
// replay runs tens of thousands; past this, evenly spaced ones (by position
// in `steps`, the first always), so a page stays light and the same run
// draws the same points.
inline constexpr size_t kMaxShadowPoints = 2000;

// Steps with a measured time of 0 (nothing timed) are left out of every
// figure but the summed times. Errors are relative to the measured time:
// MAPE = mean |modeled - measured| / measured, bias = the signed mean, in %;
// |error| percentiles by nearest rank, as every report's; `worst` holds the
// 10 largest |errors|, ties in the order of `steps` (replica, then step as
// the backend ran them). The TTFT fields are left to the caller (they come
// from a second replay, with the cost model alone).
BackendReport::Shadow summarize_shadow(std::span<const BackendStepReport> steps);

}  // namespace prefixsim
