// Observed runs of real vLLM servers: the server's settings, the workload as
// it was sent, and what was measured. `prefixsim validate` replays one and
// compares; `prefixsim calibrate` fits the step model to many.
//
// Forms read (read_observed_run picks one by what the path holds):
//  - "blis": a BLIS (inference-sim) run record, as ../shared/validation/
//    blis-trainval keeps them: `vllm_args` (TP, max_num_seqs,
//    max_num_batched_tokens, total_kv_blocks_gpu), an inference-perf
//    `shared_prefix` workload with constant-rate `stages`, and `measured`
//    TTFT / E2E (client side) summaries. The workload is rebuilt as that
//    inference-perf build ran it (sim/study/inference_perf.h).
//  - "llmservingsim": LLMServingSim's vLLM capture, a folder (or its
//    meta.json) with meta.json (engine arguments), config.json (hardware),
//    requests.jsonl (engine timestamps per request) and workload.jsonl[.gz]
//    (the requests as sent, token ids included). Latencies are the engine's
//    (queued_ts to first/last token), with no client path.
//  - "observed": our own schema, prefixsim.observed/1, for anything else:
//      {"schema": "prefixsim.observed/1", "id": "...",
//       "settings": {"model", "gpu", "tp", "replicas", "router", "max_num_seqs",
//                    "max_num_batched_tokens", "kv_blocks", "gpu_mem_util", "block_size"},
//       "trace": "PATH (relative to this file; any trace form replay reads)",
//       "latency_measured_at": "client" | "engine",
//       "measured": {"ttft_ms": {"mean", "p50", "p90", "p99"}, "e2e_ms": {...},
//                    "tpot_ms": {...}, "throughput_rps"}}
//    or, for a run of vLLM's own benchmark (`vllm bench serve --save-result
//    --save-detailed`), its result file in place of "trace" and "measured":
//      {"schema": "prefixsim.observed/1", "settings": {...}, "vllm_bench": "result.json"}
//    whose input_lens / output_lens give the requests (fresh random tokens:
//    its random and ShareGPT datasets share no prefixes), request_rate,
//    burstiness and max_concurrency their arrivals (vllm bench keeps no
//    times: gamma gaps drawn again, or closed-loop slots), and ttfts / itls
//    (seconds) the measured TTFT, E2E = TTFT + sum(itls) and TPOT per
//    request; failed requests (errors) are counted, not replayed.
//    Or, for a run of kubernetes-sigs/inference-perf, its report folder:
//      {"schema": "prefixsim.observed/1", "settings": {...}, "inference_perf": "reports-20260101-120000"}
//    whose config.yaml gives the workload (shared_prefix data of fixed
//    lengths under constant load stages, rebuilt as shared_prefix_requests
//    generates it; load.base_seed its seed) and summary_lifecycle_metrics.json
//    what was measured (successes.latency.time_to_first_token and
//    request_latency in seconds, failures.count, successes.prompt_len.mean);
//    with server.ignore_eos the TPOT is derived from the means as below.
//
// TPOT is vLLM's: (last token - first token) / (output tokens - 1) per
// request. Tools' own TPOT fields do not all mean that (inference-perf's
// counts streamed chunks, BLIS's pipeline re-tokenized outputs), so where the
// output length is exact (ignore_eos), the measured TPOT is derived from the
// measured means: (E2E mean - TTFT mean) / (output tokens - 1).
//
// Every bad or missing field is InputError "FILE: field 'x.y': ..." (exit 2).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/request.h"
#include "sim/scenario/scenario.h"

namespace prefixsim {

// Milliseconds; NaN where not measured.
struct MeasuredStat {
  double mean = NAN, p50 = NAN, p90 = NAN, p99 = NAN;
};

struct ObservedRun {
  std::string path;            // as given
  std::string id;              // the run's own name
  std::string form;            // "blis", "llmservingsim", "observed"
  std::string model_id;        // the model as the run names it (Hugging Face id)
  Scenario scenario;           // the server: model, GPU, TP, replicas, scheduler, pool size
  std::vector<Request> requests;  // the workload as sent, arrival order
  bool client_side = true;     // measured at the client: HTTP, tokenization, streaming included
  MeasuredStat ttft, e2e, tpot;
  double throughput_rps = NAN;
  int64_t sent = 0, failed = 0;
  // Reported apart, never averaged in: requests failed, or the run says it was overloaded.
  bool saturated = false;
  std::string saturation;
  std::vector<std::string> notes;  // what rebuilding it assumed
};

ObservedRun read_observed_run(const std::string& path);
// The JSON forms (a BLIS record, prefixsim.observed/1) from their text;
// `file` names them in errors, and a trace or vllm_bench path in them is
// taken relative to it.
ObservedRun parse_observed_run(const std::string& text, const std::string& file);

// The catalog model a run's Hugging Face id names: the entry whose `source`
// starts with that repo id, else the one whose name equals the id's last part
// lower-cased without "-instruct[-NNNN]", "-hf" or "-chat"; InputError naming
// `field` when none does.
std::string catalog_model_for(const std::string& hf_id, const std::string& file, const std::string& field);
// The catalog GPU a run's hardware name names ("H100", "RTXPRO6000"): the one
// entry whose name, without separators, starts with it.
std::string catalog_gpu_for(const std::string& hardware, const std::string& file, const std::string& field);

// Mean and nearest-rank percentiles of `values` (ms), as validate reports them.
MeasuredStat measured_stat(std::vector<double> values);

}  // namespace prefixsim
