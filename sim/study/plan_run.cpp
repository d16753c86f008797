#include "sim/study/plan_run.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <exception>
#include <iomanip>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include "prefixsim_config.h"
#include "reports/outputs.h"
#include "reports/plan_text.h"
#include "sim/base/error.h"
#include "sim/base/interrupt.h"
#include "sim/base/parallel_for.h"
#include "sim/base/progress_line.h"
#include "sim/base/text_fields.h"
#include "sim/cost/catalog.h"
#include "sim/cost/kv_sizing.h"
#include "sim/fleet/admission.h"
#include "sim/scenario/point_run.h"
#include "sim/scenario/run_memory.h"
#include "sim/scenario/scenario_fleet.h"

namespace prefixsim {

namespace {

using ojson = nlohmann::ordered_json;

const PlanDimension kDimensions[] = {
    {"kv_offloading_size", "offload", "GiB", "cpu-gib-cost",
     "CPU offload sizes to try, GiB per replica (the KV tier below the GPU), e.g. 0,40,80"},
};

// One fleet shape: a TP (or a split fleet's prefill TP and decode TP, or a
// mix's two groups) and a value of every extra dimension.
struct Shape {
  int tp = 1;
  int decode_tp = 0;          // > 0: a split fleet, prefill TP `tp`, decode TP this; a mix: the second group's TP
  std::string gpu;            // aggregated: its GPU, "" for --gpu; a mix: the first group's
  std::string gpu2;           // a mix: the second group's GPU
  bool mixed = false;         // a mixed fleet of two groups (--replica-groups), counts searched
  std::vector<double> extra;  // by dimension
  Scenario scenario;          // replicas set per run
  ResolvedScenario resolved;
  KvSizing sizing;            // a replica's pool (split: a pool on the scenario's GPU and TP; a mix: the first group's)
  RunBlocks largest;          // its blocks at the most replicas tried
  std::string refusal;        // why it cannot run (the model does not fit ...)
  bool refusal_fatal = false; // the user asked for it: exit 2, not a listed shape
  SearchResult search;        // aggregated
  SplitSearchResult split;    // split or mix (prefill: the first group's count, decode: the second's)
  std::vector<ojson> runs;    // in the order run
  double cost_per_replica = 0;  // split: a prefill instance; a mix: one of the first group
  double cost_per_decode = 0;   // split: a decode instance; a mix: one of the second group
  bool is_split() const { return decode_tp > 0 && !mixed; }
  bool two_pools() const { return decode_tp > 0; }  // split or mix: two counts searched
  bool met() const { return two_pools() ? split.prefill > 0 : search.answer > 0; }
  int64_t instances() const { return two_pools() ? split.prefill + split.decode : search.answer; }
  int64_t gpus() const { return two_pools() ? split.prefill * tp + split.decode * decode_tp : search.answer * tp; }
  double cost_of(int64_t p, int64_t d) const {
    return static_cast<double>(p) * cost_per_replica + static_cast<double>(d) * cost_per_decode;
  }
  double cost() const { return two_pools() ? cost_of(split.prefill, split.decode) : cost_of(search.answer, 0); }
  // A mix of n of the first group and d of the second, as --replica-groups.
  std::string mix_spec(int64_t n, int64_t d) const {
    return gpu + ":tp=" + std::to_string(tp) + ":x=" + std::to_string(n) + ";" + gpu2 + ":tp=" +
           std::to_string(decode_tp) + ":x=" + std::to_string(d);
  }
  // A mix's groups as plan.json gives them, with their counts when given.
  nlohmann::ordered_json groups_json(int64_t n = -1, int64_t d = -1) const {
    nlohmann::ordered_json a = {{"gpu", gpu}, {"tp", tp}}, b = {{"gpu", gpu2}, {"tp", decode_tp}};
    if (n >= 0) a["replicas"] = n, b["replicas"] = d;
    return nlohmann::ordered_json::array({a, b});
  }
};

// A shape's kind: aggregated (TP, on `gpu` or --gpu), split (prefill TP,
// decode TP), or a mix of two groups.
Shape shape_kind(int tp, int decode_tp = 0, const std::string& gpu = "") {
  Shape s;
  s.tp = tp;
  s.decode_tp = decode_tp;
  s.gpu = gpu;
  return s;
}
Shape mix_kind(const std::vector<ReplicaGroup>& mix) {
  Shape s = shape_kind(mix[0].tp, mix[1].tp, mix[0].gpu);
  s.gpu2 = mix[1].gpu;
  s.mixed = true;
  return s;
}

std::string value_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string shape_name(const Shape& s, const std::vector<const PlanDimension*>& dims) {
  std::string n = s.mixed      ? "mix " + s.gpu + " TP " + std::to_string(s.tp) + " + " + s.gpu2 + " TP " +
                                     std::to_string(s.decode_tp)
                  : s.is_split() ? "prefill TP " + std::to_string(s.tp) + " + decode TP " + std::to_string(s.decode_tp)
                  : s.gpu.empty() ? "TP " + std::to_string(s.tp)
                                  : s.gpu + " TP " + std::to_string(s.tp);
  for (size_t d = 0; d < dims.size(); ++d)
    n += ", " + std::string(dims[d]->key) + " " + value_text(s.extra[d]) + " " + dims[d]->unit;
  return n;
}

// The base scenario without its disaggregated settings: an aggregated shape's.
Scenario aggregated(const Scenario& base) {
  Scenario s = base;
  const Scenario d;
  s.prefill_replicas = d.prefill_replicas, s.decode_replicas = d.decode_replicas;
  s.prefill_gpu = d.prefill_gpu, s.decode_gpu = d.decode_gpu, s.prefill_tp = d.prefill_tp, s.decode_tp = d.decode_tp;
  s.prefill_router = d.prefill_router, s.decode_router = d.decode_router, s.disagg = d.disagg;
  s.kv_link_gbps = d.kv_link_gbps, s.kv_link_latency_us = d.kv_link_latency_us, s.kv_fabric_gbps = d.kv_fabric_gbps;
  return s;
}

std::map<std::string, double> figures_of(const ojson& row) {
  std::map<std::string, double> f;
  for (auto it = row.begin(); it != row.end(); ++it)
    if (it.value().is_number()) f[it.key()] = it.value().get<double>();
  return f;
}

// A plan from its options to plan.json: the shapes, the trace parsed once,
// each shape's search, the cheapest answer and the routers at it.
class Planner {
 public:
  explicit Planner(const PlanOptions& o);
  PlanResult run();

