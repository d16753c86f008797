// `replay --backend cpu|gpu`: the flags of the real backend mode, the
// backend they ask for, and its report section (gpu/backend.h does the work).
#pragma once

#include <memory>

#include "gpu/backend.h"
#include "reports/run_report.h"
#include "sim/cli/options.h"
#include "sim/cost/catalog.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_run.h"

namespace prefixsim::cli {

void add_backend_options(po::options_description& o);
// nullptr without --backend. Every refusal (exit 2) before the run: a flag
// without --backend, cache mode, --backend gpu in a build without CUDA, an
// unknown shape, a CPU pool too large for memory.
std::unique_ptr<gpu::Backend> make_backend(const po::variables_map& vm, const Scenario& s, const ModelSpec& model,
                                           int64_t pool_blocks);
// report.json's `backend`, with the check's outcome when it ran.
BackendReport backend_report(const gpu::Backend& b, const std::optional<gpu::BackendCheckResult>& check);
// --shadow: the scenario replayed again with the cost model alone (no
// backend), whose TTFT the measured run is held against; into `shadow`,
// beside the measured run's own (`measured`, report.json's latency_ms.ttft).
void add_modeled_twin(const Scenario& s, const ResolvedScenario& r, int64_t num_blocks, const PolicyContext& ctx,
                      const LatencySummary& measured, BackendReport::Shadow& shadow);

}  // namespace prefixsim::cli
