// The real backend mode (`replay --backend cpu|gpu`): every engine step's
// Batch -- the very block tables, slot mappings, positions and context
// lengths the scheduler built over the simulator's own block pool -- runs
// through a random-weight Llama (a ModelRunner) over a KV pool with the same
// block ids. Each new token's model input derives from its content as the
// hash chain sees it (token_content.h), so a prefix-cache hit reuses exactly
// the KV a recompute would produce.
//
// The caching invariant (`--backend-check N`): the N sampled requests (the
// N smallest keys of a hash of id, arrival and length, over every replica)
// keep the final hidden state of the last token each step computed for
// them; after the run each is recomputed from scratch (one step, a fresh
// pool, no prefix hit) and every kept state must equal the recompute within
// the tolerance. A block manager, preemption or fleet bug that lets a
// request read KV it did not compute (a wrongly shared block, a stale page,
// a wrong slot) cannot pass.
//
// KV tiers: the backend mirrors them (TierObserver). A block written to a
// tier takes a copy of the KV the backend holds for it in the GPU block the
// pool cached it in (pending until the step computing it has run); a move
// down takes the tier's copy; an eviction drops it; a load copies it into
// the GPU block the scheduler allocated. A load of a block the tier was never
// given data for writes NaN there (and is counted): whatever reads it then
// fails the check.
//
// Time: the CPU backend leaves the clock to the cost model (`modeled`); the
// GPU backend's measured device time of each forward drives it (the cost
// model's host time added), and with `shadow` every step is also priced by
// the cost model, per step, for the modeled-vs-measured report.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/model_runner.h"
#include "gpu/model_shape.h"
#include "sim/cost/calibration_samples.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/batch.h"
#include "sim/engine/scheduler.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/kv_tier.h"

namespace prefixsim::gpu {

struct BackendConfig {
  std::string kind = "cpu";  // "cpu" | "gpu" (names the runner; the caller's factory makes it)
  ModelShape shape;
  uint64_t seed = 1;           // weights and inputs
  int64_t check_requests = 0;  // N of --backend-check (0: no check)
  bool measured_time = false;  // the runner's measured device time drives the clock
  bool shadow = false;         // keep the cost model's price of every step beside the measured one
  double tolerance = 1e-4;     // relative L2 error allowed by the check
  // The GPU the runner runs on (kind "gpu"), for the calibration samples'
  // header (shadow_samples_text).
  struct Device {
    std::string name, cuda;
    int sm_count = 0;
  } device;
};

// One executed step, kept for the shadow report.
struct ShadowStep {
  uint32_t replica = 0;
  uint64_t step = 0;  // of its replica, from 1
  double modeled_ms = 0;   // the cost model's device time
  double measured_ms = 0;  // the runner's
  BatchSummary shape;      // N, S, A, K as the cost model reads them (a calibration sample's columns)
  // Tokens already in the KV cache before the step (K counts the new ones too).
  int64_t context_tokens() const { return static_cast<int64_t>(shape.context_tokens) - shape.new_tokens; }
};

struct BackendStats {
  uint64_t steps = 0;
  int64_t tokens = 0;  // new tokens executed
  double measured_ms = 0;
  std::vector<ShadowStep> shadow;  // every step, when shadowing
  // KV tiers: blocks copied into a tier's mirror from a GPU block, blocks
  // loaded from a mirror into a GPU block, and loads the mirror had no data
  // for (the first one described).
  uint64_t tier_stores = 0, tier_loads = 0, tier_missing = 0;
  std::string first_missing;
};

struct BackendCheckResult {
  int64_t requests = 0;  // sampled and recomputed
  std::vector<std::string> ids;  // theirs, in key order
  int64_t rows = 0;      // hidden states compared
  double max_rel_error = 0;
  std::string failure;   // the first mismatch ("" when every row matched)
};

class Backend final : public TierObserver {
 public:
  Backend(BackendConfig cfg, RunnerFactory make_runner);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // The executor of replica `replica`: runs its steps on a runner of its own
  // (num_blocks blocks of block_size, the block pool's ids, null block 0
  // included) and prices them with `modeled` (see the header comment).
  // `modeled` must outlive the executor.
  std::unique_ptr<Executor> wrap(Executor& modeled, BlockPool& pool, int32_t block_size, uint32_t replica);
  // With KV tiers: hears every replica's pool (cached and evicted blocks, to
  // know which GPU block holds a hash), ahead of the listener already there
  // (the tier stack), which it forwards to. Call after the tiers are attached.
  void listen_to_pools();