 private:
  Shape make_shape(Shape s, const std::vector<size_t>& at) const;
  RunBlocks largest_blocks(const Shape& s, std::vector<FleetPool> pools) const;
  double gpu_hour(const GpuSpec& gpu) const;
  void build_shapes();
  void refuse_what_cannot_run() const;
  void check_memory() const;
  void read_trace();
  ojson run_fleet(const Shape& shape, int64_t n, int64_t decode, const std::string& router, bool may_stop = true);
  ojson searched_row(size_t i, int64_t n);
  bool run_one_ahead(std::unique_lock<std::mutex>& lock);
  void search(size_t i);
  void search_shapes();
  const Shape* cheapest() const;
  std::vector<ojson> routers_at(const Shape& best);
  ojson shape_json(const Shape& s) const;
  ojson answer_json(const Shape& best) const;
  std::string summary(const Shape* best) const;
  ojson document(const Shape* best, const std::vector<ojson>& router_rows) const;
  void keep_error();

  const PlanOptions& o_;
  const std::vector<const PlanDimension*> dims_ = plan_dimensions();
  const std::vector<StopBound> stop_bounds_;  // what a search's run may stop at (none with --full-runs)
  const ResolvedScenario resolved0_;  // the base's: its GPU's price, its input
  double gpu_cost_ = 0;
  bool priced_ = false;
  std::string cost_unit_;
  // Rows carry refusal_rate: --admission sheds, or the SLO bounds it.
  bool with_refusals_ = false;
  std::vector<Shape> shapes_;
  std::vector<Request> requests_;
  std::string format_;
  PolicyContext ctx_;
  ProgressLine progress_;
  std::mutex mu_;  // guards what the threads share: runs_done_, progress_, error_, the runs ahead
  size_t runs_done_ = 0;
  // Runs ahead: a thread with no shape left to search runs the doubling's
  // next count of a shape still searching (its search has only failed so
  // far, so it asks that count next unless the run it waits on meets). The
  // search takes the row (waiting while it runs) instead of running it; a
  // row run ahead and never asked is dropped, so plan.json and the runs it
  // lists are those of the searches alone, whatever the timing.
  struct RowSlot {
    bool done = false;
    ojson row;
    std::exception_ptr error;
    std::atomic<bool> abandon{false};  // a run ahead no search will ask for: ends at its next finished request
  };
  void ran(size_t i, int64_t n, RowSlot& slot);
  void abandon_ahead(size_t i, int64_t above);
  std::map<std::pair<size_t, int64_t>, std::shared_ptr<RowSlot>> rows_;  // (shape, replicas): aggregated shapes
  std::vector<int64_t> doubling_at_;  // by shape: the doubling's count its search waits on; 0: none
  size_t searching_ = 0;              // shapes not yet searched to the end
  std::condition_variable changed_;   // a search asked, a run ended, a search ended
  std::chrono::steady_clock::time_point start_;
  std::exception_ptr error_;
};

Planner::Planner(const PlanOptions& o)
    : o_(o),
      stop_bounds_(o.full_runs ? std::vector<StopBound>{} : stop_bounds_of(o.slo)),
      resolved0_(resolve_scenario(o.base)),
      progress_(o.progress) {
  const auto named = o.gpu_costs.find(resolved0_.gpu->name);
  gpu_cost_ = named != o.gpu_costs.end() ? named->second : o.gpu_cost.value_or(resolved0_.gpu->cost_per_hour);
  priced_ = gpu_cost_ > 0 || !o.gpu_costs.empty();
  cost_unit_ = priced_ ? "per hour" : "GPUs";
  ctx_.block_size = o.base.block_size;
  with_refusals_ = parse_admission(o.base.admission).enabled ||
                   std::any_of(o.slo.begin(), o.slo.end(), [](const SloTerm& t) { return t.metric == "refusal_rate"; });
}

// A GPU-hour of `gpu`: its own --gpu-cost NAME=PRICE, else --gpu-cost, else
// its catalog price (a split fleet's pools and a mix's groups may sit on
// other GPUs than --gpu), else 1 (cost = GPUs).
double Planner::gpu_hour(const GpuSpec& gpu) const {
  if (!priced_) return 1.0;
  if (const auto it = o_.gpu_costs.find(gpu.name); it != o_.gpu_costs.end()) return it->second;
  if (o_.gpu_cost) return *o_.gpu_cost;
  if (!(gpu.cost_per_hour > 0))
    throw InputError("--gpu-cost: no price for " + gpu.name + " (a pool's or a group's GPU), though " +
                     (o_.gpu_costs.empty() ? "the catalog gives one for " + resolved0_.gpu->name
                                           : std::string("--gpu-cost names others")) +
                     "; give --gpu-cost " + gpu.name + "=PRICE");
  return gpu.cost_per_hour;
}

// A two-pool shape's pool k as messages name it.
std::string pool_name(const Shape& s, size_t k) {
  return k == 0 ? (s.mixed ? "first group" : "prefill") : (s.mixed ? "second group" : "decode");
}

// The blocks of the shape's largest fleet: --max-replicas replicas (split or
// a mix: of each pool, `pools`).
RunBlocks Planner::largest_blocks(const Shape& s, std::vector<FleetPool> pools) const {
  if (!s.two_pools()) {
    Scenario largest = s.scenario;
    largest.replicas = static_cast<int32_t>(o_.max_replicas);
    return run_blocks(largest, s.sizing, scenario_tiers(s.scenario, *s.resolved.model));
  }
  RunBlocks all;
  all.replicas = 2 * o_.max_replicas;
  for (size_t k = 0; k < pools.size(); ++k) {
    FleetPool& pool = pools[k];
    pool.scenario.replicas = static_cast<int32_t>(o_.max_replicas);
    const RunBlocks b = run_blocks(pool.scenario, pool.kv, scenario_tiers(pool.scenario, *pool.resolved.model));
    for (RunBlocks::Part part : b.parts) {
      part.what = pool_name(s, k) + " " + part.what;
      all.parts.push_back(part);
    }
  }
  return all;
}

// `s` says the kind (aggregated, split, mix), its TPs and GPUs; this adds
// its scenario, pools, prices and largest fleet, or why it cannot run.
Shape Planner::make_shape(Shape s, const std::vector<size_t>& at) const {
  const int tp = s.tp, decode_tp = s.decode_tp;
  s.scenario = s.is_split() ? o_.base : aggregated(o_.base);
  s.scenario.tp = tp;
  if (!s.gpu.empty()) s.scenario.gpu = s.gpu;
  if (s.mixed) s.scenario.replica_groups = s.mix_spec(1, 1);  // one of each to validate
  if (s.is_split()) {  // one of each to validate; the search sets the counts
    s.scenario.prefill_tp = tp;
    s.scenario.decode_tp = decode_tp;
    s.scenario.prefill_replicas = s.scenario.decode_replicas = 1;
  }
  double extras = 0;  // an instance's extra resources, per hour
  for (size_t d = 0; d < dims_.size(); ++d) {
    s.extra.push_back(o_.extra_values[d][at[d]]);
    apply_scenario_value("--" + std::string(dims_[d]->flag), 0, dims_[d]->key, YAML::Node(value_text(s.extra.back())),
                         s.scenario);
    extras += s.extra.back() * o_.extra_costs[d];
  }
  std::vector<FleetPool> pools;  // split: prefill, decode; a mix: its groups
  try {  // what the TPs decide: a default TP the model cannot take is only listed
    validate(s.scenario);
    s.resolved = resolve_scenario(s.scenario);
    s.sizing = size_kv_pool(kv_sizing_input(s.scenario, s.resolved));
    if (s.sizing.num_blocks < 2) throw InputError("the KV pool has fewer than 2 blocks");
    pools = fleet_pools(s.scenario, s.resolved);
    for (size_t k = 0; k < pools.size(); ++k)
      if (pools[k].kv.num_blocks < 2) throw InputError("the " + pool_name(s, k) + " pool's KV pool has fewer than 2 blocks");
  } catch (const InputError& e) {
    s.refusal = e.what();
    // Asked for by name (an explicit TP list, a mix, a group's own server): exit 2.
    s.refusal_fatal = s.mixed || !s.gpu.empty() || (s.is_split() ? o_.split_tps_given : o_.tps_given);
    return s;
  }
  // Priced by each pool's GPU (a split fleet's pools may sit on other GPUs).
  s.cost_per_replica = gpu_hour(*(pools.empty() ? s.resolved : pools[0].resolved).gpu) * tp + extras;
  if (s.two_pools()) s.cost_per_decode = gpu_hour(*pools[1].resolved.gpu) * decode_tp + extras;
  try {  // what the resource values decide: always the user's
    s.largest = largest_blocks(s, pools);
  } catch (const InputError& e) {
    s.refusal = e.what();
    s.refusal_fatal = true;
  }
  return s;
}

// Every TP x every extra value, the first dimension varying fastest; then
// every prefill TP x decode TP x extra value; then a mix's two groups, each
// alone (where --gpu and --tp do not already give it) and together.
void Planner::build_shapes() {
  std::vector<Shape> kinds;
  for (int tp : o_.tps) kinds.push_back(shape_kind(tp));
  for (int p : o_.prefill_tps)
    for (int d : o_.decode_tps) kinds.push_back(shape_kind(p, d));
  if (o_.mix.size() == 2) {
    for (const ReplicaGroup& g : o_.mix)
      if (g.gpu != o_.base.gpu || std::find(o_.tps.begin(), o_.tps.end(), g.tp) == o_.tps.end())
        kinds.push_back(shape_kind(g.tp, 0, g.gpu));
    kinds.push_back(mix_kind(o_.mix));
  }
  for (const Shape& kind : kinds) {
    std::vector<size_t> at(dims_.size(), 0);
    for (;;) {
      shapes_.push_back(make_shape(kind, at));
      size_t d = 0;
      while (d < dims_.size() && ++at[d] == o_.extra_values[d].size()) at[d++] = 0;
      if (d == dims_.size()) break;
    }
  }
}

void Planner::refuse_what_cannot_run() const {
  const Shape* runnable = nullptr;
  for (const Shape& s : shapes_) {
    if (s.refusal_fatal) throw InputError(s.refusal + " (plan's fleet shape " + shape_name(s, dims_) + ")");
    if (s.refusal.empty() && !runnable) runnable = &s;
  }
  if (!runnable && !shapes_.empty())
    throw InputError(shapes_.front().refusal + " (at " + shape_name(shapes_.front(), dims_) +
                     "; no fleet shape plan may try can run)");
}

// The largest fleet the search may reach: --max-replicas of the shape with
// the most blocks (shapes searched at once add up; this is the floor).
void Planner::check_memory() const {
  const Shape* largest = nullptr;
  for (const Shape& s : shapes_)
    if (s.refusal.empty() && (!largest || s.largest.total() > largest->largest.total())) largest = &s;
  if (!largest) return;
  try {
    check_run_fits_memory(largest->largest, "--max-replicas");
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (the largest fleet plan may try: " + shape_name(*largest, dims_) +
                     " x " + std::to_string(o_.max_replicas) + " replicas)");
  }
}

void Planner::read_trace() {
  auto src = open_scenario_input(o_.base, resolved0_);
  format_ = src->format();
  Request r;
  while (src->next(r)) requests_.push_back(r);
  if (requests_.empty()) throw InputError(o_.base.trace + ": the trace has no requests");
  make_policy(o_.base.policy, ctx_);  // a bad policy is exit 2 before the first run
}

// One run: the shape's fleet of n replicas (split: n prefill and `decode`
// decode instances; a mix: n of the first group and `decode` of the second)
// behind `router`, as plan.json's row. With `may_stop`, it stops once an
// SLO latency term can no longer hold: the row then fails, its figures
// null, and "stopped" says where.
ojson Planner::run_fleet(const Shape& shape, int64_t n, int64_t decode, const std::string& router, bool may_stop) {
  Scenario s = shape.scenario;
  if (shape.is_split()) {
    s.prefill_replicas = static_cast<int32_t>(n);
    s.decode_replicas = static_cast<int32_t>(decode);
  } else if (shape.mixed) {
    s.replica_groups = shape.mix_spec(n, decode);
  } else {
    s.replicas = static_cast<int32_t>(n);
  }
  s.router = router;
  PointInput input{&requests_, nullptr, format_};
  if (may_stop) input.stop_bounds = stop_bounds_;
  const PointResult r = run_point(input, s, shape.resolved, s.policy, ctx_, shape.sizing.num_blocks);
  if (r.error) std::rethrow_exception(r.error);
  ojson row;
  row["fleet"] = shape_name(shape, dims_);
  if (shape.is_split()) {
    row["prefill_tp"] = shape.tp;
    row["decode_tp"] = shape.decode_tp;
  } else if (shape.mixed) {
    row["groups"] = shape.groups_json(n, decode);
  } else {
    row["tp"] = shape.tp;
  }
  for (size_t d = 0; d < dims_.size(); ++d) row[dims_[d]->key] = shape.extra[d];
  row["replicas"] = n + decode;
  if (shape.is_split()) {
    row["prefill_replicas"] = n;
    row["decode_replicas"] = decode;
  }
  row["router"] = router;
  row["gpus"] = n * shape.tp + decode * shape.decode_tp;
  row["cost"] = shape.cost_of(n, decode);
  const ojson figures = point_figures(r, s, shape.sizing.num_blocks, shape.sizing.capacity_tokens);
  for (auto it = figures.begin(); it != figures.end(); ++it) row[it.key()] = it.value();
  if (shape.is_split()) {  // the mean TTFT of a split request, in its parts
    const auto ms = [](double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); };
    row["ttft_parts_mean_ms"] = {{"queue", ms(r.ttft_parts.queue)},
                                 {"prefill", ms(r.ttft_parts.prefill)},
                                 {"transfer", ms(r.ttft_parts.transfer)},
                                 {"first_decode", ms(r.ttft_parts.first_decode)}};
  }
  if (with_refusals_) {  // requests not served (never fit, or shed by --admission) over those offered
    const uint64_t served = r.counts.requests, refused = r.counts.refused_requests;
    row["refusal_rate"] = served + refused ? static_cast<double>(refused) / static_cast<double>(served + refused) : 0.0;
  }
  if (r.stopped) {  // not measured: only where it stopped is known
    for (auto it = row.begin(); it != row.end(); ++it)
      if (figures.contains(it.key()) && it.key() != "num_blocks" && it.key() != "capacity_tokens") it.value() = nullptr;
    if (row.contains("ttft_parts_mean_ms")) row["ttft_parts_mean_ms"] = nullptr;
    if (row.contains("refusal_rate")) row["refusal_rate"] = nullptr;
    row["stopped"] = {{"bound", r.stopped->bound},
                      {"finished_requests", r.stopped->finished},
                      {"above_limit", r.stopped->above},
                      {"requests", r.stopped->requests}};
  }
  row["meets"] = !r.stopped && meets_slo(o_.slo, figures_of(row));
  const std::lock_guard<std::mutex> lock(mu_);
  ++runs_done_;
  if (progress_.due())
    progress_.draw("plan: " + std::to_string(runs_done_) + " runs done in " +
                   duration_text(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count()) +
                   " (last: " + row["fleet"].get<std::string>() + " x " + plan_size_text(row) + ")");
  return row;
}

// The first error any thread met wins; the others finish their run and stop.
void Planner::keep_error() {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!error_) error_ = std::current_exception();
}

