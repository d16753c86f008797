// Routers: which replica of a fleet takes a request, decided once at its
// arrival (a request never migrates). One file per router (router_*.cpp),
// each with its idea and source in a header comment; one table names them
// all (router_registry.cpp), as policies/registry.cpp does for policies.
//
// A router sees the fleet through FleetView: each replica's load and, for
// the prefix-aware ones, which leading blocks of the prompt each replica's
// KV cache holds right now. Reading the pools directly is what llm-d's and
// Dynamo's routers reconstruct from the replicas' KV events (block stored /
// removed), here without the events' delay.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/spec_params.h"
#include "sim/base/types.h"
#include "sim/engine/request.h"

namespace prefixsim {

// What a router may ask of the fleet when it routes.
class FleetView {
 public:
  virtual ~FleetView() = default;
  virtual uint32_t size() const = 0;
  // Requests waiting or running on replica i.
  virtual size_t load(uint32_t i) const = 0;
  // Of those, the waiting (vLLM's num_requests_waiting) and the running.
  virtual size_t waiting(uint32_t i) const = 0;
  virtual size_t running(uint32_t i) const = 0;
  // The share of replica i's KV pool that requests hold (vLLM's
  // kv_cache_usage_perc: 1 - free blocks / usable blocks; cached blocks no
  // request holds count as free).
  virtual double kv_usage(uint32_t i) const = 0;
  // Prompt tokens of requests queued on replica i and not admitted yet.
  virtual int64_t queued_prompt_tokens(uint32_t i) const = 0;
  // KV blocks held by replica i's running requests.
  virtual int64_t active_blocks(uint32_t i) const = 0;
  // Replica i's KV pool in blocks (vLLM's num_gpu_blocks, which a router
  // reads from its cache config): what the capacity-aware rules weigh a
  // replica's load by in a mixed fleet. Equal for every replica of a
  // uniform fleet, where those rules are the plain ones; a view that does
  // not know the pools says 1 for each.
  virtual int64_t capacity_blocks(uint32_t) const { return 1; }
  // Leading blocks of `prompt` (full-block hashes, in order) cached on
  // replica i. Nothing is touched: the look does not count as a use.
  virtual size_t cached_prefix_blocks(uint32_t i, std::span<const BlockHash> prompt) const = 0;
  // cached_prefix_blocks of every replica, into out[0 .. size()): the same
  // numbers, which a view may look up together (the live view walks the
  // pools side by side, so that their cache misses overlap).
  virtual void cached_prefix_blocks_all(std::span<const BlockHash> prompt, std::span<size_t> out) const {
    for (uint32_t i = 0; i < size(); ++i) out[i] = cached_prefix_blocks(i, prompt);
  }
  virtual TimeNs now() const = 0;
};

struct RouteQuery {
  const Request* request = nullptr;
  // Hashes of the prompt's full blocks at the fleet's block size; filled
  // only for a router whose needs_prompt_blocks() is true.
  std::span<const BlockHash> prompt_blocks;
  int32_t block_size = 16;
};

class Router {
 public:
  virtual ~Router() = default;
  // The replica (0 .. fleet.size() - 1) that takes q.request.
  virtual uint32_t route(const RouteQuery& q, const FleetView& fleet) = 0;
  virtual bool needs_prompt_blocks() const { return false; }
  // Whether the router this one models reads the replicas' load from their
  // scraped metrics (vLLM's /metrics: llm-d's scorers, a metrics-driven
  // least-loaded balancer) rather than counting its own dispatches and
  // completions (SGLang's and Dynamo's routers): only such a router reads
  // the load sampled every --router-scrape-ms (fleet.h).
  virtual bool reads_scraped_load() const { return false; }
};

struct RouterContext {
  uint32_t replicas = 1;
  int32_t block_size = 16;
  int64_t pool_blocks = 0;            // each replica's KV pool, in blocks ...
  std::vector<int64_t> replica_blocks;  // ... or, in a mixed fleet, replica i's (by replica)
  int64_t blocks_of(uint32_t i) const { return replica_blocks.empty() ? pool_blocks : replica_blocks[i]; }
};

struct RouterInfo {
  std::string name;
  std::string summary;  // one line for --help and reports
  std::function<std::unique_ptr<Router>(SpecParams&, const RouterContext&)> make;
};

const std::vector<RouterInfo>& router_registry();
// Parses "name[:key=value,...]" and builds the router; InputError on an
// unknown name or a bad parameter.
std::unique_ptr<Router> make_router(std::string_view spec, const RouterContext& ctx);
// The names, comma-separated, for help texts and errors.
std::string router_names();

// The routers' factories (one per router_*.cpp).
std::unique_ptr<Router> make_round_robin_router(SpecParams&, const RouterContext&);
std::unique_ptr<Router> make_random_router(SpecParams&, const RouterContext&);
std::unique_ptr<Router> make_least_loaded_router(SpecParams&, const RouterContext&);
std::unique_ptr<Router> make_session_router(SpecParams&, const RouterContext&);
std::unique_ptr<Router> make_prefix_router(SpecParams&, const RouterContext&);
std::unique_ptr<Router> make_kv_aware_router(SpecParams&, const RouterContext&);
std::unique_ptr<Router> make_llm_d_router(SpecParams&, const RouterContext&);

// The replica with the least load, ties to the lowest index (the rule
// least-loaded uses, and the fallback of the prefix-aware routers). Load is
// weighed by capacity: the fewest requests per KV block (capacity_blocks),
// compared exactly (load_i x capacity_j < load_j x capacity_i), which is the
// fewest requests when the pools are alike.
uint32_t least_loaded_replica(const FleetView& fleet);
// Whether replica a carries less load per KV block than replica b.
bool less_loaded(const FleetView& fleet, uint32_t a, uint32_t b);

}  // namespace prefixsim
