// The cost model (DESIGN.md "Cost model"): what one engine step costs.
//
// A step's Batch is summarised by four numbers: new tokens N = sum n,
// sequences S, attention units A = sum n*(c + n/2) (causal attention of n new
// tokens over c cached ones touches n*c + n^2/2 query-key pairs) and context
// tokens K = sum (c + n) whose K and V are read. The step time is
//
//   t = overhead + device_overhead + per_seq*S + max(linear*N, weight_floor(N)) + attn*A + kv_read*K + allreduce*N
//
// weight_floor(N) is a constant for a dense model; a mixture of experts
// with routing figures reads the union of the N tokens' experts, which grows
// from k to all E experts per layer as N grows (weight_floor_seconds).
//
// The roofline defaults derive the coefficients from the model and GPU
// figures with the efficiencies of CostModelOptions; a calibrated profile
// (sim/cost/profile.h) replaces them. Compute and memory terms of attention are
// added rather than max'ed: prefill attention is compute-bound and decode
// attention memory-bound, so one of the two is always small, and a sum keeps
// the model linear in its coefficients, which is what lets `gpu calibrate`
// fit it by least squares.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/engine/batch.h"
#include "sim/cost/catalog.h"
#include "sim/cost/cuda_graphs.h"
#include "sim/cost/profile.h"

namespace prefixsim {

struct BatchSummary {
  int64_t new_tokens = 0;     // N
  int64_t seqs = 0;           // S
  double attn_units = 0;      // A = sum n*(c + n/2)
  double context_tokens = 0;  // K = sum (c + n)
  // The token count the linear layers and all-reduces run at: N padded to a
  // CUDA graph's capture size (sim/cost/cuda_graphs.h); 0 means N.
  int64_t graph_tokens = 0;
  int64_t decode_seqs = 0;    // sequences with one new token (all of them: a uniform decode)
  void add(int64_t n, int64_t c) {
    new_tokens += n;
    seqs += 1;
    const double nd = static_cast<double>(n), cd = static_cast<double>(c);
    attn_units += nd * (cd + nd / 2);
    context_tokens += cd + nd;
    decode_seqs += n == 1;
  }
  bool uniform_decode() const { return seqs > 0 && decode_seqs == seqs; }
};

BatchSummary summarize(const Batch& batch);

// Seconds for one step of this shape.
double step_seconds(const CostCoefficients& c, const BatchSummary& b);
// The weight-read floor of a step of `tokens` tokens: weight_floor_s, plus a
// MoE's experts beyond one token's (CostCoefficients::expert_read_s).
double weight_floor_seconds(const CostCoefficients& c, double tokens);

// The efficiencies the roofline defaults assume: fractions of the datasheet
// peak a well-tuned vLLM step reaches on Hopper-class GPUs.
struct CostModelOptions {
  // Large bf16 GEMMs in cuBLAS reach 60-75 % of dense peak on H100; vLLM's
  // prefill, with its smaller and fused shapes, sits near the low end.
  double mfu_efficiency = 0.6;
  // FlashAttention-2 reaches 35-50 % of peak on H100 (FA3 up to 75 %).
  double attn_efficiency = 0.45;
  // Streaming reads reach 80-90 % of peak HBM bandwidth (decode GEMV and
  // paged KV reads are streaming reads).
  double bw_efficiency = 0.8;
  // NCCL all-reduce bus bandwidth is about 75-80 % of the NVLink link rate.
  double link_efficiency = 0.75;
  // vLLM v1's CPU work per step (scheduling, input preparation, sampling
  // bookkeeping, kernel launches under CUDA graphs): about a millisecond.
  double overhead_s = 1e-3;
  // KV cache element bytes (--kv-cache-dtype fp8: 1); 0: the model's dtype.
  int kv_dtype_bytes = 0;
  // Expert parallelism over this many data-parallel engines (ExpertShard); 1: none.
  int expert_dp = 1;
};

// What one rank reads and moves for a model's weights, per step, at TP `tp`
// and with the routed experts split over `expert_dp` data-parallel engines
// (vLLM's --enable-expert-parallel with --data-parallel-size D: the experts
// of every MoE layer are split whole over the D x TP ranks, attention and
// the dense weights stay replicated per engine, and each MoE layer gathers
// the group's tokens to the ranks holding their experts and scatters the
// results back: the all-gather / reduce-scatter of vLLM's default
// all2all_backend, "allgather_reducescatter", vllm/distributed/
// device_communicators/all2all.py). A rank's experts then see the whole
// group's tokens, D per token of its own batch when the engines carry
// equal loads (the step is priced per engine; vLLM steps the engines in
// lockstep, padding an idle one with a dummy batch, which is not modelled).
// At D = 1 the experts are split over the TP shards like every other weight.
struct ExpertShard {
  double weight_bytes = 0;   // a step of one token: dense weights / TP and one token's experts on this rank
  double expert_bytes = 0;   // all routed experts this rank holds (0: a dense model)
  double expert_miss = 0;    // 1 - k/E: the chance a token skips a given expert
  double token_scale = 1;    // tokens this rank's experts serve per token of its engine's batch (D)
  // Per token of the engine's batch: the all-gather and reduce-scatter bytes
  // each rank moves over its link, 2 x layers x (D - 1) x hidden activations
  // (a 1/TP slice of them at TP > 1); and per step the collectives' ring
  // steps, 2 x layers x (D - 1), each paying the link's latency.
  double dispatch_bytes_per_token = 0;
  double dispatch_messages = 0;
};
ExpertShard expert_shard(const ModelSpec& m, int tp, int expert_dp);

// The roofline coefficients for one tensor-parallel shard (InputError
// naming --tp when TP does not fit the model).
CostCoefficients roofline_coefficients(const ModelSpec& m, const GpuSpec& g, int tp,
                                       const CostModelOptions& o = {});

// Adds TP's all-reduce cost (per-token bytes over the catalog's interconnect
// and a latency per all-reduce) to c; nothing at TP 1. The roofline uses it,
// and so does a profile fitted from one shard timed alone (sim/cost/calibration_samples.h).
void add_tensor_parallel_comm(CostCoefficients& c, const ModelSpec& m, const GpuSpec& g, int tp,
                              const CostModelOptions& o = {});

// What a vLLM server adds to the cost model's forward pass, all off by
// default (the library's cost model is the bare step). The CLI turns them
// on (sim/scenario/scenario_fleet.cpp vllm_timing; flags in sim/scenario/scenario.cpp)
// with these defaults and sources:
//  - graphs: vLLM's default capture sizes and FULL_AND_PIECEWISE mode
//    (sim/cost/cuda_graphs.h cites the vLLM code).
//  - host_per_seq_s = 10 us. Vidur's measured CPU overheads of vLLM
//    (github.com/microsoft/vidur data/profiling/a100/cpu_overheads.csv,
//    Llama-2-7B, TP 1) grow by 12.3 us per request in schedule() alone
//    (0.165 ms at batch 8, 0.854 ms at 64); that was vLLM v0, whose input
//    preparation (+17 us/request) and output processing v1 replaced with a
//    persistent batch and a separate detokenizing process, so we keep about
//    the scheduler's share. The per-step part is the roofline's overhead_s
//    (1 ms), which is host time too.
//  - request_s = 0.5 ms: vLLM v1 splits the API server (HTTP, tokenization,
//    detokenization, streaming) from the engine core, which talk over ZMQ
//    with msgpack (the v1 design, vLLM blog 2025-01-27); an estimate of a
//    request's HTTP handling and the two IPC hops of its first token.
//  - request_per_prompt_token_s = 1 us: a fast (Rust) Hugging Face
//    tokenizer on one core handles on the order of a million tokens a
//    second (its README: "less than 20 seconds to tokenize a GB of text" on
//    a many-core server).
// All three are estimates, not measurements of ours; a planner with a
// server to measure should set the flags to what it sees.
struct VllmTiming {
  // Decode batches (and, by mode, mixed ones) padded to capture sizes.
  CudaGraphs graphs;
  // Engine-core CPU per scheduled sequence and step, on top of the
  // per-step overhead_s (which is host time too): Scheduler.schedule()'s
  // loop, _prepare_inputs, update_from_output.
  double host_per_seq_s = 0;
  // Per request, outside the engine core: the API server's request parsing,
  // the ZMQ round trip to the engine core and detokenizing/streaming the
  // first token (added to TTFT and end-to-end latency, not TPOT) ...
  double request_s = 0;
  // ... plus tokenizing the prompt, per prompt token.
  double request_per_prompt_token_s = 0;
  bool any() const {
    return graphs.enabled() || host_per_seq_s > 0 || request_s > 0 || request_per_prompt_token_s > 0;
  }
};

class ModeledExecutor final : public Executor {
 public:
  // With a profile, its coefficients replace the roofline; the profile must
  // be for this model, GPU and TP (InputError naming --profile otherwise).
  ModeledExecutor(const ModelSpec& model, const GpuSpec& gpu, int tp, std::optional<Profile> profile,
                  const CostModelOptions& options = {}, const VllmTiming& timing = {});

