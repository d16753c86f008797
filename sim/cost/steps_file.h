// Engine steps as the scheduler batched them (schema "prefixsim.steps/1"):
// what `prefixsim replay --steps-out FILE` writes, so that the very batches a
// simulated trace produced can be timed on a real GPU (`prefixsim-gpu-bench
// --time-steps FILE`) and the cost model checked against them (`prefixsim
// gpu validate`), not only against the designed calibration grid.
//
//   # prefixsim.steps/1
//   # model: llama-3.1-8b
//   # tp: 1
//   # block_size: 16
//   # source: free text (the replay's trace and settings)
//   step,new_tokens,cached_tokens
//   1,512,0
//   1,1,1024
//   2,1,1025
//
// One row per scheduled sequence: n new tokens over c cached ones (vLLM's
// num_computed_tokens); rows of one step are consecutive and steps ascend
// (1-based engine step numbers, so sampled files have gaps).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/atomic_file.h"
#include "sim/engine/batch.h"

namespace prefixsim {

inline constexpr const char* kStepsSchema = "prefixsim.steps/1";

struct StepShape {
  uint64_t step = 0;
  std::vector<std::pair<int64_t, int64_t>> seqs;  // (new tokens n, cached tokens c)
};

struct StepsFile {
  std::string model;
  int tp = 1;
  int block_size = 0;
  std::string source;
  std::vector<StepShape> steps;
};

// Streams steps into FILE (atomically: nothing at FILE until finish()).
class StepsWriter {
 public:
  StepsWriter(const std::string& path, const std::string& model, int tp, int block_size, const std::string& source);
  void add(uint64_t step, const Batch& batch);
  void finish();  // renames into place; InputError on a write error
  // The file, for committing it with other outputs as one set (OutputSet).
  AtomicFile& file() { return file_; }
  uint64_t steps_written() const { return steps_; }

 private:
  AtomicFile file_;
  std::string rows_;  // one step's rows, reused from step to step
  uint64_t steps_ = 0;
};

// InputError "FILE:LINE: field 'x': ..." for anything but a well-formed file
// with at least one step.
StepsFile parse_steps_file(const std::string& text, const std::string& file);
StepsFile read_steps_file(const std::string& path);

}  // namespace prefixsim
