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
// the kinds 3k + 1 (arrival = 1, a parked request's arrival = 4), so a one-replica fleet's event stream, and
// its fingerprint, are those of the engine before fleets existed. Arrivals
// run after step ends and before step starts at the same instant (their
// priorities), whichever replica the steps belong to.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/event_loop.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

struct FleetResult {
  EngineResult total;                 // summed over replicas; the loop's time, events and fingerprint
  std::vector<EngineResult> replicas;  // by replica index
};

// Picks the replica (an index into `replicas`) for a request arriving now.
// The request may be changed (a router stores the prompt's hash chain in it
// so the replica does not hash the prompt again).
using RouteFn = std::function<uint32_t(Request&)>;

// Told the time of every event before it is handled: the state it sees is
// the fleet's at that instant, before the event (a router's periodic
// sample of the replicas' load, sim/fleet/fleet.cpp).
using BeforeEventFn = std::function<void(TimeNs)>;

// Replays the whole source through `replicas`, which must have been built on
// `loop` with indices 0..n-1. Throws InputError when arrivals go back in
// time, InternalError when a route is out of range.
FleetResult drive_replicas(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas,
                           const RouteFn& route, const BeforeEventFn& before_event = {});

}  // namespace prefixsim
