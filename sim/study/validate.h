// `prefixsim validate RUN...`: each observed run replayed at its own settings
// under a step model, its predicted latencies against the measured ones.
//
// The document (schema "prefixsim.validate/1"):
//   {"schema", "cost_model": {terms, provenance},
//    "runs": [{"id", "path", "form", "model", "gpu", "tp", "replicas", "requests",
//              "latency_measured_at", "kv_blocks", "kv_source", "saturated", "saturation",
//              "notes", "metrics": {"ttft_mean": {"measured", "predicted", "error"}, ...},
//              "worst_abs_error"}],                      worst runs first
//    "summary": {"completed_runs", "saturated_runs",
//                "metrics": {"ttft_mean": {"runs", "median_abs_error", "max_abs_error",
//                                           "median_error"}, ...}}}
// Errors are signed fractions, (predicted - measured) / measured. Only the
// metrics a run measured appear in it; saturated runs (requests failed) are
// listed, but left out of the summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cost/step_model.h"
#include "sim/study/observed_replay.h"
#include "sim/study/observed_run.h"

namespace prefixsim {

// The metrics compared, in the documents' order.
const std::vector<std::string>& validate_metric_names();

// One run's comparison ({"metrics", "worst_abs_error", ...} as above).
nlohmann::ordered_json compare_run(const ObservedRun& run, const ReplayedRun& pred);

// The summary over the non-saturated runs of a "runs" list.
nlohmann::ordered_json summarize_runs(const nlohmann::ordered_json& runs);

// Every run replayed under `model` on `threads` threads (the first error rethrown).
std::vector<ReplayedRun> replay_all(const std::vector<ObservedRun>& runs, const StepModel& model, int threads);
// The document of runs and their predictions (worst runs first).
nlohmann::ordered_json validate_document(const std::vector<ObservedRun>& runs, const std::vector<ReplayedRun>& preds,
                                         const StepModel& model);

// Reads every run (InputError on the first bad one, before any replay),
// replays them on `threads` threads, and returns the document.
nlohmann::ordered_json validate_runs(const std::vector<std::string>& paths, const StepModel& model, int threads);

// validate.json, validate.md and validate.html into `dir` (together or not at all).
void write_validate_outputs(const std::string& dir, const nlohmann::ordered_json& doc, const std::string& title);

// `--max-error`: "X" (every mean: TTFT, E2E, TPOT) or "metric=X,..." (any
// summary metric) as fractions; the metrics whose median |error| exceeds
// their limit, as "metric median > limit" lines. InputError for a bad spec.
std::vector<std::string> error_gate_failures(const nlohmann::ordered_json& doc, const std::string& spec);

// The largest median |error| over the summary's metrics, and which metric.
std::pair<double, std::string> worst_median_error(const nlohmann::ordered_json& doc);

}  // namespace prefixsim