// The row of n replicas of aggregated shape i, as its search asks for it:
// taken from a run ahead (waited for while it runs), else run here. While
// the shape has only failed, n is a count of its doubling: threads running
// ahead start from there.
ojson Planner::searched_row(size_t i, int64_t n) {
  const Shape& shape = shapes_[i];
  const bool doubling =
      std::none_of(shape.runs.begin(), shape.runs.end(), [](const ojson& r) { return r["meets"].get<bool>(); });
  std::unique_lock<std::mutex> lock(mu_);
  doubling_at_[i] = doubling ? n : 0;
  std::shared_ptr<RowSlot>& slot = rows_[{i, n}];
  changed_.notify_all();
  if (slot) {  // run ahead: wait for it, running ahead meanwhile
    const std::shared_ptr<RowSlot> ahead = slot;
    while (!ahead->done)
      if (!run_one_ahead(lock)) changed_.wait(lock);
    if (!(ahead->error && ahead->abandon)) {  // one abandoned and asked after all is run again, below
      if (ahead->error) std::rethrow_exception(ahead->error);
      return ahead->row;
    }
  }
  const std::shared_ptr<RowSlot> mine = slot = std::make_shared<RowSlot>();
  lock.unlock();
  mine->row = run_fleet(shape, n, 0, o_.base.router);  // a throw ends the search; the slot is never asked again
  lock.lock();
  ran(i, n, *mine);
  return mine->row;
}