  void on_tier_stored(const KvTier& t, const BlockHash& h, const KvTier* from, uint32_t replica) override;
  void on_tier_evicted(const KvTier& t, const BlockHash& h) override;
  void on_tier_loaded(const KvTier& t, const BlockHash& h, BlockId b, uint32_t replica) override;

  // After the run: recomputes the sampled requests (see the header comment).
  BackendCheckResult check();

  const BackendConfig& config() const { return cfg_; }
  const BackendStats& stats() const { return stats_; }
  // After a run with `shadow`: every measured step as calibration samples
  // (sim/cost/calibration_samples.h), for `prefixsim gpu calibrate
  // --samples` and `gpu validate`: the header from the device and the shape's
  // catalog model, `date` (ISO 8601) and what ran (`source`: the trace or
  // workload). InputError for a shape of no catalog model.
  std::string shadow_samples_text(int32_t block_size, const std::string& date, const std::string& source) const;
  // That InputError, for a refusal before the run.
  static void check_samples_shape(const ModelShape& shape);

 private:
  friend class BackendExecutor;
  struct Sample {
    std::string id;
    uint32_t replica = 0;
    std::vector<uint64_t> tags;  // token content by position, as far as computed
    struct Row {
      int64_t position;
      uint64_t step;
      std::vector<float> hidden;
    };
    std::vector<Row> rows;
  };
  // Samples the request `r` (its sample_key `key`) when the key is among
  // the N smallest so far (evicting the largest); find_sample: its entry, or
  // nullptr.
  void admit_sample(const Request& r, uint64_t key, uint32_t replica);
  Sample* find_sample(const Request& r, uint64_t key);
  static uint64_t sample_key(const Request& r);

  // One replica's side: its runner and pool, which GPU block holds each
  // cached hash, which blocks hold whole KV (a step wrote their last slot,
  // or a load filled them), the block being evicted while the pool says
  // so, and the tier copies waiting for their block's step to run.
  struct Replica {
    BlockPool* pool = nullptr;
    ModelRunner* runner = nullptr;
    std::unique_ptr<PoolListener> tee;
    std::unordered_map<BlockHash, BlockId, BlockHashHasher> block_of;
    std::vector<uint8_t> complete;
    BlockId evicting = kNoBlock;
    struct Pending {
      BlockId block;
      const KvTier* tier;
      BlockHash hash;
    };
    std::vector<Pending> pending;
  };
  using Mirror = std::unordered_map<BlockHash, std::shared_ptr<const std::vector<float>>, BlockHashHasher>;
  friend class BackendPoolTee;
  // After replica r's step: the slots it wrote, then the pending copies.
  void after_step(uint32_t r, const PagedBatch& pb);
  // The KV GPU block b of `rep` holds now, for a tier's mirror.
  static std::shared_ptr<const std::vector<float>> copy_block(Replica& rep, BlockId b);
  // Copies the pending tier copies `which` selects from their blocks now.
  void resolve_pending(Replica& rep, const std::function<bool(const Replica::Pending&)>& which);

  BackendConfig cfg_;
  RunnerFactory make_runner_;
  std::vector<Replica> replicas_;
  std::unordered_map<const KvTier*, Mirror> mirror_;  // null data: pending
  int32_t block_size_ = 0;
  RequestOutputTokens tokens_;  // the engine's token rule (Engine::kTraceTokens)
  std::map<uint64_t, Sample> samples_;
  BackendStats stats_;
};

}  // namespace prefixsim::gpu
