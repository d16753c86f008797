// The time-driven replay engine (one replica): requests arrive from a
// RequestSource, the vLLM v1 Scheduler (the same one `prefixsim sched` runs)
// forms a Batch each step, the Executor says how long the step takes, and the
// step's output is applied when it ends. Steps run back to back while there
// is work; the engine idles (no events) when there is none.
//
// Event order at one instant: a step that ends is applied first (its tokens,
// finishes and frees), then the requests arriving at that instant join
// `waiting`, then the next step is scheduled. That is EngineCore's loop:
// inputs queued before step() are seen by its schedule().
//
// TTFT: a request's first token is produced at the END of the step whose
// chunk completes its prompt (§6 of the scheduler README).
//
// With SchedulerConfig::async_scheduling off this is vLLM's synchronous
// engine loop (`--no-async-scheduling`): schedule, run (host + device time
// from Executor::step_time), apply. With it on it is EngineCore's
// step_with_batch_queue with a queue of 2, vLLM's default: a step is
// scheduled while the previous one runs (the scheduler's placeholders stand
// in for its tokens), so at most two steps are in flight; when one ends its
// output is applied, then the arrivals of that instant, then the next step is
// scheduled, which runs after the one still in flight. A step's host part
// (Executor::step_cost: scheduling, input preparation) runs on the engine
// core's CPU while the device runs the step before it; the device runs steps
// back to back. Tokens, finishes and frees land when the step's output is
// applied, one schedule() later than in the synchronous loop. Step records
// carry the device interval (start, duration), which never overlap.
//
// Each request's record adds Executor::request_latency (the API server's
// part: tokenization, IPC, detokenization) to its first token and finish.
//
// Memory: only the next arrival is buffered; per-request state lives in the
// scheduler's slots and in a vector indexed by slot, and is released when the
// request finishes. Measurements go out through EngineObserver; the engine
// keeps no per-request history.
//
// A fleet (sim/fleet/) runs many Engines on one shared EventLoop: each is
// built with the loop and its replica index, its step events carry kinds
// 3*index + {0, 2}, and the arrival driver (sim/engine/arrivals.h) owns the
// kinds 3*k + 1, pulls the source and hands each arriving request to one
// replica (accept). A lone Engine's run() is that driver with one replica,
// so one replica of a fleet behaves, and fingerprints, exactly as before.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine/batch.h"
#include "sim/engine/event_loop.h"
#include "sim/kv/kv_cache_manager.h"
#include "sim/engine/request_source.h"
#include "sim/engine/scheduler.h"

namespace prefixsim {

struct RequestRecord {
  const Request* request = nullptr;  // valid during the callback only
  uint32_t replica = 0;              // the engine's index in its fleet
  TimeNs arrival = 0;
  TimeNs first_scheduled = 0;  // start of the step that first admitted it
  TimeNs load_start = -1;      // when its load from KV tiers began (-1: none)
  TimeNs first_token = 0;      // end of the step that completed its prompt
  TimeNs finish = 0;           // end of the step that produced its last token
  TimeNs max_itl = 0;          // longest gap between two consecutive output tokens
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t hit_tokens = 0;      // local prefix hit at its first admission
  int64_t tier_hit_tokens = 0; // loaded from KV tiers before its first admission
  uint32_t preemptions = 0;
  // Disaggregated serving (sim/fleet/disagg.h), -1 otherwise: the prefill
  // leg's first token as the proxy got it, and the decode leg's KV transfer
  // (blocks allocated on the decode instance; KV read).
  TimeNs prefill_done = -1;
  TimeNs transfer_start = -1;
  TimeNs transfer_done = -1;

