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
// The fleet's executor wrap that puts `b` in front of every replica's cost
// model; once the fleet has its tiers, listen_to_tiers lets `b` mirror them.
ExecutorWrap backend_wrap(gpu::Backend& b);
void listen_to_tiers(gpu::Backend& b, Fleet& fleet);
// After the run: the check (when asked for) and report.json's `backend`;
// with --shadow, the scenario is replayed again with the cost model alone
// (no backend) and its TTFT goes beside the measured run's (`report`'s own).
// Returns the check's outcome, if it ran.
std::optional<gpu::BackendCheckResult> finish_backend(gpu::Backend& b, const Scenario& s, const ResolvedScenario& r,
                                                      int64_t num_blocks, const PolicyContext& ctx, RunReport& report);

}  // namespace prefixsim::cli
