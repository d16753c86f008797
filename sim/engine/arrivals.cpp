#include "sim/engine/arrivals.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "sim/base/error.h"

namespace prefixsim {

namespace {
constexpr int32_t kPrioArrival = 1;  // after kPrioStepDone (0), before kPrioStartStep (2): engine.cpp
constexpr uint32_t kArrival = 1;           // the buffered arrival (payload: its ordinal)
constexpr uint32_t kDependentArrival = 4;  // a parked request whose time came (payload: its park slot)
constexpr uint32_t kAdmissionRecheck = 7;  // the gate may have room for the held requests

void add(EngineResult& to, const EngineResult& r) {
  to.arrived += r.arrived;
  to.finished += r.finished;
  to.refused += r.refused;
  to.steps += r.steps;
  to.preemptions += r.preemptions;
  to.prompt_tokens += r.prompt_tokens;
  to.output_tokens += r.output_tokens;
  to.admitted_prompt_tokens += r.admitted_prompt_tokens;
  to.admitted_hit_tokens += r.admitted_hit_tokens;
  to.admitted_tier_hit_tokens += r.admitted_tier_hit_tokens;
  to.prefix_cache += r.prefix_cache;
  to.tier_cache += r.tier_cache;
}

// The driver. Dependencies (Request::wait_for, Dynamo's agentic Mooncake
// rows): such a request does not arrive at its recorded time; it waits,
// parked, until every request it names has finished (or was refused: it
// will never run), then arrives Request::wait_after later; in such a trace
// a request without wait_for arrives at its recorded time. A dependency
// always comes earlier in the source (the reader checks it), so waits
// cannot form a cycle. A request may be ready long before its recorded
// time (a faster server than the recorded one), so a source of such
// requests is read whole when its first one comes: memory then grows with
// the trace (the parked requests and one finish time per awaitable
// request). Other sources stream, one arrival buffered.
class Driver final : public RequestDoneListener {
 public:
  Driver(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas, const RouteFn& route,
         const BeforeEventFn& before_event, const AdmissionGate* gate, DriverExtension* extension)
      : loop_(loop),
        source_(source),
        replicas_(replicas),
        route_(route),
        before_event_(before_event),
        gate_(gate && gate->saturated ? gate : nullptr),
        extension_(extension),
        origin_(source.origin()) {}

  FleetResult run() {
    for (Engine* e : replicas_) e->set_done_listener(this);
    pull();
    Event ev;
    while (loop_.pop(ev)) {
      if (before_event_) before_event_(ev.time);
      if (ev.kind == kArrival) {
        ++arrived_;
        admit(next_);
        pull();  // keep exactly one future arrival buffered
      } else if (ev.kind == kDependentArrival) {
        Request r = std::move(parked_[ev.payload].request);
        parked_[ev.payload].request = Request{};
        free_parked_.push_back(static_cast<uint32_t>(ev.payload));
        --num_parked_;
        r.arrival = loop_.now();  // its latency counts from here
        admit(r);
      } else if (ev.kind == kAdmissionRecheck && gate_) {
        recheck_pending_ = false;
        release_held();
      } else if (extension_ && ev.kind >= DriverExtension::kExtensionKindBase &&
                 ev.kind % Engine::kKindsPerReplica == 1) {
        extension_->dispatch(ev);
        if (!held_.empty()) release_held();
      } else {
        const uint32_t owner = ev.kind / Engine::kKindsPerReplica;
        if (ev.kind % Engine::kKindsPerReplica == 1 || owner >= replicas_.size())
          throw InternalError("event loop: unknown event kind " + std::to_string(ev.kind));
        replicas_[owner]->dispatch(ev);
        if (!held_.empty()) release_held();
      }
    }
    if (!held_.empty())
      throw InternalError("admission: " + std::to_string(held_.size()) + " request(s) still held at the router");
    for (Engine* e : replicas_) e->set_done_listener(nullptr);
    if (extension_) {
      const std::string left = extension_->unfinished();
      if (!left.empty()) throw InternalError("the event loop ran dry with " + left);
    }
    if (num_parked_ > 0)
      throw InternalError("engine: " + std::to_string(num_parked_) +
                          " request(s) still wait for dependencies that never finished");
    FleetResult out;
    for (Engine* e : replicas_) {
      out.replicas.push_back(e->finish());
      add(out.total, out.replicas.back());
    }
    out.total.end_time = loop_.now();
    out.total.events = loop_.processed();
    out.total.event_fingerprint = loop_.fingerprint();
    out.admission = admission_;
    return out;
  }

  void request_done(const Request& r, TimeNs at) override {
    finished_at_[r.id] = at;
    const auto it = waiters_.find(r.id);
    if (it == waiters_.end()) return;
    const std::vector<uint32_t> slots = std::move(it->second);
    waiters_.erase(it);
    for (uint32_t slot : slots) {
      Parked& p = parked_[slot];
      p.ready = std::max(p.ready, at);
      if (--p.left == 0) wake(slot);
    }
  }

 private:
  struct Parked {
    Request request;
    size_t left = 0;   // dependencies not done yet
    TimeNs ready = 0;  // the latest finish among those done
  };

