#include "sim/engine/arrivals.h"

#include <algorithm>
#include <string>

#include "sim/base/error.h"

namespace prefixsim {

namespace {
constexpr int32_t kPrioArrival = 1;  // after kPrioStepDone (0), before kPrioStartStep (2): engine.cpp
constexpr uint32_t kArrival = 1;

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
  to.prefix_cache += r.prefix_cache;
}
}  // namespace

FleetResult drive_replicas(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas,
                           const RouteFn& route) {
  if (loop.processed() > 0) throw InternalError("drive_replicas: the event loop already ran");
  for (size_t i = 0; i < replicas.size(); ++i)
    if (replicas[i]->index() != i) throw InternalError("drive_replicas: replica " + std::to_string(i) + " has index " +
                                                       std::to_string(replicas[i]->index()));
  const std::string origin = source.origin();
  Request next;
  TimeNs last_arrival = 0;
  uint64_t arrived = 0;
  // Buffers the source's next request and schedules its arrival.
  auto pull = [&] {
    if (!source.next(next)) return;
    if (next.arrival < last_arrival)
      throw InputError(origin + ": request '" + next.id + "' arrives at " + std::to_string(next.arrival) +
                       " ns, before the previous request (" + std::to_string(last_arrival) +
                       " ns); requests must be sorted by arrival time");
    last_arrival = next.arrival;
    loop.schedule(std::max(next.arrival, loop.now()), kPrioArrival, kArrival, arrived + 1);
  };
  pull();
  Event ev;
  while (loop.pop(ev)) {
    if (ev.kind == kArrival) {
      ++arrived;
      const uint32_t r = route(next);
      if (r >= replicas.size())
        throw InternalError("router chose replica " + std::to_string(r) + " of " + std::to_string(replicas.size()));
      replicas[r]->accept(std::move(next));
      pull();  // keep exactly one future arrival buffered
      continue;
    }
    const uint32_t owner = ev.kind / Engine::kKindsPerReplica;
    if (ev.kind % Engine::kKindsPerReplica == 1 || owner >= replicas.size())
      throw InternalError("event loop: unknown event kind " + std::to_string(ev.kind));
    replicas[owner]->dispatch(ev);
  }
  FleetResult out;
  for (Engine* e : replicas) {
    out.replicas.push_back(e->finish());
    add(out.total, out.replicas.back());
  }
  out.total.end_time = loop.now();
  out.total.events = loop.processed();
  out.total.event_fingerprint = loop.fingerprint();
  return out;
}

}  // namespace prefixsim
