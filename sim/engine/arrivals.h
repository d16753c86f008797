// The arrival driver: the loop that feeds replicas sharing one EventLoop.
// It keeps exactly one future arrival of the source buffered (memory does
// not grow with the trace), and when that arrival's time comes it asks
// `route` which replica takes the request, hands it over (Engine::accept),
// and pulls the next. Every other event belongs to a replica and goes to it.
//
// Requests that wait for others (Request::wait_for: agentic traces) are
// parked until those finish; arrivals.cpp says how.
//
// Event kinds: replica i owns [3i, 3i + 3) except 3i + 1; the driver's are
// the kinds 3k + 1 (arrival = 1, a parked request's arrival = 4, the admission gate's recheck = 7, an
// extension's from 10 on), so a
// one-replica fleet's event stream, and
// its fingerprint, are those of the engine before fleets existed. Arrivals
// run after step ends and before step starts at the same instant (their
// priorities), whichever replica the steps belong to.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/event_loop.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

// What the admission gate did (zeros without one).
struct AdmissionStats {
  uint64_t held = 0;                // requests that waited in the router's queue (then went on)
  uint64_t refused_saturated = 0;   // refused at once: the fleet was saturated and the queue holds none
  uint64_t refused_queue_full = 0;  // refused: the fleet was saturated and the queue was full
  uint64_t max_queue = 0;           // the longest the queue got
  uint64_t refused() const { return refused_saturated + refused_queue_full; }
};

struct FleetResult {
  EngineResult total;                 // summed over replicas; the loop's time, events and fingerprint
  std::vector<EngineResult> replicas;  // by replica index
  AdmissionStats admission;
};

// Admission at the router, before routing (sim/fleet/admission.h builds it):
// while `saturated()` says no replica has room, an arrival waits in a FIFO at
// the router of at most `queue` requests, or is refused when it is full
// (queue 0: refused at once; a refused request never runs, and requests that
// wait for it go on as for one the engine refuses). Held requests go on, in
// order, as soon as the fleet is not saturated: checked after every event,
// and at `recheck_at(now)` when that is later than now (a gate that reads
// sampled load learns of room only at the next sample). A held request's
// latency counts from its arrival.
struct AdmissionGate {
  std::function<bool()> saturated;
  size_t queue = 0;
  std::function<TimeNs(TimeNs)> recheck_at;  // empty: only after events
};

// Picks the replica (an index into `replicas`) for a request arriving now.
// The request may be changed (a router stores the prompt's hash chain in it
// so the replica does not hash the prompt again).
using RouteFn = std::function<uint32_t(Request&)>;

// Told the time of every event before it is handled: the state it sees is
// the fleet's at that instant, before the event (a router's periodic
// sample of the replicas' load, sim/fleet/fleet.cpp).
using BeforeEventFn = std::function<void(TimeNs)>;

// A mechanism beside the replicas with events of its own (disaggregated
// serving's hand-offs and KV transfers, sim/fleet/disagg.h): the driver's
// kinds 3k + 1 from kExtensionKindBase on are its, dispatched to it.
class DriverExtension {
 public:
  static constexpr uint32_t kExtensionKindBase = 10;
  virtual ~DriverExtension() = default;
  virtual void dispatch(const Event& ev) = 0;
  // What is still under way when the loop ran dry ("" when nothing is): the
  // driver throws InternalError with it.
  virtual std::string unfinished() const { return {}; }
};

// Replays the whole source through `replicas`, which must have been built on
// `loop` with indices 0..n-1. Throws InputError when arrivals go back in
// time, InternalError when a route is out of range.
FleetResult drive_replicas(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas,
                           const RouteFn& route, const BeforeEventFn& before_event = {},
                           const AdmissionGate* gate = nullptr, DriverExtension* extension = nullptr);

}  // namespace prefixsim