  // Given coefficients (the fitted step model, sim/cost/step_model.h), which
  // `description` names in the report ({"schema", "terms", "provenance",
  // "known_error"}).
  ModeledExecutor(const ModelSpec& model, const GpuSpec& gpu, int tp, const CostCoefficients& coefficients,
                  nlohmann::json description, const VllmTiming& timing = {});

  // O(number of sequences), no allocation. An empty batch costs nothing.
  TimeNs step_time(const Batch& batch) override;
  // Host: overhead_s + host_per_seq_s * S; device: the rest.
  StepCost step_cost(const Batch& batch) override;
  TimeNs request_latency(int64_t prompt_tokens) const override;
  // The batch's summary with the CUDA-graph padding applied.
  BatchSummary padded_summary(const Batch& batch) const;
  // One request alone: n new tokens after c cached, in one step. Chunking it
  // or batching it with others never takes less time (every term is
  // monotone and n*(c + n/2) adds up exactly over chunks), so each TTFT is
  // at least this.
  TimeNs prefill_time(int64_t new_tokens, int64_t cached_tokens) const;

  const CostCoefficients& coefficients() const { return coef_; }
  bool calibrated() const { return profile_.has_value(); }
  // {"source": "step_model"|"roofline"|"profile", "model", "gpu", "tp", "coefficients",
  //  "step_model" | "options" (roofline) | "profile" (calibrated)}: the report's cost model.
  // ... plus "known_error": {"validated", "basis", and for a profile its
  // held-out step MAPE}: how far the times can be trusted.
  nlohmann::json to_json() const;

 private:
  nlohmann::json known_error_json() const;
  std::string model_name_, gpu_name_;
  int tp_;
  CostModelOptions options_;
  VllmTiming timing_;
  std::optional<Profile> profile_;
  nlohmann::json step_model_;  // the step model's description, or null
  CostCoefficients coef_;
};

// Seconds -> integer nanoseconds, rounded up so that the sum of a request's
// chunked steps is never below its one-step prefill time.
TimeNs seconds_to_ns(double s);

}  // namespace prefixsim
