// One replay as `prefixsim replay` runs it: a scenario in, a RunReport out
// (engine mode: a replica or a fleet on one clock; cache mode: a
// request-at-a-time replay through the same block manager).
//
// Two calls, so that every refusal comes before the (long) run:
// prepare_replay checks and resolves the scenario (model, GPU, pool size,
// tiers, whole-run memory, policy); run_replay runs it. The caller writes the
// report (reports/outputs.h) and owns what is outside a run: argv, output
// paths, Ctrl-C (run_replay throws Interrupted when g_interrupt_requested is
// set), the exit code.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "reports/run_report.h"
#include "sim/cost/kv_sizing.h"
#include "sim/cost/steps_file.h"
#include "sim/scenario/kv_tiers.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_fleet.h"

namespace prefixsim {

// A real backend in the loop (replay --backend; gpu/ is outside this room, so
// sim/cli implements these): it wraps each replica's cost model, mirrors the
// fleet's tiers, and after the run adds its section to the report.
class ReplayBackendHooks {
 public:
  virtual ~ReplayBackendHooks() = default;
  virtual ExecutorWrap wrap() = 0;
  virtual void attach(Fleet& fleet) = 0;  // once the fleet has its tiers
  virtual void finish(const PolicyContext& ctx, RunReport& report) = 0;
};

struct ReplaySetup {
  Scenario scenario;
  ResolvedScenario resolved;
  KvSizing kv;                  // disaggregated: the prefill pool's; mixed: the first group's
  std::vector<TierSpec> tiers;
  std::vector<FleetPool> pools;  // disaggregated: prefill, decode; mixed: the groups; empty otherwise
};

// Every refusal (InputError, exit 2) a scenario can get before its run.
ReplaySetup prepare_replay(const Scenario& s);

struct ReplayRunOptions {
  bool progress = false;        // a progress line on the terminal
  std::string steps_out;        // engine mode: the scheduled batches (prefixsim.steps/1), "" none
  uint64_t steps_every = 1;     // keep steps 1, 1+K, 1+2K, ...
  ReplayBackendHooks* backend = nullptr;
};

struct ReplayRun {
  RunReport report;             // tool_version left to the caller
  std::unique_ptr<StepsWriter> steps;  // --steps-out, committed with the report as one set
  uint64_t refused = 0;         // requests that can never fit the pool (not replayed)
  std::string first_refusal;
};

ReplayRun run_replay(const ReplaySetup& setup, const ReplayRunOptions& o);

}  // namespace prefixsim
