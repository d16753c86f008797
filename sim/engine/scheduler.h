// vLLM v1's Scheduler and, with async_scheduling, its AsyncScheduler (FCFS, prefix caching, chunked prefill)
// over KvCacheManager. `test/data/golden/vllm-v1-scheduler/README.md` (a copy of
// ../shared/golden/vllm-v1-scheduler) is the
// specification; "§n" below are its sections. One step is
//
//   schedule()            §3: running requests first (in `running` order),
//                         then waiting ones (FCFS head only), under the token
//                         budget and max_num_seqs; preemption of the tail of
//                         `running` by recompute; a Batch for the executor
//   (the model runs)      §6: a scheduled request samples one token exactly
//                         when its chunk reaches the end of its sequence
//   update_from_output()  §7: append the tokens, finish requests at
//                         max_tokens and free their blocks in scheduled order
//
// Both `prefixsim sched` (steps) and the Engine (time) drive this one class.
//
// vLLM's default engine (§11) runs async_scheduling: AsyncScheduler with
// EngineCore.step_with_batch_queue, where step k+1 is scheduled before step
// k's output is processed (num_output_placeholders stand in for the sampled
// tokens), so finishes and block frees land one step later. This class is
// both: the synchronous rules above, which the goldens hold it to step by
// step, and the placeholders and in-flight plans the async loop needs
// (SchedulerConfig::async_scheduling, on by default in the CLI; the Engine
// drives it as step_with_batch_queue with a queue of 2, sim/engine/engine.h).
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine/batch.h"
#include "sim/kv/block_hash.h"
#include "sim/kv/kv_cache_manager.h"
#include "sim/kv/kv_tier.h"
#include "sim/engine/request.h"

namespace prefixsim {

struct SchedulerConfig {
  int64_t max_num_seqs = 256;               // S
  int64_t max_num_batched_tokens = 8192;    // T, the per-step token budget
  bool enable_chunked_prefill = true;
  int64_t long_prefill_token_threshold = 0; // 0: off
  int64_t max_model_len = 0;                // 0: unlimited
  bool full_sequence_must_fit = true;       // vLLM's scheduler_reserve_full_isl (default true)
  bool async_scheduling = false;            // AsyncScheduler's placeholders (see the header comment)
};

// Where the fake model's output tokens come from (a strategy, so that `sched`
// and the engine share the scheduler but not the token rule).
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Called once when a request is added; the value is handed back to token().
  virtual uint64_t prepare(const Request& r) const = 0;
  // The k-th output token (k = outputs so far).
  virtual int32_t token(const Request& r, uint64_t prepared, int64_t k) const = 0;
};

// The goldens' fake model: (sum(prompt) + k) % 50000 + 1.
class PromptSumTokens final : public TokenSource {
 public:
  uint64_t prepare(const Request& r) const override;
  int32_t token(const Request& r, uint64_t prepared, int64_t k) const override;
};

// The engine's: the trace's recorded outputs, else Request::output_token(k).
class RequestOutputTokens final : public TokenSource {
 public:
  uint64_t prepare(const Request& r) const override { return r.output_key(); }
  int32_t token(const Request& r, uint64_t key, int64_t k) const override { return r.output_token(key, k); }
};

// A request's place in the scheduler. Slots are dense small integers, reused
// after a finished request is released, so callers keep per-request state in
// vectors indexed by slot.
using SlotId = uint32_t;

enum class SeqStatus : uint8_t { kWaiting, kRunning, kPreempted, kFinished };

struct ScheduledEntry {
  SlotId slot = 0;
  int64_t num_new_tokens = 0;
  int64_t num_computed_before = 0;  // context already in the KV cache
  bool samples = false;             // the chunk completes the sequence: one token is sampled (§6)
  bool first_token = false;         // ...and it is the request's first output token
};

struct Admission {
  SlotId slot = 0;
  int64_t hit_tokens = 0;  // local prefix-cache hit found at admission
  bool resumed = false;    // it had been preempted before
  int64_t tier_hit_tokens = 0;  // loaded from KV tiers before it was admitted
};

