#include "sim/engine/engine.h"

#include <algorithm>

#include "sim/base/error.h"
#include "sim/engine/arrivals.h"

namespace prefixsim {

const RequestOutputTokens Engine::kTraceTokens;

namespace {
// Priorities at one instant: apply the step that ended, then arrivals, then
// start the next step (so it sees those arrivals).
constexpr int32_t kPrioStepDone = 0;
constexpr int32_t kPrioStartStep = 2;  // arrivals (arrivals.cpp) run at 1, between the two

}  // namespace

Engine::Engine(const SchedulerConfig& cfg, KvCacheManager& kv, Executor& exec, const TokenSource* tokens)
    : kv_(kv),
      exec_(exec),
      sched_(cfg, kv, tokens ? *tokens : kTraceTokens),
      own_loop_(std::make_unique<EventLoop>()),
      loop_(*own_loop_),
      async_(cfg.async_scheduling) {}

Engine::Engine(const SchedulerConfig& cfg, KvCacheManager& kv, Executor& exec, EventLoop& loop, uint32_t index,
               const TokenSource* tokens)
    : kv_(kv),
      exec_(exec),
      sched_(cfg, kv, tokens ? *tokens : kTraceTokens),
      loop_(loop),
      index_(index),
      kind_base_(index * kKindsPerReplica),
      async_(cfg.async_scheduling) {}

void Engine::set_tiers(KvTierStack* tiers) {
  tiers_ = tiers;
  sched_.set_tiers(tiers);
  if (!tiers) return;
  tiers->set_timed(true);
  tiers->attach(kv_.pool());
}

void Engine::request_start() {
  if (start_pending_ || (async_ ? num_flight_ >= 2 : step_in_flight_)) return;
  loop_.schedule(loop_.now(), kPrioStartStep, kind_base_ + kStartStep, res_.steps);
  start_pending_ = true;
}

void Engine::accept(Request&& next) {
  ++res_.arrived;
  const SchedulerConfig& cfg = sched_.config();
  // The most a request will ever hold: its prompt and all outputs but the
  // last (the last sampled token is never computed), capped by max_model_len.
  int64_t max_tokens = std::max<int64_t>(next.output_len, 1);
  std::string why;
  if (next.prompt_len <= 0) {
    why = "its prompt is empty";
  } else if (cfg.max_model_len > 0 && next.prompt_len >= cfg.max_model_len) {
    why = "its prompt of " + std::to_string(next.prompt_len) + " tokens leaves no room under max_model_len " +
          std::to_string(cfg.max_model_len);
  } else {
    if (cfg.max_model_len > 0) max_tokens = std::min(max_tokens, cfg.max_model_len - next.prompt_len);
    why = sched_.never_fits(next.prompt_len + max_tokens - 1);
    if (!why.empty()) why = "its prompt and outputs " + why;
  }
  if (!why.empty()) {
    ++res_.refused;
    if (obs_) obs_->on_request_refused(next, why);
    if (next.awaitable && done_) done_->request_done(next, loop_.now());  // it will never run: its dependents go on
    return;
  }
  const TimeNs arrival = next.arrival;
  const SlotId s = sched_.add_request(std::move(next));
  if (timing_.size() < sched_.slot_capacity()) timing_.resize(sched_.slot_capacity());
  timing_[s] = Timing{};
  timing_[s].arrival = arrival;
  queued_prompt_tokens_ += sched_.request(s).prompt_len;
  request_start();
}

// Nothing to run (e.g. the step right after the last finish, which only
// reports finished ids): no model call, no time passes. Returns whether the
// engine must try again at once (a preemption made room).
bool Engine::account_empty_plan(const StepPlan& plan) {
  sched_.update_from_output();
  if (async_) {
    // Async: a request whose last token is in flight is skipped, so an empty
    // plan can hold a preemption (or lookups); the next recorded step
    // reports them, so that the steps' records add up to the totals.
    carried_.preempted += plan.preempted.size();
    carried_.prefix_stats += plan.prefix_stats;
  } else {
    res_.preemptions += plan.preempted.size();
    res_.prefix_cache += plan.prefix_stats;
  }
  // A step still in flight (async) ends later and schedules again then.
  if (num_flight_ > 0 || sched_.num_running() + sched_.num_waiting() == 0) return false;
  if (sched_.num_running() == 0 && sched_.num_loading() > 0 && plan.preempted.empty()) {
    // Only loads from KV tiers under way: wake when the first is done (a
    // remote transfer's end wakes the engine itself: remote_kv_ready).
    const TimeNs ready = sched_.next_load_ready();
    if (ready == Scheduler::kRemotePending) return false;
    if (ready > loop_.now()) {
      loop_.schedule(ready, kPrioStartStep, kind_base_ + kStartStep, res_.steps);
      start_pending_ = true;
      return false;
    }
  }
  if (plan.preempted.empty() && plan.loads.empty())
    throw InternalError("engine: the scheduler made no progress with " + std::to_string(sched_.num_waiting()) +
                        " waiting and " + std::to_string(sched_.num_running()) + " running requests");
  return true;
}

void Engine::note_admissions(const StepPlan& plan, TimeNs now) {
  for (const Admission& a : plan.admitted) {
    Timing& t = timing_[a.slot];
    if (t.first_scheduled < 0) {
      t.first_scheduled = now;
      t.hit_tokens = a.hit_tokens;
      t.tier_hit_tokens = a.tier_hit_tokens;
      res_.admitted_prompt_tokens += static_cast<uint64_t>(sched_.request(a.slot).prompt_len);
      res_.admitted_hit_tokens += static_cast<uint64_t>(a.hit_tokens);
      res_.admitted_tier_hit_tokens += static_cast<uint64_t>(a.tier_hit_tokens);
      queued_prompt_tokens_ -= sched_.request(a.slot).prompt_len;
    }
  }
}

void Engine::start_step() {
  start_pending_ = false;
  if (!sched_.has_requests()) return;  // idle until the next arrival
  if (async_ && num_flight_ >= 2) return;
  const TimeNs now = loop_.now();
  sched_.set_now(now);
  if (tiers_) tiers_->set_now(now);
  const StepPlan& plan = sched_.schedule();
  // A load before its first admission is part of its TTFT (one after a
  // preemption is not).
  for (const LoadStart& l : plan.loads) {
    if (timing_[l.slot].first_scheduled < 0 && timing_[l.slot].load_start < 0) timing_[l.slot].load_start = now;
    if (l.ready != Scheduler::kRemotePending) continue;
    if (!remote_) throw InternalError("engine: a decode leg waits for remote KV and nothing moves it");
    remote_->remote_kv_wanted(index_, l.slot, sched_.request(l.slot), l.tokens);
  }
  res_.tier_cache += plan.tier_stats;
  if (plan.empty()) {
    if (account_empty_plan(plan)) request_start();
    return;
  }
  note_admissions(plan, now);
  if (async_) return start_step_async(plan);
  const TimeNs d = exec_.step_time(plan.batch);
  if (d < 0) throw InternalError("executor returned a negative step time");
  step_start_ = now;
  step_in_flight_ = true;
  ++res_.steps;
  loop_.schedule(now + d, kPrioStepDone, kind_base_ + kStepDone, res_.steps);
}

// The step's CPU part waits for the engine core's CPU (the previous step's
// host work), its device part for the device; the plan stays in flight,
// apart from the scheduler's, until its output is applied. vLLM schedules
// the next step at once while the queue is not full.
void Engine::start_step_async(const StepPlan& plan) {
  const TimeNs now = loop_.now();
  const StepCost cost = exec_.step_cost(plan.batch);
  if (cost.host < 0 || cost.device < 0) throw InternalError("executor returned a negative step time");
  InFlight& f = flight_[(head_ + num_flight_) % 2];
  sched_.take_plan(f.plan);
  cpu_free_ = std::max(now, cpu_free_) + cost.host;
  f.start = std::max(cpu_free_, device_free_);
  f.end = f.start + cost.device;
  device_free_ = f.end;
  ++num_flight_;
  f.index = ++res_.steps;
  loop_.schedule(f.end, kPrioStepDone, kind_base_ + kStepDone, res_.steps);
  request_start();
}

void Engine::finish_step_async() {
  InFlight& f = flight_[head_];
  head_ ^= 1;
  --num_flight_;
  sched_.update_from_output(f.plan);
  record_step(f.plan, f.index, f.start);
  request_start();
}

void Engine::finish_step() {
  if (async_) return finish_step_async();
  step_in_flight_ = false;
  sched_.update_from_output();
  record_step(sched_.plan(), res_.steps, step_start_);
  request_start();
}

void Engine::record_step(const StepPlan& plan, uint64_t index, TimeNs start) {
  const TimeNs now = loop_.now();
  for (const ScheduledEntry& e : plan.scheduled) {
    if (!e.samples) continue;
    Timing& t = timing_[e.slot];
    if (t.first_token < 0) {
      t.first_token = now;
    } else {
      t.max_itl = std::max(t.max_itl, now - t.last_token);
    }
    t.last_token = now;
  }
  for (SlotId s : plan.finished) {
    const Timing& t = timing_[s];
    const Request& r = sched_.request(s);
    const TimeNs latency = exec_.request_latency(r.prompt_len);  // the API server's part
    // A prefill leg's finish is not the request's (its decode leg's is).
    if (r.awaitable && done_ && r.leg != Request::Leg::kPrefill) done_->request_done(r, now + latency);
    ++res_.finished;
    res_.prompt_tokens += static_cast<uint64_t>(r.prompt_len);
    res_.output_tokens += static_cast<uint64_t>(sched_.num_outputs(s));
    if (obs_) {
      RequestRecord rec;
      rec.request = &r;
      rec.replica = index_;
      rec.arrival = t.arrival;
      rec.first_scheduled = t.first_scheduled;
      rec.load_start = t.load_start;
      rec.tier_hit_tokens = t.tier_hit_tokens;
      rec.first_token = t.first_token + latency;
      rec.finish = now + latency;
      rec.max_itl = t.max_itl;
      rec.prompt_tokens = r.prompt_len;
      rec.output_tokens = sched_.num_outputs(s);
      rec.hit_tokens = t.hit_tokens;
      rec.preemptions = sched_.num_preemptions(s);
      obs_->on_request_finished(rec);
    }
  }
  res_.preemptions += plan.preempted.size() + carried_.preempted;
  res_.prefix_cache += plan.prefix_stats;
  res_.prefix_cache += carried_.prefix_stats;
  if (obs_) {
    StepRecord st;
    st.replica = index_;
    st.index = index;
    st.start = start;
    st.duration = now - start;
    st.num_seqs = static_cast<int64_t>(plan.scheduled.size());
    st.prefill_tokens = plan.prefill_tokens;
    st.decode_tokens = plan.decode_tokens;
    st.admitted = static_cast<int64_t>(plan.admitted.size());
    st.preempted = static_cast<int64_t>(plan.preempted.size() + carried_.preempted);
    st.finished = static_cast<int64_t>(plan.finished.size());
    st.kv_usage = kv_.pool().usage();
    st.num_free_blocks = kv_.pool().num_free();
    st.num_usable_blocks = kv_.pool().num_usable();
    st.waiting = sched_.num_waiting();
    st.running = sched_.num_running();
    st.prefix_stats = plan.prefix_stats;
    st.prefix_stats += carried_.prefix_stats;
    st.plan = &plan;
    st.scheduler = &sched_;
    obs_->on_step(st);
  }
  carried_ = {};
  request_start();
}

void Engine::dispatch(const Event& ev) {
  switch (ev.kind - kind_base_) {
    case kStartStep:
      start_step();
      break;
    case kStepDone:
      finish_step();
      break;
    default:
      throw InternalError("engine: unknown event kind " + std::to_string(ev.kind) + " for replica " +
                          std::to_string(index_));
  }
}

void Engine::remote_kv_ready(SlotId slot) {
  sched_.set_load_ready(slot, loop_.now());
  request_start();
}

void Engine::release_held(uint32_t ticket) {
  sched_.release_held(ticket);
  request_start();  // the blocks may admit a request waiting for room
}

EngineResult Engine::finish() {
  // Lookups or preemptions of a last empty plan no step reported.
  res_.preemptions += carried_.preempted;
  res_.prefix_cache += carried_.prefix_stats;
  carried_ = {};
  if (sched_.num_running() + sched_.num_waiting() > 0 || num_flight_ > 0)
    throw InternalError("engine: the event loop ran dry with requests still queued");
  if (sched_.num_held() > 0)
    throw InternalError("engine: " + std::to_string(sched_.num_held()) + " prefill leg(s) still hold their blocks");
  res_.end_time = loop_.now();
  res_.events = loop_.processed();
  res_.event_fingerprint = loop_.fingerprint();
  return res_;
}

EngineResult Engine::run(RequestSource& source) {
  if (!own_loop_) throw InternalError("Engine::run: a fleet's replica runs under drive_replicas");
  if (loop_.processed() > 0 || res_.arrived > 0) throw InternalError("Engine::run called twice");
  Engine* self = this;
  return drive_replicas(loop_, source, std::span<Engine* const>(&self, 1), [](Request&) { return 0u; }).total;
}

}  // namespace prefixsim
