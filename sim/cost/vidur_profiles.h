// Vidur's published operator profiles as calibration input (`prefixsim gpu
// calibrate --from-vidur DIR`). Vidur (github.com/microsoft/vidur) ships,
// per GPU and model, data/profiling/compute/<gpu>/<org>/<model>/mlp.csv:
// one row per (num_tokens, num_tensor_parallel_workers), the per-layer
// times in milliseconds of every non-attention operator of one shard as
// columns `time_stats.<op>.{min,max,mean,median,std}`, and the model's shape
// (n_head, n_kv_head, n_embd, n_expanded_embd, vocab_size, use_gated_mlp).
// We read the format, not their code. Their attention.csv files are Git LFS
// objects in the repository (pointers in a plain clone); a pointer is named
// as such rather than parsed.
//
// The fit: each operator's median time against num_tokens with the cost
// model's linear part (overhead + max(linear * N, floor), sim/cost/fit.h),
// and the model's whole non-attention step (the embedding once, every other
// operator per layer, the residual add twice) the same way. Rows are sorted
// by num_tokens per TP degree and every K-th is held out BEFORE fitting;
// the held-out MAPE is what is reported. A profile built from it takes the
// linear terms from Vidur and the rest (attention, KV read, logits, the
// per-step host overhead, TP all-reduce, which one shard's timing does not
// hold) from the roofline, and says so in its provenance.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/cost/catalog.h"
#include "sim/cost/fit.h"
#include "sim/cost/profile.h"

namespace prefixsim {

struct VidurMlpTable {
  std::string file;
  // The model's shape, from the columns (the same on every row).
  int n_head = 0, n_kv_head = 0, n_embd = 0, n_expanded_embd = 0, vocab_size = 0;
  bool gated_mlp = false;
  std::vector<std::string> operators;  // in column order
  struct Row {
    int64_t num_tokens = 0;
    int tp = 1;
    std::vector<double> median_ms;  // per operator, in `operators` order
    long line = 0;
  };
  std::vector<Row> rows;
  std::vector<int> tp_degrees() const;  // ascending
};

// InputError "FILE:LINE: field 'x': ..." for anything but a well-formed table.
VidurMlpTable read_vidur_mlp(const std::string& path);
VidurMlpTable parse_vidur_mlp(const std::string& text, const std::string& file);

// Vidur's layout: data/profiling/compute/<gpu>/<org>/<model>/mlp.csv.
// Every mlp.csv under `dir` (or `dir` itself, a file), in path order;
// InputError naming --from-vidur when there is none.
std::vector<std::filesystem::path> vidur_mlp_files(const std::string& dir);
// The GPU folder of such a file: the component after "compute", else the one
// two above the file.
std::string vidur_gpu_of(const std::filesystem::path& file);
// "<org>/<model>" of such a file.
std::string vidur_model_dir_of(const std::filesystem::path& file);
// Such a file's path within Vidur's repository, whatever folder it was read
// from: "data/profiling/compute/<gpu>/<org>/<model>/mlp.csv" (a profile's
// stated source).
std::string vidur_repo_path_of(const std::filesystem::path& file);

// Vidur's GPU folder name (a100, a40, h100) -> our catalog name, or "".
std::string vidur_gpu_catalog_name(const std::string& vidur_gpu);
// The catalog model with this table's shape (hidden, heads, KV heads, FFN)
// and the closest vocabulary (Vidur pads it), or nullptr.
const ModelSpec* match_vidur_model(const VidurMlpTable& t);

struct VidurOperatorFit {
  std::string op;
  FitResult fit;
};
struct VidurFit {
  int tp = 1;
  std::vector<VidurOperatorFit> operators;
  FitResult step;        // the whole non-attention step (needs the model's layers)
  bool has_step = false;
};

// Fits every operator at TP `tp`; with `model`, the whole step too.
VidurFit fit_vidur(const VidurMlpTable& t, int tp, const ModelSpec* model, int held_out_every);

// The profile for `model` on GPU `gpu` at TP `fit.tp` (fit.has_step must
// hold); `source` names the repository, commit and files for the provenance.
Profile vidur_profile(const VidurFit& fit, const ModelSpec& model, const GpuSpec& gpu, const std::string& vidur_gpu,
                      const std::string& source, const std::string& date);

}  // namespace prefixsim