// A request whose blocks found in KV tiers are being loaded (vLLM's
// WAITING_FOR_REMOTE_KVS): it holds its GPU blocks and is admitted at the
// first step scheduled once `ready` has come.
struct LoadStart {
  SlotId slot = 0;
  int64_t tokens = 0;  // loaded
  TimeNs ready = 0;
};

// What one schedule() (and the following update_from_output()) did.
struct StepPlan {
  std::vector<ScheduledEntry> scheduled;  // running first, then admissions
  std::vector<Admission> admitted;        // in admission order
  std::vector<SlotId> preempted;          // in the order _preempt_request ran
  std::vector<SlotId> finished;           // filled by update_from_output, scheduled order
  std::vector<LoadStart> loads;           // loads from KV tiers started by this schedule()
  PrefixCacheStats prefix_stats;          // the lookups of this step's schedule()
  PrefixCacheStats tier_stats;            // ...and what the KV tiers found after the GPU prefix
                                          // (vLLM's external prefix cache counters)
  Batch batch;                            // what the executor prices / runs
  int64_t prefill_tokens = 0;             // new tokens of chunks that are not a single decode
  int64_t decode_tokens = 0;
  bool empty() const { return scheduled.empty(); }
  void clear();
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& cfg, KvCacheManager& kv, const TokenSource& tokens);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  const SchedulerConfig& config() const { return cfg_; }
  KvCacheManager& kv() { return kv_; }

  // Why a sequence of `num_tokens` tokens could never be scheduled (the whole
  // current sequence must fit the pool to be admitted, and without chunked
  // prefill it must fit the token budget): "" when it can.
  std::string never_fits(int64_t num_tokens) const;

  // Adds a request at the tail of `waiting` (vLLM add_request). max_tokens is
  // r.output_len, at least 1 (vLLM requires it; a prefill always samples).
  SlotId add_request(Request&& r);

  // vLLM's has_requests(): running or waiting non-empty, or requests finished
  // in the last step not yet reported to a schedule().
  bool has_requests() const { return !running_.empty() || !waiting_.empty() || !finished_pending_.empty(); }

  const StepPlan& schedule();
  // KV tiers below the pool (kv_tier.h; nullptr: none), looked up after the
  // GPU prefix of each request admitted from waiting.
  void set_tiers(KvTierStack* tiers) { tiers_ = tiers; }
  // The time schedule() runs at (loads start and complete by it).
  void set_now(TimeNs now) { now_ = now; }
  // Requests waiting for their loads, and the earliest time one is done
  // (INT64_MAX when none).
  size_t num_loading() const { return num_loading_; }
  TimeNs next_load_ready() const;
  // Disaggregated serving (Request::leg). A decode leg's remote load is
  // started (LoadStart::ready == kRemotePending) with its ready time
  // unknown: the transfer's end is told with set_load_ready. A finished
  // prefill leg's blocks are held under its ticket until release_held.
  static constexpr TimeNs kRemotePending = INT64_MAX;
  void set_load_ready(SlotId s, TimeNs ready);
  void release_held(uint32_t ticket);
  size_t num_held() const { return held_.size(); }
  // The model's output: every entry with `samples` gets its next token.
  void update_from_output();
  // Async scheduling: the output of `plan`, a plan taken earlier with
  // take_plan() (its `finished` is filled here).
  void update_from_output(StepPlan& plan);
  // Moves the last schedule()'s plan into `out` (and out's old buffers back),
  // so that it can stay in flight while the next schedule() runs.
  void take_plan(StepPlan& out) { std::swap(plan_, out); }
  const StepPlan& plan() const { return plan_; }

  const Request& request(SlotId s) const { return seqs_[s]->req; }
  int64_t num_outputs(SlotId s) const { return seqs_[s]->num_outputs; }
  int64_t num_tokens(SlotId s) const { return seqs_[s]->num_tokens; }
  int64_t num_computed(SlotId s) const { return seqs_[s]->num_computed; }
  uint32_t num_preemptions(SlotId s) const { return seqs_[s]->num_preemptions; }
  // Tokens scheduled to be sampled whose output has not been applied yet
  // (vLLM's num_output_placeholders; always 0 without async scheduling).
  int64_t num_placeholders(SlotId s) const { return seqs_[s]->placeholders; }
  SeqStatus status(SlotId s) const { return seqs_[s]->status; }
  const KvSeq& kv_seq(SlotId s) const { return seqs_[s]->kv; }
  // Whether the request's prompt has been hashed: at its first lookup, so a
  // request still queued behind the head holds no hashes.
  bool hashed(SlotId s) const { return seqs_[s]->prepared && kv_.pool().caching_enabled(); }

  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  size_t num_live() const { return live_; }  // added and not released
  size_t slot_capacity() const { return seqs_.size(); }
  uint64_t total_preemptions() const { return total_preemptions_; }
  // Lookups made so far (PolicyContext counter handed to on_request()).
  uint64_t lookups() const { return lookup_counter_; }

 private:
  // A request arriving behind fewer waiting than this keeps a prompt chain
  // hashed upstream for its first lookup (add_request).
  static constexpr size_t kKeepChainsWaiting = 64;
  struct Seq {
    Request req;
    BlockHashChain chain;  // prompt + outputs, extended as tokens arrive; never re-hashed
    KvSeq kv;
    int64_t num_tokens = 0;    // P + outputs
    int64_t num_computed = 0;  // c
    int64_t num_outputs = 0;
    int64_t placeholders = 0;  // async scheduling: sampled tokens in flight
    int64_t max_tokens = 1;
    uint64_t token_key = 0;    // TokenSource::prepare()
    uint32_t num_preemptions = 0;
    SeqStatus status = SeqStatus::kWaiting;
    bool prepared = false;  // prepare_for_lookup ran: chain holds the prompt
    // Loading from KV tiers: ready at load_ready, then computed up to
    // load_until (GPU hits + loaded tokens).
    bool loading = false;
    bool remote_pending = false;  // a decode leg whose prompt KV is not requested yet
    TimeNs load_ready = 0;
    int64_t load_until = 0, load_gpu_hit = 0;
  };

  void schedule_running(int64_t& budget, bool& preempted_any);
  void schedule_waiting(int64_t& budget);
  // Admission of the waiting head: true when it was admitted or set aside
  // (loading), false when it must wait (the loop stops).
  bool admit_waiting(SlotId s, int64_t& budget);
  enum class LoadOutcome { kNone, kStarted, kNoRoom };
  LoadOutcome start_load(SlotId s, const LookupResult& hit);
  LoadOutcome start_remote_load(SlotId s, const LookupResult& hit);
  void set_aside_loading(SlotId s, int64_t load_until, int64_t gpu_hit, int64_t tokens, TimeNs ready);
  int64_t inflight_prefill_reserved_blocks() const;
  void preempt(SlotId victim);
  void push_scheduled(SlotId s, int64_t n);
  void apply_output(StepPlan& plan);
  void release(SlotId s);
  void prepare_for_lookup(Seq& q);
  int64_t blocks_for(int64_t tokens) const;

  SchedulerConfig cfg_;
  KvCacheManager& kv_;
  const TokenSource& tokens_;
  std::vector<std::unique_ptr<Seq>> seqs_;  // by slot; unique_ptr keeps chain->extras pointers stable
  std::vector<SlotId> free_slots_;
  std::vector<SlotId> running_;             // admission order
  std::deque<SlotId> waiting_;              // FCFS; preempted requests are prepended
  std::vector<SlotId> finished_pending_;    // released at the next schedule()
  StepPlan plan_;
  size_t live_ = 0;
  uint64_t total_preemptions_ = 0;
  uint64_t lookup_counter_ = 0;
  KvTierStack* tiers_ = nullptr;
  TimeNs now_ = 0;
  size_t num_loading_ = 0;
  std::vector<SlotId> set_aside_;  // loading requests passed over this step
  std::unordered_map<uint32_t, KvSeq> held_;  // finished prefill legs' blocks, by ticket
};

}  // namespace prefixsim
