#include "sim/study/plan_run.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>

#include "prefixsim_config.h"
#include "reports/outputs.h"
#include "sim/base/error.h"
#include "sim/base/parallel_for.h"
#include "sim/base/progress_line.h"
#include "sim/cost/kv_sizing.h"
#include "sim/fleet/admission.h"
#include "sim/scenario/point_run.h"
#include "sim/scenario/run_memory.h"

namespace prefixsim {

namespace {

using ojson = nlohmann::ordered_json;

const PlanDimension kDimensions[] = {
    {"kv_offloading_size", "offload", "GiB", "cpu-gib-cost",
     "CPU offload sizes to try, GiB per replica (the KV tier below the GPU), e.g. 0,40,80"},
};

// One fleet shape: a TP and a value of every extra dimension.
struct Shape {
  int tp = 1;
  std::vector<double> extra;  // by dimension
  Scenario scenario;          // replicas set per run
  ResolvedScenario resolved;
  KvSizing sizing;
  RunBlocks largest;          // its blocks at the most replicas tried
  std::string refusal;        // why it cannot run (the model does not fit ...)
  bool refusal_fatal = false; // the user asked for it: exit 2, not a listed shape
  SearchResult search;
  std::vector<ojson> runs;    // in the order run
  double cost_per_replica = 0;
  double cost() const { return static_cast<double>(search.answer) * cost_per_replica; }
};

std::string value_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string shape_name(const Shape& s, const std::vector<const PlanDimension*>& dims) {
  std::string n = "TP " + std::to_string(s.tp);
  for (size_t d = 0; d < dims.size(); ++d)
    n += ", " + std::string(dims[d]->key) + " " + value_text(s.extra[d]) + " " + dims[d]->unit;
  return n;
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
  Shape make_shape(int tp, const std::vector<size_t>& at) const;
  void build_shapes();
  void refuse_what_cannot_run() const;
  void check_memory() const;
  void read_trace();
  ojson run_fleet(const Shape& shape, int64_t n, const std::string& router);
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
  std::mutex mu_;  // guards what the threads share: runs_done_, progress_, error_
  size_t runs_done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::exception_ptr error_;
};

Planner::Planner(const PlanOptions& o) : o_(o), resolved0_(resolve_scenario(o.base)), progress_(o.progress) {
  gpu_cost_ = o.gpu_cost.value_or(resolved0_.gpu->cost_per_hour);
  priced_ = gpu_cost_ > 0;
  cost_unit_ = priced_ ? "per hour" : "GPUs";
  ctx_.block_size = o.base.block_size;
  with_refusals_ = parse_admission(o.base.admission).enabled ||
                   std::any_of(o.slo.begin(), o.slo.end(), [](const SloTerm& t) { return t.metric == "refusal_rate"; });
}

Shape Planner::make_shape(int tp, const std::vector<size_t>& at) const {
  Shape s;
  s.tp = tp;
  s.scenario = o_.base;
  s.scenario.tp = tp;
  s.cost_per_replica = (priced_ ? gpu_cost_ : 1.0) * tp;
  for (size_t d = 0; d < dims_.size(); ++d) {
    s.extra.push_back(o_.extra_values[d][at[d]]);
    apply_scenario_value("--" + std::string(dims_[d]->flag), 0, dims_[d]->key, YAML::Node(value_text(s.extra.back())),
                         s.scenario);
    s.cost_per_replica += s.extra.back() * o_.extra_costs[d];
  }
  try {  // what the TP decides: a default TP the model cannot take is only listed
    validate(s.scenario);
    s.resolved = resolve_scenario(s.scenario);
    s.sizing = size_kv_pool(kv_sizing_input(s.scenario, s.resolved));
    if (s.sizing.num_blocks < 2) throw InputError("the KV pool has fewer than 2 blocks");
  } catch (const InputError& e) {
    s.refusal = e.what();
    s.refusal_fatal = o_.tps_given;
    return s;
  }
  try {  // what the resource values decide: always the user's
    Scenario largest = s.scenario;
    largest.replicas = static_cast<int32_t>(o_.max_replicas);
    s.largest = run_blocks(largest, s.sizing, scenario_tiers(s.scenario, *s.resolved.model));
  } catch (const InputError& e) {
    s.refusal = e.what();
    s.refusal_fatal = true;
  }
  return s;
}

// Every TP x every extra value, the first dimension varying fastest.
void Planner::build_shapes() {
  for (int tp : o_.tps) {
    std::vector<size_t> at(dims_.size(), 0);
    for (;;) {
      shapes_.push_back(make_shape(tp, at));
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

// One run: the shape's fleet of n replicas behind `router`, as plan.json's row.
ojson Planner::run_fleet(const Shape& shape, int64_t n, const std::string& router) {
  Scenario s = shape.scenario;
  s.replicas = static_cast<int32_t>(n);
  s.router = router;
  const PointInput input{&requests_, nullptr, format_};
  const PointResult r = run_point(input, s, shape.resolved, s.policy, ctx_, shape.sizing.num_blocks);
  if (r.error) std::rethrow_exception(r.error);
  ojson row;
  row["fleet"] = shape_name(shape, dims_);
  row["tp"] = shape.tp;
  for (size_t d = 0; d < dims_.size(); ++d) row[dims_[d]->key] = shape.extra[d];
  row["replicas"] = n;
  row["router"] = router;
  row["gpus"] = n * shape.tp;
  row["cost"] = static_cast<double>(n) * shape.cost_per_replica;
  const ojson figures = point_figures(r, s, shape.sizing.num_blocks, shape.sizing.capacity_tokens);
  for (auto it = figures.begin(); it != figures.end(); ++it) row[it.key()] = it.value();
  if (with_refusals_) {  // requests not served (never fit, or shed by --admission) over those offered
    const uint64_t served = r.cache.requests, refused = r.cache.refused_requests;
    row["refusal_rate"] = served + refused ? static_cast<double>(refused) / static_cast<double>(served + refused) : 0.0;
  }
  row["meets"] = meets_slo(o_.slo, figures_of(row));
  const std::lock_guard<std::mutex> lock(mu_);
  ++runs_done_;
  if (progress_.due())
    progress_.draw("plan: " + std::to_string(runs_done_) + " runs done in " +
                   duration_text(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count()) +
                   " (last: " + row["fleet"].get<std::string>() + " x " + std::to_string(n) + ")");
  return row;
}

// The first error any thread met wins; the others finish their run and stop.
void Planner::keep_error() {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!error_) error_ = std::current_exception();
}

// Each shape's search on a thread of its own; a run's row is kept with it.
void Planner::search_shapes() {
  start_ = std::chrono::steady_clock::now();
  parallel_for(shapes_.size(), std::min<int>(o_.threads, static_cast<int>(shapes_.size())), [&](size_t i) {
    Shape& shape = shapes_[i];
    if (!shape.refusal.empty()) return;
    try {
      shape.search = search_replicas(o_.max_replicas, [&](int64_t n) {
        shape.runs.push_back(run_fleet(shape, n, o_.base.router));
        return shape.runs.back()["meets"].get<bool>();
      });
    } catch (...) {
      keep_error();
    }
  });
}

// The cheapest answer; ties to fewer GPUs, then the shape listed first.
const Shape* Planner::cheapest() const {
  const Shape* best = nullptr;
  for (const Shape& s : shapes_) {
    if (!s.refusal.empty() || s.search.answer == 0) continue;
    if (!best || s.cost() < best->cost() ||
        (s.cost() == best->cost() && s.search.answer * s.tp < best->search.answer * best->tp))
      best = &s;
  }
  return best;
}

const ojson* row_at(const Shape& s, int64_t n) {
  for (const ojson& r : s.runs)
    if (r["replicas"] == n) return &r;
  return nullptr;
}

// Each router at the answer; the search's own router ran there already
// (the same scenario: the same row), so its run is not repeated.
std::vector<ojson> Planner::routers_at(const Shape& best) {
  std::vector<ojson> rows(o_.routers.size());
  parallel_for(o_.routers.size(), o_.threads, [&](size_t k) {
    try {
      const ojson* searched = o_.routers[k] == o_.base.router ? row_at(best, best.search.answer) : nullptr;
      rows[k] = searched ? *searched : run_fleet(best, best.search.answer, o_.routers[k]);
    } catch (...) {
      keep_error();
    }
  });
  return rows;
}

ojson Planner::shape_json(const Shape& s) const {
  ojson o;
  o["fleet"] = shape_name(s, dims_);
  o["tp"] = s.tp;
  for (size_t d = 0; d < dims_.size(); ++d) o[dims_[d]->key] = s.extra[d];
  if (!s.refusal.empty()) {
    o["status"] = "cannot run: " + s.refusal;
  } else if (s.search.answer == 0) {
    o["status"] = "no fleet of up to " + std::to_string(o_.max_replicas) + " replicas meets the SLO";
  } else {
    o["status"] = "meets";
    o["replicas"] = s.search.answer;
    o["cost"] = s.cost();
  }
  o["kv_blocks"] = s.refusal.empty() ? ojson(s.sizing.num_blocks) : ojson(nullptr);
  o["runs"] = s.runs.size();
  o["monotonicity_violations"] = s.search.violations;
  return o;
}

ojson Planner::answer_json(const Shape& best) const {
  const ojson& at = *row_at(best, best.search.answer);
  const ojson* below = row_at(best, best.search.answer - 1);
  ojson answer = {{"fleet", shape_name(best, dims_)}, {"tp", best.tp}, {"replicas", best.search.answer},
                  {"gpus", best.search.answer * best.tp}, {"router", o_.base.router}, {"policy", o_.base.policy},
                  {"cost", at["cost"]}, {"cost_unit", cost_unit_}};
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
  answer["one_fewer"] = below ? *below : ojson(nullptr);
  return answer;
}

std::string Planner::summary(const Shape* best) const {
  if (!best) return "no fleet of up to " + std::to_string(o_.max_replicas) + " replicas at any TP tried meets the SLO";
  std::ostringstream cost;
  cost << std::fixed << std::setprecision(2) << row_at(*best, best->search.answer)->at("cost").get<double>();
  return std::to_string(best->search.answer) + " x " + best->resolved.gpu->name + " (" + shape_name(*best, dims_) +
         ", " + std::to_string(best->search.answer * best->tp) + " GPUs) behind " + o_.base.router + ": cost " +
         cost.str() + " " + cost_unit_;
}

ojson Planner::document(const Shape* best, const std::vector<ojson>& router_rows) const {
  ojson j;
  j["schema"] = "prefixsim.plan/1";
  j["tool"] = {{"name", "prefixsim"}, {"version", PREFIXSIM_VERSION}};
  j["trace"] = {{"path", o_.base.trace}, {"format", format_}, {"requests", requests_.size()}};
  j["scenario"] = ojson::parse(to_json(o_.base).dump());
  ojson slo = ojson::array();
  for (const SloTerm& t : o_.slo)
    slo.push_back({{"text", t.text}, {"metric", t.metric}, {"bound", t.at_most ? "<=" : ">="}, {"limit", t.limit}});
  j["slo"] = slo;
  j["cost"] = {{"unit", cost_unit_}, {"gpu_per_hour", priced_ ? ojson(gpu_cost_) : ojson(nullptr)}};
  for (size_t d = 0; d < dims_.size(); ++d) j["cost"][std::string(dims_[d]->key) + "_per_unit_hour"] = o_.extra_costs[d];
  j["search"] = {{"tp", o_.tps}, {"max_replicas", o_.max_replicas}, {"method", "doubling from 1, then bisection"}};
  ojson shapes = ojson::array(), runs = ojson::array(), violations = ojson::array();
  for (const Shape& s : shapes_) {
    shapes.push_back(shape_json(s));
    for (const std::string& v : s.search.violations) violations.push_back(shape_name(s, dims_) + ": " + v);
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
  return {document(best, router_rows), best != nullptr};
}

}  // namespace

std::vector<const PlanDimension*> plan_dimensions() {
  std::vector<const PlanDimension*> out;
  for (const PlanDimension& d : kDimensions)
    if (!scenario_key(d.key).empty()) out.push_back(&d);
  return out;
}

PlanResult run_plan(const PlanOptions& o) {
  if (o.extra_values.size() != plan_dimensions().size() || o.extra_costs.size() != o.extra_values.size())
    throw InternalError("run_plan: extra_values and extra_costs must have one entry per plan dimension");
  Planner planner(o);
  return planner.run();
}

}  // namespace prefixsim
