#include "sim/study/sweep_run.h"

#include <cmath>

#include "sim/base/error.h"
#include "sim/scenario/offline_future.h"
#include "sim/scenario/run_memory.h"
#include "sim/engine/vector_source.h"

namespace prefixsim {
namespace {

// The settings that decide a point's requests: points that agree on them
// share one parsed input.
const char* const kInputKeys[] = {"trace",  "workload",         "requests",          "rate",
                                  "time_scale", "seed",          "format",            "trace_block_size",
                                  "conversation_rate", "sort",   "warmup",            "warmup_seconds"};
// ... and those resolve_scenario reads (catalogs, profile, load).
const char* const kResolveKeys[] = {"model", "gpu", "tp", "profile", "model_file", "gpu_file"};

std::string identity(const Scenario& s, bool with_resolve) {
  nlohmann::ordered_json j;
  for (const char* k : kInputKeys) j[k] = scenario_value(s, k);
  if (!s.trace.empty()) j["workload"] = nullptr;
  if (with_resolve)
    for (const char* k : kResolveKeys) j[k] = scenario_value(s, k);
  return j.dump();
}

}  // namespace

SweepRunner::SweepRunner(const Grid& grid, const std::vector<GridPoint>& points, const std::vector<size_t>& todo)
    : points_(points) {
  std::map<std::string, ResolvedScenario> resolved;  // catalogs and load, once per distinct setting
  for (size_t i : todo) {
    const GridPoint& p = points[i];
    const Scenario& s = p.scenario;
    Prepared prep;
    try {
      const std::string rid = identity(s, true);
      if (!resolved.count(rid)) resolved.emplace(rid, resolve_scenario(s));
      prep.resolved = resolved.at(rid);
      prep.sizing = size_kv_pool(kv_sizing_input(s, prep.resolved));
      if (prep.sizing.num_blocks < 2)
        throw InputError("a pool needs at least 2 blocks (block 0 is the null block)");
      const std::vector<TierSpec> tiers = scenario_tiers(s, *prep.resolved.model);
      const std::vector<FleetPool> pools = fleet_pools(s, prep.resolved);
      check_run_fits_memory(pools.empty() ? run_blocks(s, prep.sizing, tiers) : run_blocks(pools, tiers),
                            fleet_size_flag(s));
    } catch (const InputError& e) {
      point_error(grid, p, key_of_message(e.what()), e.what());
    }
    const std::string id = identity(s, false);
    auto& input = inputs_[id];
    if (!input) {  // parsed once per process
      input = std::make_unique<Input>();
      auto src = open_scenario_input(s, prep.resolved);
      input->format = src->format();
      Request r;
      while (src->next(r)) input->requests.push_back(r);
      if (input->requests.empty()) point_error(grid, p, s.trace.empty() ? "requests" : "trace", "no requests");
      if (input->requests.back().warmup)  // warm-up requests come first: the last one warm means all are
        point_error(grid, p, s.warmup ? "warmup" : "warmup_seconds",
                    "the warm-up covers all " + std::to_string(input->requests.size()) +
                        " requests; none is left to count");
    }
    prep.input = input.get();
    prep.ctx.block_size = s.block_size;
    if (s.mode == "cache") {  // hashed once per block size (and once more with belady's future)
      const bool future = needs_future(s.policy);
      auto key = std::make_pair(s.block_size, future);
      auto it = input->prepared.find(key);
      if (it == input->prepared.end()) {
        PolicyContext ctx;
        ctx.block_size = s.block_size;
        PreparedTrace trace;
        if (future) {
          VectorSource src(std::span<const Request>(input->requests), input->format);
          trace = prepass(src, s.block_size, true, ctx);
        } else {
          trace = prepare_trace(std::span<const Request>(input->requests), s.block_size);
        }
        it = input->prepared.emplace(key, std::make_pair(std::move(trace), ctx)).first;
      }
      prep.prepared = &it->second.first;
      prep.ctx = it->second.second;
    }
    ready_.emplace(i, std::move(prep));
  }
}

double SweepRunner::weight(size_t i) const {
  const Prepared& p = ready_.at(i);
  const Scenario& s = points_[i].scenario;
  return static_cast<double>(p.input->requests.size()) * static_cast<double>(p.sizing.num_blocks) *
         static_cast<double>(fleet_replicas(s)) * (s.mode == "engine" ? 10.0 : 1.0);
}

std::string SweepRunner::run(size_t i) const {
  const Prepared& p = ready_.at(i);
  const Scenario& s = points_[i].scenario;
  const PointInput input{&p.input->requests, p.prepared, p.input->format};
  const PointResult r = run_point(input, s, p.resolved, s.policy, p.ctx, p.sizing.num_blocks);
  if (r.error) std::rethrow_exception(r.error);
  nlohmann::ordered_json row;
  row["params"] = points_[i].params;
  const nlohmann::ordered_json figures = point_figures(r, s, p.sizing.num_blocks, p.sizing.capacity_tokens);
  for (auto it = figures.begin(); it != figures.end(); ++it) row[it.key()] = it.value();
  return row.dump();
}

}  // namespace prefixsim