  TimeNs ttft() const { return first_token - arrival; }
  // TTFT = queueing + loading + prefill: waiting before its lookup found
  // what to load (or before admission), then waiting for the load (and the
  // step after it), then its prompt's steps.
  TimeNs queueing() const { return (load_start >= 0 ? load_start : first_scheduled) - arrival; }
  TimeNs loading() const { return load_start >= 0 ? first_scheduled - load_start : 0; }
  TimeNs prefill() const { return first_token - first_scheduled; }
  TimeNs e2e() const { return finish - arrival; }
  // A split request's TTFT in parts (prefill_done >= 0; -1 where a part
  // does not apply): queued before its prefill, the prefill (to the prefill
  // leg's first token), the KV transfer (hand-off to KV read), and the
  // decode instance's step that gives the client's first token.
  TimeNs split_queue() const { return first_scheduled - arrival; }
  TimeNs split_prefill() const { return prefill_done - first_scheduled; }
  TimeNs split_transfer() const { return transfer_done >= 0 ? transfer_done - prefill_done : -1; }
  TimeNs split_first_decode() const {
    return transfer_done >= 0 && first_token > prefill_done ? first_token - transfer_done : -1;
  }
  // Mean time per output token after the first (vLLM's TPOT); 0 with one token.
  double tpot() const {
    return output_tokens > 1 ? static_cast<double>(finish - first_token) / static_cast<double>(output_tokens - 1) : 0.0;
  }
};

struct StepRecord {
  uint32_t replica = 0;  // the engine's index in its fleet
  uint64_t index = 0;    // 1-based count of steps that ran a batch (of this replica)
  TimeNs start = 0;
  TimeNs duration = 0;
  int64_t num_seqs = 0;
  int64_t prefill_tokens = 0;  // chunks of prompts (or recomputation)
  int64_t decode_tokens = 0;
  int64_t admitted = 0;        // requests admitted from waiting (resumptions included)
  int64_t preempted = 0;
  int64_t finished = 0;
  double kv_usage = 0;         // pool usage after the step's output was applied (vLLM's kv_cache_usage)
  int64_t num_free_blocks = 0;
  int64_t num_usable_blocks = 0;  // the pool's size, null block excluded
  size_t waiting = 0;          // after the step
  size_t running = 0;
  PrefixCacheStats prefix_stats;  // lookups of this step (vLLM way: refused/preempted ones too)
  const StepPlan* plan = nullptr;          // valid during the callback only
  const Scheduler* scheduler = nullptr;    // to name the plan's slots
};

// Told when an awaitable request (Request::awaitable: later requests wait
// for it) finishes or is refused, so that what waits for it can start.
class RequestDoneListener {
 public:
  virtual ~RequestDoneListener() = default;
  virtual void request_done(const Request& r, TimeNs at) = 0;
};

// Disaggregated serving (sim/fleet/disagg.h): told when a decode leg
// (Request::Leg::kDecode) has its blocks and waits for its prompt's KV, so
// the transfer can start; the engine hears of its end by remote_kv_ready.
class RemoteKvListener {
 public:
  virtual ~RemoteKvListener() = default;
  virtual void remote_kv_wanted(uint32_t replica, SlotId slot, const Request& r, int64_t tokens) = 0;
};

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void on_request_finished(const RequestRecord&) {}
  virtual void on_step(const StepRecord&) {}
  // A request that could never be scheduled (it would block `waiting`
  // forever); it is counted in EngineResult::refused, never dropped silently.
  virtual void on_request_refused(const Request&, const std::string& /*reason*/) {}
};

struct EngineResult {
  uint64_t arrived = 0;
  uint64_t finished = 0;
  uint64_t refused = 0;
  uint64_t steps = 0;        // steps that ran a batch
  uint64_t preemptions = 0;
  uint64_t prompt_tokens = 0;   // of finished requests
  uint64_t output_tokens = 0;
  // Admission-based hit rate (DESIGN's hit_rate): prompt tokens and local
  // hits of each request at its first admission.
  uint64_t admitted_prompt_tokens = 0;
  uint64_t admitted_hit_tokens = 0;
  uint64_t admitted_tier_hit_tokens = 0;  // loaded from KV tiers
  PrefixCacheStats prefix_cache;  // vLLM's lookup counting, summed over steps
  PrefixCacheStats tier_cache;    // the KV tiers' lookups (vLLM's external prefix cache counters)
  TimeNs end_time = 0;            // when the last event ran
  uint64_t events = 0;
  uint64_t event_fingerprint = 0;
};

class Engine {
 public:
  // Event kinds per replica: replica i's are [3i, 3i + 3); 3i + 1 is the
  // arrival driver's (arrivals.h).
  static constexpr uint32_t kKindsPerReplica = 3;

