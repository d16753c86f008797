// The cost model (DESIGN.md "Cost model"): what one engine step costs.
//
// A step's Batch is summarised by four numbers: new tokens N = sum n,
// sequences S, attention units A = sum n*(c + n/2) (causal attention of n new
// tokens over c cached ones touches n*c + n^2/2 query-key pairs) and context
// tokens K = sum (c + n) whose K and V are read. The step time is
//
//   t = overhead + per_seq*S + max(linear*N, weight_floor) + attn*A + kv_read*K + allreduce*N
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
#include "sim/cost/profile.h"

namespace prefixsim {

struct BatchSummary {
  int64_t new_tokens = 0;     // N
  int64_t seqs = 0;           // S
  double attn_units = 0;      // A = sum n*(c + n/2)
  double context_tokens = 0;  // K = sum (c + n)
  void add(int64_t n, int64_t c) {
    new_tokens += n;
    seqs += 1;
    const double nd = static_cast<double>(n), cd = static_cast<double>(c);
    attn_units += nd * (cd + nd / 2);
    context_tokens += cd + nd;
  }
};

BatchSummary summarize(const Batch& batch);

// Seconds for one step of this shape.
double step_seconds(const CostCoefficients& c, const BatchSummary& b);

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
};

// The roofline coefficients for one tensor-parallel shard (InputError
// naming --tp when TP does not fit the model).
CostCoefficients roofline_coefficients(const ModelSpec& m, const GpuSpec& g, int tp,
                                       const CostModelOptions& o = {});

// Adds TP's all-reduce cost (per-token bytes over the catalog's interconnect
// and a latency per all-reduce) to c; nothing at TP 1. The roofline uses it,
// and so does a profile fitted from one shard timed alone (sim/cost/calibration_samples.h).
void add_tensor_parallel_comm(CostCoefficients& c, const ModelSpec& m, const GpuSpec& g, int tp,
                              const CostModelOptions& o = {});

class ModeledExecutor final : public Executor {
 public:
  // With a profile, its coefficients replace the roofline; the profile must
  // be for this model, GPU and TP (InputError naming --profile otherwise).
  ModeledExecutor(const ModelSpec& model, const GpuSpec& gpu, int tp, std::optional<Profile> profile,
                  const CostModelOptions& options = {});

  // O(number of sequences), no allocation. An empty batch costs nothing.
  TimeNs step_time(const Batch& batch) override;
  // One request alone: n new tokens after c cached, in one step. Chunking it
  // or batching it with others never takes less time (every term is
  // monotone and n*(c + n/2) adds up exactly over chunks), so each TTFT is
  // at least this.
  TimeNs prefill_time(int64_t new_tokens, int64_t cached_tokens) const;

  const CostCoefficients& coefficients() const { return coef_; }
  bool calibrated() const { return profile_.has_value(); }
  // {"source": "roofline"|"profile", "model", "gpu", "tp", "coefficients",
  //  "options" (roofline) | "profile" (calibrated)}: the report's cost model.
  // ... plus "known_error": {"validated", "basis", and for a profile its
  // held-out step MAPE}: how far the times can be trusted.
  nlohmann::json to_json() const;

 private:
  nlohmann::json known_error_json() const;
  std::string model_name_, gpu_name_;
  int tp_;
  CostModelOptions options_;
  std::optional<Profile> profile_;
  CostCoefficients coef_;
};

// Seconds -> integer nanoseconds, rounded up so that the sum of a request's
// chunked steps is never below its one-step prefill time.
TimeNs seconds_to_ns(double s);

}  // namespace prefixsim
