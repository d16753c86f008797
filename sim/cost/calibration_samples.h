// Measured engine-step times for calibrating the cost model (schema
// "prefixsim.calibration-samples/1"): what `prefixsim-gpu-bench --calibrate
// FILE` writes on the GPU machine and `prefixsim gpu calibrate --samples FILE`
// fits into a profile (sim/cost/profile.h).
//
//   # prefixsim.calibration-samples/1
//   # gpu.name: NVIDIA H100 80GB HBM3
//   # gpu.sm_count: 132
//   # gpu.sm_clock_mhz: 1980
//   # gpu.mem_clock_mhz: 2619
//   # gpu.driver: 580.159.04
//   # gpu.cuda: 13.0
//   # model: llama-3.1-8b
//   # tp: 1
//   # block_size: 16
//   # date: 2026-11-22T18:30:00Z
//   # runner: free text saying what measured it        (optional)
//   # shards_timed: 1                                   (optional, default 1)
//   kind,seqs,new_tokens,attn_units,context_tokens,ms
//   prefill,1,512,131072,512,12.345
//
// One row per measured step; the columns are BatchSummary's (N, S, A, K of
// sim/cost/cost_model.h) and the step's time in milliseconds. Every `#` line after
// the first is a header line; an unknown key is an error, so a typo cannot
// silently drop a field. Blank lines are allowed only at the end.
//
// shards_timed says how many of the tp shards ran together while timing: 1
// (what prefixsim-gpu-bench does: one shard's share of the work on one GPU,
// so the times hold no all-reduce) or tp (all of them, all-reduces
// included). For tp > 1 timed as one shard, `calibrate` adds the roofline's
// all-reduce term (add_tensor_parallel_comm) and says so in the provenance.
#pragma once

#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/fit.h"
#include "sim/cost/profile.h"

namespace prefixsim {

inline constexpr const char* kCalibrationSamplesSchema = "prefixsim.calibration-samples/1";

enum class StepKind { prefill, decode, mixed };
inline constexpr StepKind kStepKinds[] = {StepKind::prefill, StepKind::decode, StepKind::mixed};
const char* to_string(StepKind k);

struct CalibrationSamples {
  ProfileGpu gpu;             // from the header; `catalog` stays empty (the header does not name it)
  std::string model;          // a model catalog name (checked)
  int tp = 1;
  int block_size = 0;
  std::string date;           // ISO 8601 (checked: the profile requires it)
  std::string runner;         // empty when the header has none
  int shards_timed = 1;       // 1 or tp
  long shards_timed_line = 0; // where the header set it (0: absent)
  std::vector<StepSample> samples;
  std::vector<StepKind> kinds;  // kinds[i] is the kind of samples[i]
};

// Writing the format: the header lines (through the column line) and one
// row per measured step, the same bytes whichever tool measured them
// (prefixsim-gpu-bench --calibrate, replay --backend gpu --shadow-samples).
struct SamplesHeader {
  std::string gpu_name;
  int sm_count = 0;
  std::string sm_clock_mhz = "0", mem_clock_mhz = "0";  // as nvidia-smi says them; "0" when not known
  std::string driver = "unknown";
  std::string cuda;  // the CUDA runtime's version
  std::string model;
  int tp = 1;
  int block_size = 0;
  std::string date;    // ISO 8601
  std::string runner;  // what measured the steps; "" leaves the line out
};
std::string samples_header_text(const SamplesHeader& h);
std::string sample_row_text(std::string_view kind, const BatchSummary& b, double ms);
// A step's kind by its sequences' new tokens: all 1 decode, none 1 prefill.
StepKind step_kind_of(const BatchSummary& b);
// Now, in UTC, as the header's date ("2026-11-22T18:30:00Z").
std::string samples_date_now();

// InputError "FILE:LINE: field 'x': ..." for anything but a well-formed file
// with at least one row; never skips a row.
CalibrationSamples read_calibration_samples(const std::string& path);
CalibrationSamples parse_calibration_samples(const std::string& text, const std::string& file);

// One shard of a TP > 1 model timed alone: the times hold no all-reduce.
bool allreduce_untimed(const CalibrationSamples& s);

// The samples of one kind, in file order.
std::vector<StepSample> samples_of_kind(const CalibrationSamples& s, StepKind k);

struct Calibration {
  FitResult fit;
  Profile profile;
};

// Fits the cost model to `s` and builds the profile for GPU catalog entry
// `gpu_catalog`; `samples_file` (its basename) goes into the provenance. A
// fit that cannot be made (too few samples) is an InputError naming the file.
Calibration calibrate(const CalibrationSamples& s, const std::string& samples_file, const std::string& gpu_catalog,
                      const FitOptions& options = {});

// A profile's error on measured steps (`prefixsim gpu validate`): how well
// it predicts steps it was not fitted to, e.g. the batches of a replayed
// trace timed on the GPU.
struct KindError {
  size_t steps = 0;
  double mape = 0;          // mean |predicted - measured| / measured
  double max_ape = 0;
  double bias = 0;          // mean (predicted - measured) / measured: > 0 over-predicts
  double measured_s = 0;    // sums over the steps: what a whole run's time would be off by
  double predicted_s = 0;
};
struct Validation {
  KindError all;
  KindError by_kind[std::size(kStepKinds)];
};
// The profile must be for the samples' model and TP (InputError naming
// --profile otherwise). Samples timed on one shard of a TP > 1 model are held
// against the profile without its all-reduce term, which they did not time.
Validation validate_profile(const Profile& p, const CalibrationSamples& s);

}  // namespace prefixsim
