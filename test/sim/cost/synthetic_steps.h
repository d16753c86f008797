// Synthetic calibration data shared by the fit and samples tests: cost-model
// coefficients of the size a calibrated llama-3.1-8b on an H100 has, and the
// kinds of step calibration measures: prefill-only steps over
// (new, cached), decode-only steps over (batch, context), and a chunked
// prefill beside a decode batch.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/cost/cost_model.h"
#include "sim/cost/profile.h"

namespace prefixsim::test {

inline CostCoefficients known_coefficients() {
  CostCoefficients c;
  c.overhead_s = 1.5e-3;
  c.linear_s_per_token = 2.6e-5;
  c.weight_floor_s = 6.4e-3;  // breakpoint at 246.15... tokens: between grid points
  c.attn_s_per_unit = 1.4e-9;
  c.kv_read_s_per_token = 5.5e-8;
  c.per_seq_s = 8e-6;
  return c;
}

struct SyntheticStep {
  const char* kind;
  BatchSummary shape;
};

inline std::vector<SyntheticStep> synthetic_grid() {
  std::vector<SyntheticStep> out;
  for (int64_t n = 16; n <= 16384; n *= 2)
    for (int64_t c : {0, 512, 4096, 16384}) {
      BatchSummary b;
      b.add(n, c);
      out.push_back({"prefill", b});
    }
  for (int64_t batch = 1; batch <= 256; batch *= 2)
    for (int64_t ctx : {128, 1024, 4096, 16384}) {
      BatchSummary b;
      for (int64_t i = 0; i < batch; ++i) b.add(1, ctx);
      out.push_back({"decode", b});
    }
  for (int64_t chunk : {128, 512, 2048})
    for (int64_t batch : {8, 32, 128}) {
      BatchSummary b;
      b.add(chunk, 1024);
      for (int64_t i = 0; i < batch; ++i) b.add(1, 2048);
      out.push_back({"mixed", b});
    }
  return out;
}

}  // namespace prefixsim::test
