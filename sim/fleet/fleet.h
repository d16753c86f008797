// A fleet: N vLLM replicas behind a router, on one event loop and one clock.
// Each replica is a whole Engine (its scheduler, KV cache manager, pool and
// executor); the arrival driver (sim/engine/arrivals.h) hands every request,
// at its arrival, to the replica the router picks. With one replica the run
// is the single engine's, event for event.
#pragma once

#include <cstdint>
#include <span>

#include "sim/engine/arrivals.h"
#include "sim/engine/engine.h"
#include "sim/engine/event_loop.h"
#include "sim/engine/request_source.h"
#include "sim/fleet/admission.h"
#include "sim/fleet/router.h"
#include "sim/fleet/router_view.h"

namespace prefixsim {

// Replays `source` through `replicas` (built on `loop` with indices
// 0..n-1), routing each arrival with `router`. `block_size` is the
// replicas' (the prompt blocks a prefix-aware router reads). With
// `kv_lag` > 0 the router sees each replica's cache through its KV events
// delivered that late (router_view.h). With `scrape` > 0 it reads the
// replicas' load (requests waiting and running, KV usage, queued prompt
// tokens, active blocks) as sampled at the last multiple of `scrape` on the
// clock, as llm-d's scheduler reads vLLM's /metrics every 50 ms by default
// (`refreshMetricsInterval`): requests it routed since then are not in it.
// Only a router that reads scraped metrics does (Router::reads_scraped_load);
// one that counts its own dispatches reads the load as it is.
// `stats`, when given, receives what the router believed against the truth
// at each decision (the prefix under a lag, when it reads prompt blocks;
// the chosen replica's load under sampling).
// `admission`, when enabled, gates arrivals before the router (admission.h),
// reading the load as the router does.
FleetResult run_fleet(EventLoop& loop, RequestSource& source, std::span<Engine* const> replicas, Router& router,
                      int32_t block_size, TimeNs kv_lag = 0, RouterViewStats* stats = nullptr, TimeNs scrape = 0,
                      const AdmissionConfig& admission = {});

// A fleet's load imbalance: the largest per-replica count over the mean (1
// is even; N means one replica took everything); 0 when all are 0.
double max_over_mean(std::span<const uint64_t> per_replica);

}  // namespace prefixsim
