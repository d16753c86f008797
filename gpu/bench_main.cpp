// prefixsim-gpu-bench: the measurement half of `prefixsim gpu bench`
// (the device side of calibration). Paged-attention TFLOP/s and GB/s over a grid of
// (new tokens n, cached tokens c, batch; decode-like rows with n = 1 or 32
// over long contexts show K2's split-KV, beside attn_k2_1pass rows timing
// the same steps single-pass; then uneven decode steps, one long context
// among short ones, K2 automatic vs single pass), then full-prefill time of the
// random-weight model per (n, c). Medians of --reps runs, L2 flushed before
// each. Rows for both attention kernels (attn_k1: CUDA cores, attn_k2:
// tensor cores), then the model rows with the default kernel (K2). Run on an
// H100 on 2026-11-22 (gpu/bench/RESULTS.md), after test_gpu_kernels passed
// there; run that test first on any new build: numbers from an unverified
// kernel mean nothing. --calibrate FILE times the calibration grid
// (calibration_grid.h) for `prefixsim gpu calibrate --samples FILE` (run on
// an H100 on 2026-11-22).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "gpu/calibration_grid.h"
#include "gpu/cuda_api.h"
#include "sim/base/error.h"
#include "sim/cost/calibration_samples.h"
#include "sim/cost/steps_file.h"

using namespace prefixsim;
using namespace prefixsim::gpu;

namespace {
PagedBatch make_step(int64_t n, int64_t c, int64_t batch, int32_t bs, std::vector<std::vector<BlockId>>& tables,
                     int64_t& blocks) {
  const int64_t per = (n + c + bs - 1) / bs;
  blocks = per * batch;
  tables.assign(static_cast<size_t>(batch), {});
  Batch b;
  for (int64_t i = 0; i < batch; ++i) {
    // Interleaved ids: consecutive pages of a request are not adjacent, as in a long-running pool.
    for (int64_t j = 0; j < per; ++j) tables[static_cast<size_t>(i)].push_back(static_cast<BlockId>(j * batch + i));
  }
  for (int64_t i = 0; i < batch; ++i) b.seqs.push_back({n, c, tables[static_cast<size_t>(i)]});
  return export_paged_batch(b, bs, blocks);
}
// A decode step of `batch` sequences, one (the middle one) after c_long
// cached tokens and the others after c: the uneven contexts of real decode
// steps, where one long sequence is most of the attention's work.
PagedBatch make_uneven_step(int64_t c_long, int64_t c, int64_t batch, int32_t bs,
                            std::vector<std::vector<BlockId>>& tables, int64_t& blocks) {
  tables.assign(static_cast<size_t>(batch), {});
  blocks = 0;
  Batch b;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t cached = i == batch / 2 ? c_long : c;
    for (int64_t j = 0; j < (cached + 1 + bs - 1) / bs; ++j) tables[static_cast<size_t>(i)].push_back(static_cast<BlockId>(blocks++));
  }
  for (int64_t i = 0; i < batch; ++i) b.seqs.push_back({1, i == batch / 2 ? c_long : c, tables[static_cast<size_t>(i)]});
  return export_paged_batch(b, bs, blocks);
}
// Header facts the driver API does not give (the caller reads them off
// nvidia-smi and passes them in).
struct HostFacts {
  std::string driver = "unknown", sm_clock_mhz = "0", mem_clock_mhz = "0";
};

// Times every step of the calibration grid with the random-weight model and
// writes them in the prefixsim.calibration-samples/1 format that
// `prefixsim gpu calibrate --samples` fits. Written to a temporary name,
// then renamed: no half-written file.
constexpr int64_t kPoolTokens = 320000;  // llama-3.1-8b: 40 GB of KV beside 16 GB of weights

