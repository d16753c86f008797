// `prefixsim plan`: the cheapest fleet meeting an SLO. For every fleet shape
// (a TP, and a value of each extra resource dimension below) it finds the
// fewest replicas meeting the SLO by doubling and bisection (plan_search.h,
// which says where that assumption of monotonicity fails and how it is
// guarded), then prices each shape's answer and picks the cheapest. With
// disaggregated serving asked for, the shapes also include split fleets (a
// prefill TP and a decode TP, sim/fleet/disagg.h), each searched over its
// prefill and decode instance counts (search_split); the aggregated shapes
// stay candidates. Every
// run is the engine over the trace parsed once (point_run.h); the shapes are
// searched on threads, each search sequential, so the runs listed and the
// answer do not depend on timing. A thread with no shape left runs the next
// count of a doubling ahead (the search takes that row when it asks for it;
// one never asked for is dropped): a plan of one shape, or the last shape
// of several, keeps two threads busy.
//
// What cannot run is refused (InputError, exit 2) before any search: a shape
// from an explicit TP list or a resource value that cannot run (a TP that
// does not divide the heads, a model that does not fit), a plan where no
// shape can run, and a largest fleet (--max-replicas of the largest shape)
// whose pools and tiers would not fit this machine's memory
// (sim/scenario/run_memory.h). Only the default TP list is a survey: a TP of
// it that the model cannot take is listed in plan.json as "cannot run".
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.h"
#include "sim/study/plan_search.h"

namespace prefixsim {

// A resource a replica may have besides its GPUs: a scenario key whose
// values plan tries (from FLAG) and prices per unit and hour (from
// COST_FLAG). A dimension is offered once its scenario key exists: adding
// one is one row of the table in plan_run.cpp.
struct PlanDimension {
  const char* key;        // scenario key, per replica
  const char* flag;       // values to try: "0,40,80"
  const char* unit;       // "GiB"
  const char* cost_flag;  // price of one unit for one hour
  const char* help;
};
// The dimensions offered, in table order.
std::vector<const PlanDimension*> plan_dimensions();

struct PlanOptions {
  Scenario base;                        // validated, engine mode; tp and replicas are searched
  std::vector<SloTerm> slo;
  std::vector<int> tps = {1, 2, 4, 8};
  bool tps_given = false;               // an explicit list: every TP of it must run
  // Split fleets (base's disaggregated settings: design, links, pool GPUs
  // and routers; its prefill and decode replicas are searched): every
  // prefill TP x every decode TP. Empty: aggregated fleets only.
  std::vector<int> prefill_tps, decode_tps;
  bool split_tps_given = false;         // explicit lists: every pair must run
  // A mixed fleet (--replica-groups): two groups whose counts are searched
  // (search_split); each group's server alone is also an aggregated shape.
  // Empty: none.
  std::vector<ReplicaGroup> mix;
  int64_t max_replicas = 64;            // the largest fleet tried per shape (split: per pool; a mix: per group)
  std::vector<std::string> routers;     // also run at the answer, to compare
  std::optional<double> gpu_cost;       // per GPU-hour; unset: the catalog's (0: cost = GPUs)
  // Per GPU-hour of a named GPU (--gpu-cost NAME=PRICE,...: a mix's or a
  // split fleet's GPUs at their own prices); before gpu_cost and the catalog.
  std::map<std::string, double> gpu_costs;
  // By plan_dimensions(): the values to try ({0} when not given) and the
  // price of one unit-hour.
  std::vector<std::vector<double>> extra_values;
  std::vector<double> extra_costs;
  int threads = 1;                      // shapes searched at once
  bool progress = false;                // a progress line on stderr
  // Run every fleet of the search to the end. Default: a run stops once a
  // latency term of the SLO can no longer hold (StopBound, point_run.h): it
  // fails either way, so the search, its runs and the answer are the same,
  // but that run's figures are not measured (its row says where it stopped).
  bool full_runs = false;
};

struct PlanResult {
  nlohmann::ordered_json plan;  // plan.json, schema prefixsim.plan/1
  bool met = false;             // some fleet meets the SLO
  size_t fleets_run = 0;        // runs made, those run ahead and never asked for included
};

// InputError (exit 2) for what cannot run, before any run; rethrows what a
// run threw.
PlanResult run_plan(const PlanOptions& o);

// --gpu-cost: one price for every GPU (gpu_cost), or NAME=PRICE,... for each
// named one (gpu_costs). InputError naming the flag.
void parse_gpu_costs(const std::string& text, PlanOptions& o);
// --replica-groups for plan: two groups whose counts plan searches (so no
// x=). InputError naming the flag.
std::vector<ReplicaGroup> parse_plan_mix(const std::string& spec, int default_tp);

}  // namespace prefixsim
