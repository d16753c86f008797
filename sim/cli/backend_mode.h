// `replay --backend cpu|gpu`: the flags of the real backend mode, the
// backend they ask for, and its report section (gpu/backend.h does the work).
#pragma once

#include <memory>

#include "gpu/backend.h"
#include "sim/base/atomic_file.h"
#include "reports/run_report.h"
#include "sim/cli/options.h"
#include "sim/cost/catalog.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/replay_run.h"
#include "sim/scenario/scenario_fleet.h"

namespace prefixsim::cli {

void add_backend_options(po::options_description& o);
// nullptr without --backend. Every refusal (exit 2) before the run: a flag
// without --backend, cache mode, --backend gpu in a build without CUDA, an
// unknown shape, a CPU pool too large for memory.
std::unique_ptr<gpu::Backend> make_backend(const po::variables_map& vm, const Scenario& s, const ModelSpec& model,
                                           int64_t pool_blocks);
// The backend in a replay (sim/scenario/replay_run.h's hooks): in front of
// every replica's cost model; once the fleet has its tiers, it mirrors them;
// after the run, the check (when asked for) and report.json's `backend`; with
// --shadow, the scenario is replayed again with the cost model alone (no
// backend) and its TTFT goes beside the measured run's.
class BackendHooks final : public ReplayBackendHooks {
 public:
  // With --shadow-samples its file is opened (under a temporary name) now.
  BackendHooks(gpu::Backend& b, const ReplaySetup& setup, const po::variables_map& vm);
  ~BackendHooks() override;
  ExecutorWrap wrap() override;
  void attach(Fleet& fleet) override;
  void finish(const PolicyContext& ctx, RunReport& report) override;
  // The check's outcome, if it ran.
  const std::optional<gpu::BackendCheckResult>& check() const { return check_; }
  // --shadow-samples' file, written after the run and renamed in with --out's
  // files (nullptr without the flag).
  AtomicFile* samples() { return samples_.get(); }

 private:
  gpu::Backend& b_;
  const ReplaySetup& setup_;
  std::optional<gpu::BackendCheckResult> check_;
  std::unique_ptr<AtomicFile> samples_;
};

}  // namespace prefixsim::cli
