// Disaggregated prefill and decode: a prefill pool and a decode pool of
// vLLM replicas on one clock, a request's prompt run on a prefill instance,
// its KV moved over the links (kv_link.h) to a decode instance, which
// generates the rest.
//
// The design followed is vLLM's NixlConnector behind its disaggregation
// proxy (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py;
// tests/v1/kv_connector/nixl_integration/toy_proxy_server.py), which llm-d
// and Dynamo's vLLM workers serve with:
//   1. the proxy sends the request to a prefill instance with max_tokens 1
//      (do_remote_decode); it runs the prompt (chunked, prefix-cached) and
//      samples one token, which the proxy drops; its blocks stay held
//      (delay_free_blocks) until the decode side has read them, then are
//      freed and stay in its prefix cache;
//   2. on the prefill response the proxy picks a decode instance and sends
//      it the request (do_remote_prefill); when the request reaches the head
//      of its waiting queue the decode instance looks up its own prefix
//      cache, allocates blocks for the rest of the prompt (no room: it
//      waits, head of line: back-pressure) and reads them from the prefill
//      instance (NIXL read, WAITING_FOR_REMOTE_KVS);
//   3. once read, the decode instance recomputes the last prompt token and
//      samples the first output: the client's first token comes from the
//      decode instance, TTFT = queue + prefill + transfer + first decode.
//      Both instances keep the prompt's blocks cached for the next turn; the
//      decode instance its outputs too.
// Parameters where other designs differ (parse_disagg):
//   first_token=prefill  DistServe's and Mooncake's (Kimi) design: the
//                        prefill instance's token is the client's first;
//                        the decode instance generates the other n - 1
//                        (none with n = 1: no transfer); TTFT ends with the
//                        prefill, the transfer shows as the first ITL.
//   decode_pick=arrival  Mooncake's Conductor and Dynamo's disaggregated
//                        router pick the decode instance when the request
//                        arrives (the proxy, after the prefill).
//   local_prefill=N      conditional disaggregation (Dynamo's
//                        max_local_prefill_length, llm-d's pd threshold): a
//                        request whose prompt tokens not cached on its decode
//                        instance (picked at arrival) are at most N is
//                        prefilled there, without a transfer.
//   overlap=layerwise    Mooncake's layer-wise prefill (FAST'25, section 5.2;
//                        LMCache's layer-wise mode): each layer's KV leaves
//                        the prefill instance as that layer is computed,
//                        toward the decode instance picked at arrival. A
//                        fluid account: by the prefill's end, the bytes the
//                        link could carry over the prefill's span have
//                        crossed, at most all layers but the last (whose KV
//                        exists only at the end); the rest crosses after it,
//                        on the links with the other transfers. The bytes
//                        streamed during the prefill are counted
//                        (streamed_bytes) but do not load the links' model.
// Named designs: vllm-nixl (the default: decode, after, no local prefill,
// no overlap), dynamo (decode_pick=arrival), mooncake (first_token=prefill,
// decode_pick=arrival, overlap=layerwise).
// Admission (--admission) gates arrivals on the prefill pool's room.
// Not modelled: a transfer's timeout, prefill-side queues (Dynamo's
// max_prefill_queue_size), the links' contention during a layer-wise
// prefill.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/engine/arrivals.h"
#include "sim/engine/engine.h"
#include "sim/engine/event_loop.h"
#include "sim/engine/request_source.h"
#include "sim/fleet/admission.h"
#include "sim/fleet/kv_link.h"
#include "sim/fleet/router.h"

namespace prefixsim {

struct DisaggConfig {
  std::string design = "vllm-nixl";
  bool first_token_on_prefill = false;
  bool decode_at_arrival = false;  // always with local_prefill >= 0
  int64_t local_prefill = -1;  // < 0: always disaggregated
  bool layerwise = false;      // overlap=layerwise
  int32_t layers = 1;          // the model's (set by whoever builds the fleet; layer-wise streaming needs it)
  // Admission at the proxy (--admission, admission.h), over the prefill
  // pool: saturated when no prefill instance has room, since every request
  // starts there (a locally prefilled one too, whose verdict comes after
  // the gate).
  AdmissionConfig admission;
};

// "vllm-nixl|dynamo|mooncake[:first_token=prefill|decode,decode_pick=arrival|after,local_prefill=N]";
// InputError naming --disagg.
DisaggConfig parse_disagg(const std::string& spec);
// The spec with every parameter, as the report states it.
std::string disagg_text(const DisaggConfig& c);

struct DisaggStats {
  uint64_t routed = 0;        // client requests the proxy routed (past admission, if any)
  uint64_t split = 0;         // prefilled on the prefill pool, decoded on the decode pool
  uint64_t local = 0;         // prefilled on their decode instance (local_prefill)
  uint64_t prefill_only = 0;  // first_token=prefill and one output token: no decode leg
  uint64_t transfers = 0;
  uint64_t transfer_blocks = 0;
  uint64_t transfer_bytes = 0;
  uint64_t decode_hit_blocks = 0;  // prompt blocks the decode instance already held (not moved)
  uint64_t streamed_bytes = 0;     // of transfer_bytes: crossed during the prefill (overlap=layerwise)
  TimeNs transfer_time = 0;        // summed: blocks allocated -> KV read (latency included)
  TimeNs line_time = 0;            // summed: what each transfer would take alone on idle links
  TimeNs blocked_time = 0;         // summed: hand-off -> blocks allocated on the decode instance
  uint64_t blocked = 0;            // decode legs that waited for blocks (or behind the queue head)
};

struct DisaggResult {
  FleetResult fleet;  // replicas: the prefill pool's, then the decode pool's
  DisaggStats stats;
  std::vector<KvLinkStats> links;  // KvLinks' order: tx, rx of each instance, then the fabric
};

// Replays `source` through `engines` (built on `loop` with indices
// 0..P+D-1: the first `num_prefill` are the prefill pool), routing arrivals
// to the prefill pool with `prefill_router` and hand-offs to the decode pool
// with `decode_router`. KV moves `bytes_per_block` a block (the decode
// instance's layout) over `links`. Every engine's observer becomes the
// coordinator, which hands `observer` one record per client request (a
// split request's legs merged: RequestRecord::prefill_done and the transfer
// fields set) and every step unchanged. `nics`, when given, is each
// instance's NIC bandwidth (KvLinks).
DisaggResult run_disagg(EventLoop& loop, RequestSource& source, std::span<Engine* const> engines,
                        uint32_t num_prefill, Router& prefill_router, Router& decode_router, int32_t block_size,
                        const DisaggConfig& cfg, const KvLinkConfig& links, int64_t bytes_per_block,
                        EngineObserver* observer, std::vector<double> nics = {});

}  // namespace prefixsim