// Under mu_: the run of n replicas of shape i (asked or ahead) is done. If
// it met, the doubling ends here or below, whoever waits on what, so the
// runs ahead past the probe's count go now.
void Planner::ran(size_t i, int64_t n, RowSlot& slot) {
  slot.done = true;
  if (!slot.error && slot.row["meets"].get<bool>()) abandon_ahead(i, n + 1);
  changed_.notify_all();
}

// Under mu_: shape i's runs ahead above `above` replicas will not be asked
// for: its doubling met at n (the bisection stays below n, the probe asks
// n + 1 at most, so `above` is n + 1), or its search ended (0). They stop
// at their next finished request, and their rows are dropped.
void Planner::abandon_ahead(size_t i, int64_t above) {
  for (auto it = rows_.lower_bound({i, above + 1}); it != rows_.end() && it->first.first == i; ++it)
    if (!it->second->done) it->second->abandon = true;
}

// Under `lock`: runs the count after the one some shape's doubling asked
// for, if it is neither run nor under way, and returns true once it has run
// (lock held again); false when there is none. One count ahead, not more:
// a doubling that meets wastes at most part of one run (abandoned once a
// count below it meets, abandon_ahead), and on two threads the search and
// the run ahead still overlap throughout.
bool Planner::run_one_ahead(std::unique_lock<std::mutex>& lock) {
  for (size_t i = 0; i < shapes_.size(); ++i) {
    const int64_t n = doubling_at_[i] > 0 ? doubling_next(doubling_at_[i], o_.max_replicas) : 0;
    if (n == 0 || rows_.count({i, n})) continue;
    const std::shared_ptr<RowSlot> slot = rows_[{i, n}] = std::make_shared<RowSlot>();
    lock.unlock();
    abandon_flag = &slot->abandon;
    try {
      slot->row = run_fleet(shapes_[i], n, 0, o_.base.router);
    } catch (...) {
      slot->error = std::current_exception();  // thrown where the search asks for it, if it does
    }
    abandon_flag = nullptr;
    lock.lock();
    ran(i, n, *slot);
    return true;
  }
  return false;
}

