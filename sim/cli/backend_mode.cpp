#include "sim/cli/backend_mode.h"

#include "reports/backend_shadow.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/scenario/point_run.h"
#ifdef PREFIXSIM_WITH_CUDA
#include "gpu/cuda_plugin.h"
#endif

namespace prefixsim::cli {

void add_backend_options(po::options_description& o) {
  o.add_options()
      ("backend", po::value<std::string>(),
       "engine mode: also run every scheduled batch through a random-weight Llama over a KV pool with the "
       "block pool's ids: cpu (fp32, any machine; time stays modeled) or gpu (bf16 on a CUDA build; the "
       "measured forward drives the clock)")
      ("backend-shape", po::value<std::string>(),
       "the backend's model shape: tiny (2 layers, hidden 256; the cpu default), llama-3.1-8b (the gpu "
       "default), llama-3.1-70b-tp4")
      ("backend-check", po::value<int64_t>(),
       "recompute N sampled requests without the cache after the run and compare their hidden states with the "
       "replay's (exit 1 on a mismatch)")
      ("backend-tolerance", po::value<double>(),
       "relative L2 error the check allows (default 1e-4 on cpu, fp32; 2e-2 on gpu, bf16)")
      ("backend-seed", po::value<uint64_t>()->default_value(1), "weights and inputs of the backend's model")
      ("shadow", "with --backend gpu: price every step with the cost model too and report modeled against measured")
      ("shadow-samples", po::value<std::string>(),
       "with --shadow: also write every measured step as calibration samples (prefixsim gpu calibrate "
       "--samples FILE fits a profile to them; gpu validate holds one against them), with --out's files");
}

namespace {
const char* kBackendFlags[] = {"backend-shape", "backend-check", "backend-tolerance", "shadow", "shadow-samples"};

std::string default_shape(const std::string& kind, const ModelSpec& model, int tp) {
  if (kind == "cpu") return "tiny";
  const std::string name = tp > 1 ? model.name + "-tp" + std::to_string(tp) : model.name;
  if (gpu::find_model_shape(name)) return name;
  throw InputError("--backend gpu: no backend shape for " + model.name + " at TP " + std::to_string(tp) +
                   "; name one with --backend-shape (have: llama-3.1-8b, llama-3.1-70b-tp4, tiny)");
}
}  // namespace

std::unique_ptr<gpu::Backend> make_backend(const po::variables_map& vm, const Scenario& s, const ModelSpec& model,
                                           int64_t pool_blocks) {
  if (!vm.count("backend")) {
    for (const char* f : kBackendFlags)
      if (vm.count(f)) throw InputError(std::string("--") + f + ": needs --backend cpu|gpu");
    return nullptr;
  }
  gpu::BackendConfig cfg;
  cfg.kind = vm["backend"].as<std::string>();
  if (cfg.kind != "cpu" && cfg.kind != "gpu") throw InputError("--backend: '" + cfg.kind + "' is not cpu or gpu");
  if (s.mode != "engine") throw InputError("--backend: only engine mode schedules batches (cache mode has none)");
  if (mixed_fleet(s))
    throw InputError("--backend: runs one model shape over pools of one size; not with --replica-groups");
  const std::string shape_name = vm.count("backend-shape") ? vm["backend-shape"].as<std::string>()
                                                           : default_shape(cfg.kind, model, s.tp);
  const gpu::ModelShape* shape = gpu::find_model_shape(shape_name);
  if (!shape) throw InputError("--backend-shape: unknown shape '" + shape_name + "' (have: tiny, llama-3.1-8b, llama-3.1-70b-tp4)");
  cfg.shape = *shape;
  cfg.seed = vm["backend-seed"].as<uint64_t>();
  if (vm.count("backend-check")) {
    cfg.check_requests = vm["backend-check"].as<int64_t>();
    if (cfg.check_requests < 1) throw InputError("--backend-check: must be at least 1");
  }
  cfg.tolerance = cfg.kind == "cpu" ? 1e-4 : 2e-2;
  if (vm.count("backend-tolerance")) {
    cfg.tolerance = vm["backend-tolerance"].as<double>();
    if (!(cfg.tolerance > 0 && cfg.tolerance < 1)) throw InputError("--backend-tolerance: must be in (0, 1)");
  }
  cfg.measured_time = cfg.kind == "gpu";
  cfg.shadow = vm.count("shadow") > 0;
  if (cfg.shadow && cfg.kind != "gpu") throw InputError("--shadow: needs --backend gpu (the cpu backend measures nothing)");
  if (vm.count("shadow-samples")) {
    if (!cfg.shadow) throw InputError("--shadow-samples: needs --shadow (the samples are its measured steps)");
    gpu::Backend::check_samples_shape(cfg.shape);
  }
  // Every replica holds its own pool; fp32 on the CPU, bf16 on the GPU.
  const gpu::KvPoolLayout layout = gpu::pool_layout_for(pool_blocks, s.block_size, cfg.shape);
  const double gib = static_cast<double>(layout.pool_bytes()) * (cfg.kind == "cpu" ? 2.0 : 1.0) *
                     static_cast<double>(s.replicas) / (1024.0 * 1024.0 * 1024.0);
  if (cfg.kind == "cpu" && gib > 16)
    throw InputError("--backend cpu: the replicas' KV pools would take " + std::to_string(static_cast<int>(gib)) +
                     " GiB of memory at shape " + shape_name + "; give a smaller pool (--kv-tokens)");
  gpu::RunnerFactory factory;
  if (cfg.kind == "cpu") {
    factory = gpu::make_cpu_runner;
  } else {
#ifdef PREFIXSIM_WITH_CUDA
    std::string why;
    const gpu::CudaPlugin* cuda = gpu::load_cuda_plugin(&why);
    if (!cuda) throw InputError("--backend gpu: cannot load the CUDA library: " + why);
    const gpu::cuda::DeviceInfo dev = cuda->query_devices();
    if (dev.count == 0) throw InputError("--backend gpu: no CUDA device (" + dev.error + ")");
    cfg.device = {dev.name, dev.cuda, dev.sm_count};
    factory = cuda->make_gpu_runner;
#else
    throw InputError("--backend gpu: this prefixsim was built without CUDA (meson -Dcuda=enabled on a machine with nvcc)");
#endif
  }
  return std::make_unique<gpu::Backend>(cfg, factory);
}

namespace {
BackendStepReport step_report(const gpu::ShadowStep& s) {
  return {s.replica, s.step, s.shape.seqs, s.shape.new_tokens, s.context_tokens(), s.modeled_ms, s.measured_ms};
}

BackendReport::Shadow shadow_summary(const std::vector<gpu::ShadowStep>& steps) {
  std::vector<BackendStepReport> rows;
  rows.reserve(steps.size());
  for (const gpu::ShadowStep& s : steps) rows.push_back(step_report(s));
  return summarize_shadow(rows);
}
}  // namespace

namespace {
BackendReport backend_report(const gpu::Backend& b, const std::optional<gpu::BackendCheckResult>& check) {
  const gpu::BackendConfig& c = b.config();
  BackendReport r;
  r.kind = c.kind;
  r.shape = c.shape.name;
  r.layers = c.shape.layers;
  r.hidden = c.shape.hidden;
  r.heads = c.shape.heads;
  r.kv_heads = c.shape.kv_heads;
  r.head_dim = c.shape.head_dim;
  r.intermediate = c.shape.intermediate;
  r.seed = c.seed;
  r.measured_time = c.measured_time;
  r.steps = b.stats().steps;
  r.tokens = b.stats().tokens;
  r.measured_ms = b.stats().measured_ms;
  if (b.stats().tier_stores + b.stats().tier_loads > 0)
    r.tiers = BackendReport::Tiers{b.stats().tier_stores, b.stats().tier_loads, b.stats().tier_missing};
  if (check) {
    BackendReport::Check k;
    k.asked = c.check_requests;
    k.requests = check->requests;
    k.rows = check->rows;
    k.tolerance = c.tolerance;
    k.max_rel_error = check->max_rel_error;
    k.failure = check->failure;
    r.check = k;
  }
  if (c.shadow) r.shadow = shadow_summary(b.stats().shadow);
  return r;
}
}  // namespace

ExecutorWrap BackendHooks::wrap() {
  return [&b = b_](Executor& modeled, BlockPool& pool, int32_t bs, uint32_t replica) {
    return b.wrap(modeled, pool, bs, replica);
  };
}

void BackendHooks::attach(Fleet& fleet) {
  if (fleet.tiers.empty()) return;
  fleet.tiers.set_observer(&b_);
  b_.listen_to_pools();
}

BackendHooks::BackendHooks(gpu::Backend& b, const ReplaySetup& setup, const po::variables_map& vm)
    : b_(b), setup_(setup) {
  if (vm.count("shadow-samples")) samples_ = std::make_unique<AtomicFile>(vm["shadow-samples"].as<std::string>(),
                                                                          "--shadow-samples");
}

BackendHooks::~BackendHooks() = default;

void BackendHooks::finish(const PolicyContext& ctx, RunReport& report) {
  if (b_.config().check_requests > 0) check_ = b_.check();
  report.backend = backend_report(b_, check_);
  if (samples_) {
    const Scenario& s = setup_.scenario;
    const std::string source = (s.trace.empty() ? "the " + s.workload + " workload" : s.trace) + ", " +
                               std::to_string(b_.stats().steps) + " steps on " + std::to_string(s.replicas) +
                               " replica(s)";
    samples_->stream() << b_.shadow_samples_text(s.block_size, samples_date_now(), source);
    samples_->finish();
  }
  if (BackendReport::Shadow* shadow = report.backend->shadow ? &*report.backend->shadow : nullptr) {
    const PointResult twin = run_scenario_point(setup_.scenario, setup_.resolved, ctx, setup_.kv.num_blocks);
    shadow->ttft_measured_p50 = report.timed->latency_ms.ttft.p50;
    shadow->ttft_measured_p99 = report.timed->latency_ms.ttft.p99;
    shadow->ttft_modeled_p50 = twin.ttft.p50;
    shadow->ttft_modeled_p99 = twin.ttft.p99;
  }
}

}  // namespace prefixsim::cli