  // A replica alone, on its own event loop (run()). `tokens` defaults to the
  // requests' own outputs (Request::output_token).
  Engine(const SchedulerConfig& cfg, KvCacheManager& kv, Executor& exec, const TokenSource* tokens = nullptr);
  // Replica `index` of a fleet whose replicas share `loop`.
  Engine(const SchedulerConfig& cfg, KvCacheManager& kv, Executor& exec, EventLoop& loop, uint32_t index,
         const TokenSource* tokens = nullptr);

  void set_observer(EngineObserver* obs) { obs_ = obs; }
  void set_done_listener(RequestDoneListener* l) { done_ = l; }
  void set_remote_kv_listener(RemoteKvListener* l) { remote_ = l; }
  // The transfer of a decode leg's KV (slot from remote_kv_wanted) is done:
  // it is admitted at the next step.
  void remote_kv_ready(SlotId slot);
  // The decode side has read a finished prefill leg's KV: its blocks go
  // back to the pool (and stay cached).
  void release_held(uint32_t ticket);
  // KV tiers below this replica's pool (kv_tier.h): looked up after the GPU
  // prefix, loads timed on the replica's links. Set before the run.
  void set_tiers(KvTierStack* tiers);
  // Replays the whole source on this replica alone. Throws InputError when
  // arrivals go back in time.
  EngineResult run(RequestSource& source);

  // The fleet's side (arrivals.h drives these):
  // `r` arrives at this replica now: queued, or refused when it can never fit.
  void accept(Request&& r);
  // Runs one of this replica's events (kind / kKindsPerReplica == index()).
  void dispatch(const Event& ev);
  // The totals once the loop ran dry; InternalError when work is left.
  EngineResult finish();

  uint32_t index() const { return index_; }
  const Scheduler& scheduler() const { return sched_; }
  const KvCacheManager& kv() const { return kv_; }
  KvCacheManager& kv() { return kv_; }
  // Requests queued or running here (a router's load).
  size_t num_requests() const { return sched_.num_waiting() + sched_.num_running(); }
  size_t num_waiting() const { return sched_.num_waiting(); }
  size_t num_running() const { return sched_.num_running(); }
  // Prompt tokens of the requests that arrived here and were not admitted
  // yet (a router's pending-prefill estimate).
  int64_t queued_prompt_tokens() const { return queued_prompt_tokens_; }

 private:
  enum Kind : uint32_t { kStepDone = 0, kStartStep = 2 };
  // Per-slot measurements of a live request.
  struct Timing {
    TimeNs arrival = 0, first_scheduled = -1, first_token = -1, last_token = -1, max_itl = 0, load_start = -1;
    int64_t hit_tokens = 0, tier_hit_tokens = 0;
  };

  // A step scheduled while another may still run (async scheduling).
  struct InFlight {
    StepPlan plan;
    TimeNs start = 0, end = 0;  // on the device
    uint64_t index = 0;
  };

  void start_step();
  void finish_step();
  void start_step_async(const StepPlan& plan);
  void finish_step_async();
  void note_admissions(const StepPlan& plan, TimeNs now);
  bool account_empty_plan(const StepPlan& plan);
  void record_step(const StepPlan& plan, uint64_t index, TimeNs start);
  void request_start();

  static const RequestOutputTokens kTraceTokens;
  KvCacheManager& kv_;
  Executor& exec_;
  Scheduler sched_;
  EngineObserver* obs_ = nullptr;
  RequestDoneListener* done_ = nullptr;
  RemoteKvListener* remote_ = nullptr;
  KvTierStack* tiers_ = nullptr;
  std::unique_ptr<EventLoop> own_loop_;  // a lone replica's
  EventLoop& loop_;
  uint32_t index_ = 0;
  uint32_t kind_base_ = 0;  // index_ * kKindsPerReplica
  std::vector<Timing> timing_;  // by slot
  int64_t queued_prompt_tokens_ = 0;
  bool step_in_flight_ = false;
  bool start_pending_ = false;
  TimeNs step_start_ = 0;
  bool async_ = false;
  InFlight flight_[2];          // async: flight_[head_] is the oldest
  int head_ = 0, num_flight_ = 0;
  TimeNs cpu_free_ = 0, device_free_ = 0;
  struct {
    uint64_t preempted = 0;
    PrefixCacheStats prefix_stats;
  } carried_;  // async: of empty plans, reported with the next step
  EngineResult res_;
};

}  // namespace prefixsim