// Shape i's search; a run's row is kept with it.
void Planner::search(size_t i) {
  Shape& shape = shapes_[i];
  const std::string& router = o_.base.router;
  if (!shape.two_pools()) {
    shape.search = search_replicas(o_.max_replicas, [&](int64_t n) {
      shape.runs.push_back(searched_row(i, n));
      return shape.runs.back()["meets"].get<bool>();
    });
    return;
  }
  shape.split = search_split(
      o_.max_replicas, [&](int64_t p, int64_t d) { return shape.cost_of(p, d); },
      [&](int64_t p, int64_t d) {
        shape.runs.push_back(run_fleet(shape, p, d, router));
        return shape.runs.back()["meets"].get<bool>();
      });
}

// Each shape's search on a thread of its own; a thread with no shape left
// runs ahead of the searches still going (see rows_).
void Planner::search_shapes() {
  start_ = std::chrono::steady_clock::now();
  doubling_at_.assign(shapes_.size(), 0);
  searching_ = shapes_.size();
  std::atomic<size_t> next{0};
  const auto worker = [&] {
    for (size_t i = next++; i < shapes_.size(); i = next++) {
      if (shapes_[i].refusal.empty()) {
        try {
          search(i);
        } catch (...) {
          keep_error();
        }
      }
      const std::lock_guard<std::mutex> lock(mu_);
      doubling_at_[i] = 0;
      abandon_ahead(i, 0);
      --searching_;
      changed_.notify_all();
    }
    std::unique_lock<std::mutex> lock(mu_);
    while (searching_ > 0 && !error_)
      if (!run_one_ahead(lock)) changed_.wait(lock);
  };
  // No more threads than runs a doubling could ever ask for.
  size_t counts = 0;
  for (int64_t n = 1; n > 0; n = doubling_next(n, o_.max_replicas)) ++counts;
  const int threads = static_cast<int>(std::clamp<size_t>(static_cast<size_t>(std::max(o_.threads, 1)), 1, shapes_.size() * counts));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

// The cheapest answer; ties to fewer GPUs, then the shape listed first.
const Shape* Planner::cheapest() const {
  const Shape* best = nullptr;
  for (const Shape& s : shapes_) {
    if (!s.refusal.empty() || !s.met()) continue;
    if (!best || s.cost() < best->cost() || (s.cost() == best->cost() && s.gpus() < best->gpus())) best = &s;
  }
  return best;
}

// The run of n replicas (split: n prefill and d decode instances; a mix: n
// of the first group and d of the second), if run.
const ojson* row_at(const Shape& s, int64_t n, int64_t d = 0) {
  for (const ojson& r : s.runs)
    if (s.mixed ? r["groups"][0]["replicas"] == n && r["groups"][1]["replicas"] == d
        : s.is_split() ? r["prefill_replicas"] == n && r["decode_replicas"] == d
                       : r["replicas"] == n)
      return &r;
  return nullptr;
}
const ojson* answer_row(const Shape& s) {
  return s.two_pools() ? row_at(s, s.split.prefill, s.split.decode) : row_at(s, s.search.answer);
}

// Each router at the answer; the search's own router ran there already
// (the same scenario: the same row), so its run is not repeated.
std::vector<ojson> Planner::routers_at(const Shape& best) {
  std::vector<ojson> rows(o_.routers.size());
  parallel_for(o_.routers.size(), o_.threads, [&](size_t k) {
    try {
      const ojson* searched = o_.routers[k] == o_.base.router ? answer_row(best) : nullptr;
      // Run to the end: the routers are compared on their figures.
      rows[k] = searched ? *searched
                         : best.two_pools() ? run_fleet(best, best.split.prefill, best.split.decode, o_.routers[k], false)
                                           : run_fleet(best, best.search.answer, 0, o_.routers[k], false);
    } catch (...) {
      keep_error();
    }
  });
  return rows;
}

ojson Planner::shape_json(const Shape& s) const {
  ojson o;
  o["fleet"] = shape_name(s, dims_);
  if (s.is_split()) {
    o["prefill_tp"] = s.tp;
    o["decode_tp"] = s.decode_tp;
  } else if (s.mixed) {
    o["groups"] = s.met() ? s.groups_json(s.split.prefill, s.split.decode) : s.groups_json();
  } else {
    o["tp"] = s.tp;
  }
  if (!s.gpu.empty() && !s.mixed) o["gpu"] = s.gpu;
  for (size_t d = 0; d < dims_.size(); ++d) o[dims_[d]->key] = s.extra[d];
  if (!s.refusal.empty()) {
    o["status"] = "cannot run: " + s.refusal;
  } else if (!s.met()) {
    o["status"] = "no fleet of up to " + std::to_string(o_.max_replicas) + " replicas" +
                  (s.is_split() ? " per pool" : s.mixed ? " per group" : "") + " meets the SLO";
  } else {
    o["status"] = "meets";
    o["replicas"] = s.instances();
    if (s.is_split()) {
      o["prefill_replicas"] = s.split.prefill;
      o["decode_replicas"] = s.split.decode;
    }
    o["cost"] = s.cost();
  }
  o["kv_blocks"] = s.refusal.empty() ? ojson(s.sizing.num_blocks) : ojson(nullptr);
  o["runs"] = s.runs.size();
  o["monotonicity_violations"] = s.two_pools() ? s.split.violations : s.search.violations;
  return o;
}

ojson Planner::answer_json(const Shape& best) const {
  const ojson& at = *answer_row(best);
  ojson answer = {{"fleet", shape_name(best, dims_)}};
  if (best.is_split()) {
    answer["prefill_tp"] = best.tp;
    answer["decode_tp"] = best.decode_tp;
  } else if (best.mixed) {
    answer["groups"] = best.groups_json(best.split.prefill, best.split.decode);
  } else {
    answer["tp"] = best.tp;
  }
  if (!best.gpu.empty() && !best.mixed) answer["gpu"] = best.gpu;
  answer["replicas"] = best.instances();
  if (best.is_split()) {
    answer["prefill_replicas"] = best.split.prefill;
    answer["decode_replicas"] = best.split.decode;
  }
  answer["gpus"] = best.gpus();
  answer["router"] = o_.base.router;
  answer["policy"] = o_.base.policy;
  answer["cost"] = at["cost"];
  answer["cost_unit"] = cost_unit_;
  for (size_t d = 0; d < dims_.size(); ++d) answer[dims_[d]->key] = best.extra[d];
  ojson margin = ojson::object();
  for (const SloTerm& t : o_.slo) {
    const double v = at[t.metric].is_number() ? at[t.metric].get<double>() : NAN;
    margin[t.metric] = {{"value", at[t.metric]},
                        {"limit", t.limit},
                        {"margin", std::isfinite(t.margin(v)) ? ojson(t.margin(v)) : ojson(nullptr)}};
  }
  answer["margin"] = margin;
  answer["run"] = at;
  const auto or_null = [](const ojson* r) { return r ? *r : ojson(nullptr); };
  if (best.is_split()) {  // one fewer of either pool, where run
    answer["one_fewer_prefill"] = or_null(row_at(best, best.split.prefill - 1, best.split.decode));
    answer["one_fewer_decode"] = or_null(row_at(best, best.split.prefill, best.split.decode - 1));
  } else if (best.mixed) {  // one fewer of either group, where run
    answer["one_fewer_first_group"] = or_null(row_at(best, best.split.prefill - 1, best.split.decode));
    answer["one_fewer_second_group"] = or_null(row_at(best, best.split.prefill, best.split.decode - 1));
  } else {
    answer["one_fewer"] = or_null(row_at(best, best.search.answer - 1));
  }
  return answer;
}

std::string Planner::summary(const Shape* best) const {
  if (!best) return "no fleet of up to " + std::to_string(o_.max_replicas) + " replicas at any TP tried meets the SLO";
  std::ostringstream cost;
  cost << std::fixed << std::setprecision(2) << answer_row(*best)->at("cost").get<double>();
  const std::string tail = ", " + std::to_string(best->gpus()) + " GPUs) behind " + o_.base.router + ": cost " +
                           cost.str() + " " + cost_unit_;
  if (best->mixed)
    return std::to_string(best->split.prefill) + " x " + best->gpu + " TP " + std::to_string(best->tp) + " + " +
           std::to_string(best->split.decode) + " x " + best->gpu2 + " TP " + std::to_string(best->decode_tp) + " (" +
           shape_name(*best, dims_) + tail;
  if (!best->is_split())
    return std::to_string(best->search.answer) + " x " + best->resolved.gpu->name + " (" + shape_name(*best, dims_) +
           tail;
  const Scenario prefill = pool_scenario(best->scenario, true), decode = pool_scenario(best->scenario, false);
  return std::to_string(best->split.prefill) + " prefill x " + prefill.gpu + " + " +
         std::to_string(best->split.decode) + " decode x " + decode.gpu + " (" + shape_name(*best, dims_) + ", " +
         best->scenario.disagg + tail;
}

ojson Planner::document(const Shape* best, const std::vector<ojson>& router_rows) const {
  ojson j;
  j["schema"] = "prefixsim.plan/1";
  j["tool"] = {{"name", "prefixsim"}, {"version", PREFIXSIM_VERSION}};
  j["trace"] = {{"path", o_.base.trace}, {"format", format_}, {"requests", requests_.size()}};
  Scenario shown = o_.base;  // the counts plan searched, not the 1:1 it validated with
  shown.prefill_replicas = shown.decode_replicas = 0;
  j["scenario"] = ojson::parse(to_json(shown).dump());
  ojson slo = ojson::array();
  for (const SloTerm& t : o_.slo)
    slo.push_back({{"text", t.text}, {"metric", t.metric}, {"bound", t.at_most ? "<=" : ">="}, {"limit", t.limit}});
  j["slo"] = slo;
  j["cost"] = {{"unit", cost_unit_}, {"gpu_per_hour", priced_ && gpu_cost_ > 0 ? ojson(gpu_cost_) : ojson(nullptr)}};
  if (!o_.gpu_costs.empty()) j["cost"]["per_gpu_hour"] = o_.gpu_costs;
  for (size_t d = 0; d < dims_.size(); ++d) j["cost"][std::string(dims_[d]->key) + "_per_unit_hour"] = o_.extra_costs[d];
  j["search"] = {{"tp", o_.tps}, {"max_replicas", o_.max_replicas}, {"method", "doubling from 1, then bisection"}};
  if (!o_.prefill_tps.empty()) {
    j["search"]["prefill_tp"] = o_.prefill_tps;
    j["search"]["decode_tp"] = o_.decode_tps;
    j["search"]["split_method"] =
        "doubling at 1:1, then bisection on each pool, then down the staircase of fewer decode instances";
  }
  if (o_.mix.size() == 2) {
    j["search"]["mix"] = mix_kind(o_.mix).groups_json();
    j["search"]["mix_method"] = "the split search over the two groups' counts (doubling at 1:1, bisection on each "
                                "group, then the staircase both ways); each group alone is an aggregated shape";
  }
  ojson shapes = ojson::array(), runs = ojson::array(), violations = ojson::array();
  for (const Shape& s : shapes_) {
    shapes.push_back(shape_json(s));
    for (const std::string& v : s.two_pools() ? s.split.violations : s.search.violations)
      violations.push_back(shape_name(s, dims_) + ": " + v);
    for (const ojson& r : s.runs) runs.push_back(r);
  }
  j["shapes"] = shapes;
  j["answer"] = best ? answer_json(*best) : ojson(nullptr);
  j["runs"] = runs;
  if (!router_rows.empty()) j["routers_at_answer"] = router_rows;
  j["monotonicity_violations"] = violations;
  j["summary"] = summary(best);
  return j;
}

PlanResult Planner::run() {
  build_shapes();
  refuse_what_cannot_run();
  check_memory();
  read_trace();
  search_shapes();
  const Shape* best = error_ ? nullptr : cheapest();
  std::vector<ojson> router_rows;
  if (best && !o_.routers.empty()) router_rows = routers_at(*best);
  progress_.clear();
  if (error_) std::rethrow_exception(error_);
  return {document(best, router_rows), best != nullptr, runs_done_};
}

}  // namespace