int calibrate(const ModelShape& s, int32_t bs, int reps, const cuda::DeviceInfo& dev, const HostFacts& host,
              const std::string& path, const std::vector<CalibrationStep>& grid, const std::string& what) {
  const int64_t num_blocks = kPoolTokens / bs;
  cuda::Model m(s, num_blocks, bs, 42);
  SamplesHeader h;
  h.gpu_name = dev.name;
  h.sm_count = dev.sm_count;
  h.sm_clock_mhz = host.sm_clock_mhz;
  h.mem_clock_mhz = host.mem_clock_mhz;
  h.driver = host.driver;
  h.cuda = dev.cuda;
  if (!shape_catalog_model(s, h.model, h.tp)) h.model = s.name;  // refused by `gpu calibrate`, as before
  h.block_size = bs;
  h.date = samples_date_now();
  h.runner = std::string("prefixsim-gpu-bench --calibrate: random-weight ") + s.name + " forward (cuBLASLt GEMMs, " +
             cuda::attn_kernel_name(cuda::kDefaultAttnKernel) + " paged attention, no CUDA graphs, no lm_head or " +
             "sampling), device time, median of " + std::to_string(reps) + ", L2 flushed; " + what;
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp);
  out << samples_header_text(h);
  for (const CalibrationStep& step : grid) {
    std::vector<std::vector<BlockId>> tables;
    const PagedBatch pb = calibration_batch(step, bs, num_blocks, tables);
    const double ms = m.time_forward_ms(pb, reps);
    const BatchSummary b = step.summary();
    const std::string row = sample_row_text(step.kind, b, ms);
    out << row;
    std::fputs(row.c_str(), stdout);
  }
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "prefixsim-gpu-bench: cannot write %s\n", path.c_str());
    std::remove(tmp.c_str());
    return 2;
  }
  return 0;
}
// The kind a calibration sample gets from its shape: the fit's per-kind
// errors then read the same for grid and replayed steps.
std::string kind_of(const std::vector<std::pair<int64_t, int64_t>>& seqs) {
  bool decode = false, prefill = false;
  for (const auto& [n, c] : seqs) (n == 1 ? decode : prefill) = true;
  return decode && prefill ? "mixed" : decode ? "decode" : "prefill";
}