  // An arrival through the gate: on to a replica, held at the router, or refused.
  void admit(Request& r) {
    if (!gate_ || (held_.empty() && !gate_->saturated())) {
      hand_over(r);
      return;
    }
    if (held_.size() >= gate_->queue) {
      ++(gate_->queue == 0 ? admission_.refused_saturated : admission_.refused_queue_full);
      if (r.awaitable) request_done(r, loop_.now());  // it will never run: whoever waits for it goes on
      return;
    }
    held_.push_back(std::move(r));
    ++admission_.held;
    admission_.max_queue = std::max<uint64_t>(admission_.max_queue, held_.size());
    schedule_recheck();
  }

  // The held requests, in order, while the fleet has room.
  void release_held() {
    while (!held_.empty() && !gate_->saturated()) {
      Request r = std::move(held_.front());
      held_.pop_front();
      hand_over(r);
    }
    if (!held_.empty()) schedule_recheck();
  }

  void schedule_recheck() {
    if (recheck_pending_ || !gate_->recheck_at) return;
    const TimeNs at = gate_->recheck_at(loop_.now());
    if (at <= loop_.now()) return;
    loop_.schedule(at, kPrioArrival, kAdmissionRecheck, 0);
    recheck_pending_ = true;
  }

  void hand_over(Request& r) {
    const uint32_t i = route_(r);
    if (i >= replicas_.size())
      throw InternalError("router chose replica " + std::to_string(i) + " of " + std::to_string(replicas_.size()));
    replicas_[i]->accept(std::move(r));
  }

  // Buffers the source's next request and schedules its arrival; a
  // dependency-driven source is parked whole instead.
  void pull() {
    if (eager_) return;
    if (!source_.next(next_)) return;
    if (next_.awaitable || !next_.wait_for.empty()) {
      eager_ = true;
      park(std::move(next_));
      Request r;
      while (source_.next(r)) park(std::move(r));
      return;
    }
    if (next_.arrival < last_arrival_)
      throw InputError(origin_ + ": request '" + next_.id + "' arrives at " + std::to_string(next_.arrival) +
                       " ns, before the previous request (" + std::to_string(last_arrival_) +
                       " ns); requests must be sorted by arrival time");
    last_arrival_ = next_.arrival;
    loop_.schedule(std::max(next_.arrival, loop_.now()), kPrioArrival, kArrival, arrived_ + 1);
  }

  void park(Request&& r) {
    uint32_t slot;
    if (free_parked_.empty()) {
      slot = static_cast<uint32_t>(parked_.size());
      parked_.emplace_back();
    } else {
      slot = free_parked_.back();
      free_parked_.pop_back();
    }
    ++num_parked_;
    Parked& p = parked_[slot];
    p.request = std::move(r);
    p.left = 0;
    p.ready = 0;
    for (const std::string& id : p.request.wait_for) {
      const auto done = finished_at_.find(id);
      if (done != finished_at_.end()) {
        p.ready = std::max(p.ready, done->second);
      } else {
        waiters_[id].push_back(slot);
        ++p.left;
      }
    }
    if (p.left == 0) wake(slot);
  }

  // Every dependency of a parked request is done: schedule its arrival (no
  // dependencies: its recorded time; else the last one's end plus its wait).
  void wake(uint32_t slot) {
    const Parked& p = parked_[slot];
    const TimeNs at = p.request.wait_for.empty() ? p.request.arrival : p.ready + p.request.wait_after;
    loop_.schedule(std::max(loop_.now(), at), kPrioArrival, kDependentArrival, slot);
  }

  EventLoop& loop_;
  RequestSource& source_;
  std::span<Engine* const> replicas_;
  const RouteFn& route_;
  const BeforeEventFn& before_event_;
  const AdmissionGate* gate_;  // nullptr: every request goes on
  DriverExtension* extension_;
  std::deque<Request> held_;   // waiting at the router, oldest first
  bool recheck_pending_ = false;
  AdmissionStats admission_;
  std::string origin_;
  Request next_;  // the one buffered arrival
  TimeNs last_arrival_ = 0;
  uint64_t arrived_ = 0;
  bool eager_ = false;  // reading a dependency-driven source whole
  std::vector<Parked> parked_;  // by park slot; free ones listed in free_parked_
  std::vector<uint32_t> free_parked_;
  size_t num_parked_ = 0;
  std::unordered_map<std::string, std::vector<uint32_t>> waiters_;  // id -> park slots waiting for it
  std::unordered_map<std::string, TimeNs> finished_at_;            // awaitable requests done
};

}  // namespace

FleetResult drive_replicas(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas,
                           const RouteFn& route, const BeforeEventFn& before_event, const AdmissionGate* gate,
                           DriverExtension* extension) {
  if (loop.processed() > 0) throw InternalError("drive_replicas: the event loop already ran");
  for (size_t i = 0; i < replicas.size(); ++i)
    if (replicas[i]->index() != i)
      throw InternalError("drive_replicas: replica " + std::to_string(i) + " has index " +
                          std::to_string(replicas[i]->index()));
  return Driver(loop, source, replicas, route, before_event, gate, extension).run();
}

}  // namespace prefixsim
