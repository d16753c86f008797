// Admission and shedding at the router: when no replica has room, a request
// waits in a bounded FIFO at the router, or is refused (HTTP 429/503 in a
// real deployment). The driver holds and releases (sim/engine/arrivals.h,
// AdmissionGate); this file says when the fleet is saturated.
//
// Saturation as llm-d's endpoint picker decides it (the saturation detector
// of kubernetes-sigs/gateway-api-inference-extension, its defaults from the
// detector's config.go): a replica has room while its requests waiting are
// at most `waiting` (QueueDepthThreshold, default 5) and its KV usage is at
// most `kv` (KVCacheUtilThreshold, 0.8); the fleet is saturated when no
// replica has room. The detector reads the replicas' scraped metrics: here
// the load the router reads (sampled with --router-scrape-ms for a router
// that reads metrics, live otherwise). `queue` is the router-side bound: 0
// (the default) refuses at once, as GAIE's saturation check sheds a request;
// N > 0 holds up to N, as its flow controller and Dynamo's frontend queue do.
// The router is not restricted to replicas with room: once a request is
// admitted it routes as it always does.
//
// Spec: off (default) | saturation[:waiting=N,kv=F,queue=N]
#pragma once

#include <cstdint>
#include <string>

namespace prefixsim {

class FleetView;

struct AdmissionConfig {
  bool enabled = false;
  int64_t waiting = 5;
  double kv = 0.8;
  int64_t queue = 0;
};

// InputError naming --admission for an unknown name, key or a value out of range.
AdmissionConfig parse_admission(const std::string& spec);
// The spec with every parameter, as the report states it ("off" when disabled).
std::string admission_text(const AdmissionConfig& c);

// Whether no replica of `view` has room (the rule above): a fleet's
// replicas as its router reads them, or a disaggregated fleet's prefill pool.
bool fleet_saturated(const FleetView& view, const AdmissionConfig& c);

}  // namespace prefixsim