// Up to max_steps of the file's steps, evenly spaced (deterministic), that
// fit the runner's pool; how many did not fit is said, not hidden.
std::vector<CalibrationStep> replayed_steps(const StepsFile& f, size_t max_steps, std::string& what) {
  std::vector<CalibrationStep> fit;
  size_t too_big = 0;
  for (const StepShape& st : f.steps) {
    CalibrationStep c{kind_of(st.seqs), st.seqs};
    if (c.pool_tokens() > kPoolTokens - 2 * f.block_size * static_cast<int64_t>(st.seqs.size()))
      ++too_big;
    else
      fit.push_back(std::move(c));
  }
  std::vector<CalibrationStep> out;
  const size_t take = std::min(max_steps, fit.size());
  for (size_t i = 0; i < take; ++i) out.push_back(fit[i * fit.size() / take]);
  what = "engine steps from a replay (" + f.source + "): " + std::to_string(out.size()) + " of " +
         std::to_string(f.steps.size()) + " timed, " + std::to_string(too_big) + " left out for needing more than " +
         std::to_string(kPoolTokens) + " tokens of KV";
  std::fprintf(stderr, "prefixsim-gpu-bench: %s\n", what.c_str());
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  std::string model = "llama-3.1-8b";
  int32_t bs = 16;
  int reps = 10;
  bool with_model = true;
  std::string calibrate_path, steps_path;
  size_t max_steps = 300;
  HostFacts host;
  std::vector<cuda::AttnKernel> kernels{cuda::AttnKernel::k1, cuda::AttnKernel::k2};
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--no-model")) with_model = false;
    else if (has_value && !std::strcmp(argv[i], "--attn") && !std::strcmp(argv[i + 1], "k1")) {
      kernels = {cuda::AttnKernel::k1};
      ++i;
    } else if (has_value && !std::strcmp(argv[i], "--attn") && !std::strcmp(argv[i + 1], "k2")) {
      kernels = {cuda::AttnKernel::k2};
      ++i;
    }
    else if (has_value && !std::strcmp(argv[i], "--calibrate")) calibrate_path = argv[++i];
    else if (has_value && !std::strcmp(argv[i], "--time-steps")) steps_path = argv[++i];
    else if (has_value && !std::strcmp(argv[i], "--max-steps")) max_steps = static_cast<size_t>(std::atol(argv[++i]));
    else if (has_value && !std::strcmp(argv[i], "--gpu-driver")) host.driver = argv[++i];
    else if (has_value && !std::strcmp(argv[i], "--sm-clock-mhz")) host.sm_clock_mhz = argv[++i];
    else if (has_value && !std::strcmp(argv[i], "--mem-clock-mhz")) host.mem_clock_mhz = argv[++i];
    else if (has_value && !std::strcmp(argv[i], "--model")) model = argv[++i];
    else if (has_value && !std::strcmp(argv[i], "--block-size")) bs = std::atoi(argv[++i]);
    else if (has_value && !std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--model NAME] [--block-size 16|32|64] [--reps N] [--attn k1|k2] [--no-model]\n"
                           "       %s --calibrate SAMPLES.csv [--time-steps STEPS.csv [--max-steps N]] [--model NAME] [--block-size B] [--reps N]\n"
                           "          [--gpu-driver V] [--sm-clock-mhz F] [--mem-clock-mhz F]\n", argv[0], argv[0]);
      return 2;
    }
  }
  const ModelShape* s = find_model_shape(model);
  if (!s || (bs != 16 && bs != 32 && bs != 64) || reps < 1) {
    std::fprintf(stderr, "bad --model, --block-size or --reps\n");
    return 2;
  }
  const cuda::DeviceInfo dev = cuda::query_devices();
  if (dev.count == 0) {
    std::fprintf(stderr, "no CUDA device: %s\n", dev.error.c_str());
    return 2;
  }
  try {
    if (!calibrate_path.empty() && steps_path.empty())
      return calibrate(*s, bs, reps, dev, host, calibrate_path, calibration_grid(kPoolTokens), "the calibration grid");
    if (!calibrate_path.empty()) {
      // The steps say which model and block size they were scheduled for.
      const StepsFile f = read_steps_file(steps_path);
      const std::string shape = f.tp == 1 ? f.model : f.model + "-tp" + std::to_string(f.tp);
      const ModelShape* fs = find_model_shape(shape);
      if (!fs) throw InputError(steps_path + ": no GPU model shape for " + f.model + " at TP " + std::to_string(f.tp));
      if (f.block_size != 16 && f.block_size != 32 && f.block_size != 64)
        throw InputError(steps_path + ": block size " + std::to_string(f.block_size) + " (the kernels take 16, 32, 64)");
      std::string what;
      const std::vector<CalibrationStep> steps = replayed_steps(f, max_steps, what);
      return calibrate(*fs, f.block_size, reps, dev, host, calibrate_path, steps, what);
    }
    if (!steps_path.empty()) throw InputError("--time-steps needs --calibrate OUT.csv (where the times go)");
    std::printf("# device %s (sm_%d%d), model %s, block size %d, median of %d\n", dev.name.c_str(), dev.cc_major,
                dev.cc_minor, model.c_str(), bs, reps);
    // kv_splits: K2's split-KV chunks per tile (1 = single pass). Where K2
    // splits, an attn_k2_1pass row times the same step forced single-pass.
    std::printf("kernel,n,c,batch,ms,tflops,gbps,kv_splits\n");
    const ref::AttnDims d{s->heads, s->kv_heads, s->head_dim};
    // Prefill rows, then decode-like rows (one or few new tokens over long
    // contexts: the grid without split-KV has a handful of CTAs).
    const int64_t grid[][3] = {{512, 0, 1},   {2048, 0, 1},   {4096, 0, 1},    {4096, 4096, 1}, {1024, 8192, 1},
                               {512, 4096, 8}, {128, 8192, 16}, {2048, 2048, 4}, {1, 8192, 1},    {1, 2048, 8},
                               {1, 8192, 8},   {1, 4096, 32},   {32, 16384, 1},  {32, 2048, 1}};
    auto print_row = [](const char* name, const int64_t (&g)[3], const cuda::AttnTiming& t) {
      std::printf("%s,%lld,%lld,%lld,%.4f,%.2f,%.1f,%d\n", name, static_cast<long long>(g[0]),
                  static_cast<long long>(g[1]), static_cast<long long>(g[2]), t.ms, t.tflops, t.gbps, t.kv_splits);
    };
    for (const cuda::AttnKernel k : kernels) {
      for (const auto& g : grid) {
        std::vector<std::vector<BlockId>> tables;
        int64_t blocks = 0;
        const PagedBatch pb = make_step(g[0], g[1], g[2], bs, tables, blocks);
        const cuda::AttnTiming t = cuda::bench_attention(pb, d, blocks, reps, k);
        print_row(cuda::attn_kernel_name(k), g, t);
        if (t.kv_splits > 1) print_row("attn_k2_1pass", g, cuda::bench_attention(pb, d, blocks, reps, k, 1));
      }
    }
    // Uneven decode steps, K2 only: its automatic choice (kv_chunk_tiles key
    // tiles per chunk, kv_splits chunks of the long context) beside the
    // single pass (which is also what the uniform split of 2026-11-22 chose
    // for the first row).
    if (std::find(kernels.begin(), kernels.end(), cuda::AttnKernel::k2) != kernels.end()) {
      std::printf("# uneven decode rows: batch decodes, one after c_long cached tokens, the others after c\n");
      std::printf("kernel,c_long,c,batch,ms,tflops,gbps,kv_splits,kv_chunk_tiles\n");
      const int64_t uneven[][3] = {{60000, 9600, 28}, {60000, 9600, 100}, {32768, 2048, 16}, {131072, 4096, 64}};
      for (const auto& g : uneven) {
        std::vector<std::vector<BlockId>> tables;
        int64_t blocks = 0;
        const PagedBatch pb = make_uneven_step(g[0], g[1], g[2], bs, tables, blocks);
        for (const int forced : {0, 1}) {
          const cuda::AttnTiming t = cuda::bench_attention(pb, d, blocks, reps, cuda::AttnKernel::k2, forced);
          std::printf("%s,%lld,%lld,%lld,%.4f,%.2f,%.1f,%d,%d\n", forced ? "attn_k2_1pass" : "attn_k2",
                      static_cast<long long>(g[0]), static_cast<long long>(g[1]), static_cast<long long>(g[2]), t.ms,
                      t.tflops, t.gbps, t.kv_splits, t.kv_chunk_tiles);
        }
      }
    }
    if (!with_model) return 0;
    std::printf("# model rows: full prefill, attention by %s\n", cuda::attn_kernel_name(cuda::kDefaultAttnKernel));
    std::printf("model,n,c,batch,ms\n");
    const int64_t mgrid[][2] = {{512, 0}, {2048, 0}, {1024, 1024}, {4096, 0}, {2048, 2048}, {512, 3584}};
    const int64_t max_blocks = (8192 + bs - 1) / bs;
    cuda::Model m(*s, max_blocks, bs, 42);
    for (const auto& g : mgrid) {
      std::vector<std::vector<BlockId>> tables;
      int64_t blocks = 0;
      const PagedBatch pb = make_step(g[0], g[1], 1, bs, tables, blocks);
      std::printf("model,%lld,%lld,1,%.3f\n", static_cast<long long>(g[0]), static_cast<long long>(g[1]),
                  m.time_forward_ms(pb, reps));
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "prefixsim-gpu-bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prefixsim-gpu-bench: %s\n", e.what());
    return 3;
  }
  return 0;
}