std::vector<const PlanDimension*> plan_dimensions() {
  std::vector<const PlanDimension*> out;
  for (const PlanDimension& d : kDimensions)
    if (!scenario_key(d.key).empty()) out.push_back(&d);
  return out;
}

void parse_gpu_costs(const std::string& text, PlanOptions& o) {
  const auto price = [](const std::string& v) {
    const std::optional<double> x = to_number<double>(trim(v));
    if (!x || !(*x > 0 && *x < 1e9)) throw InputError("--gpu-cost: '" + v + "' is not a positive price per GPU-hour");
    return *x;
  };
  if (text.find('=') == std::string::npos) {
    o.gpu_cost = price(text);
    return;
  }
  for (const std::string_view item : split_commas(text)) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw InputError("--gpu-cost: '" + std::string(item) + "' is not NAME=PRICE");
    const std::string name(trim(item.substr(0, eq)));
    find_gpu(name, "--gpu-cost");
    if (!o.gpu_costs.emplace(name, price(std::string(trim(item.substr(eq + 1))))).second)
      throw InputError("--gpu-cost: " + name + " is priced twice");
  }
}

std::vector<ReplicaGroup> parse_plan_mix(const std::string& spec, int default_tp) {
  std::vector<ReplicaGroup> mix = parse_replica_groups(spec, default_tp);
  if (mix.size() != 2)
    throw InputError("--replica-groups: plan searches a mix of two groups, got " + std::to_string(mix.size()));
  if (spec.find("x=") != std::string::npos)
    throw InputError("--replica-groups: plan searches each group's replicas; give no x=");
  return mix;
}

PlanResult run_plan(const PlanOptions& o) {
  if (o.extra_values.size() != plan_dimensions().size() || o.extra_costs.size() != o.extra_values.size())
    throw InternalError("run_plan: extra_values and extra_costs must have one entry per plan dimension");
  Planner planner(o);
  return planner.run();
}

}  // namespace prefixsim
