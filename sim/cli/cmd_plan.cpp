// `prefixsim plan TRACE --slo ttft_p99=2s,hit_rate>=0.5 --gpu G --model M`:
// the cheapest fleet meeting an SLO. For every fleet shape (TP, and each
// extra resource dimension below) it finds the fewest replicas meeting the
// SLO by doubling and bisection (plan_search.h, which says where that
// assumption of monotonicity fails and how it is guarded), then prices each
// shape's answer and picks the cheapest. Every run is the engine over the
// trace parsed once (point_run.h); the shapes are searched on threads, each
// search sequential, so the runs made and the answer do not depend on timing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "prefixsim_config.h"
#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/parallel_for.h"
#include "sim/base/progress_line.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/study/plan_search.h"
#include "sim/scenario/point_run.h"
#include "sim/cost/catalog.h"
#include "sim/cost/kv_sizing.h"
#include "sim/fleet/router.h"

#include <yaml-cpp/yaml.h>

namespace prefixsim::cli {
namespace {

using ojson = nlohmann::ordered_json;

// Resources a replica may have besides its GPUs, each a scenario key whose
// values plan tries (from FLAG, default `defaults`) and prices per unit and
// hour (from COST_FLAG). A dimension is offered once its scenario key exists:
// adding one is one row here.
struct PlanDimension {
  const char* key;        // scenario key, per replica
  const char* flag;       // values to try: "0,40,80"
  const char* unit;       // "GiB"
  const char* cost_flag;  // price of one unit for one hour
  const char* help;
};
const PlanDimension kDimensions[] = {
    {"kv_offloading_size", "offload", "GiB", "cpu-gib-cost",
     "CPU offload sizes to try, GiB per replica (the KV tier below the GPU), e.g. 0,40,80"},
};

std::vector<const PlanDimension*> available_dimensions() {
  std::vector<const PlanDimension*> out;
  for (const PlanDimension& d : kDimensions)
    if (!scenario_key(d.key).empty()) out.push_back(&d);
  return out;
}

template <typename T>
std::vector<T> number_list(const std::string& flag, const std::string& list, bool zero_ok) {
  std::vector<T> out;
  std::stringstream in(list);
  std::string item;
  if (list.empty() || list.back() == ',') throw InputError("--" + flag + ": empty entry in '" + list + "'");
  while (std::getline(in, item, ',')) {
    std::istringstream v(item);
    T x{};
    if (item.empty() || !(v >> x) || !v.eof() || x < 0 || (!zero_ok && x == 0))
      throw InputError("--" + flag + ": '" + item + "' is not a " + (zero_ok ? "non-negative" : "positive") + " number");
    if (std::find(out.begin(), out.end(), x) != out.end())
      throw InputError("--" + flag + ": '" + item + "' given twice");
    out.push_back(x);
  }
  return out;
}

// One fleet shape: a TP and a value of every extra dimension.
struct Shape {
  int tp = 1;
  std::vector<double> extra;  // by available dimension
  Scenario scenario;          // replicas set per run
  ResolvedScenario resolved;
  KvSizing sizing;
  std::string refusal;        // why it cannot run (the model does not fit ...)
  SearchResult search;
  std::vector<ojson> runs;    // in the order run
  double cost_per_replica = 0;
};

std::string shape_name(const Shape& s, const std::vector<const PlanDimension*>& dims) {
  std::string n = "TP " + std::to_string(s.tp);
  for (size_t d = 0; d < dims.size(); ++d) {
    std::ostringstream v;
    v << s.extra[d];
    n += ", " + std::string(dims[d]->key) + " " + v.str() + " " + dims[d]->unit;
  }
  return n;
}

std::map<std::string, double> figures_of(const ojson& row) {
  std::map<std::string, double> f;
  for (auto it = row.begin(); it != row.end(); ++it)
    if (it.value().is_number()) f[it.key()] = it.value().get<double>();
  return f;
}

std::string fmt(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// "ttft_p99_ms 1234.5 (<= 2000: 38.3 % inside)"
std::string margin_text(const SloTerm& t, const ojson& row) {
  const double v = row[t.metric].is_number() ? row[t.metric].get<double>() : NAN;
  const bool pct = !t.at_most;
  return t.metric + " " + (pct ? fmt(100 * v, 2) + " %" : fmt(v, 1) + " ms") + " (" + (t.at_most ? "<= " : ">= ") +
         (pct ? fmt(100 * t.limit, 2) + " %" : fmt(t.limit, 1) + " ms") + ": " + fmt(100 * std::fabs(t.margin(v)), 1) +
         " % " + (t.meets(v) ? "inside" : "outside") + ")";
}

}  // namespace

int cmd_plan(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("slo", po::value<std::string>(), "the service level to meet: ttft_p99=2s[,hit_rate>=0.5,...] (see below)")
      ("tp", po::value<std::string>()->default_value("1,2,4,8"), "tensor-parallel sizes to try")
      ("max-replicas", po::value<int64_t>()->default_value(64), "the largest fleet to try per shape")
      ("routers", po::value<std::string>(), "also run these routers at the answer, to compare: a,b,...")
      ("gpu-cost", po::value<double>(), "price of one GPU-hour (default: the GPU catalog's cost_per_hour; "
                                        "without either, cost = number of GPUs)")
      ("threads", po::value<int>()->default_value(0), "fleet shapes searched at once (default: one per core)")
      ("quiet", "print nothing on success");
  const std::vector<const PlanDimension*> dims = available_dimensions();
  for (const PlanDimension* d : dims) {
    opts.add_options()(d->flag, po::value<std::string>(), d->help);
    opts.add_options()(d->cost_flag, po::value<double>(),
                       (std::string("price of one ") + d->unit + "-hour of " + d->key + " (default 0)").c_str());
  }
  add_scenario_options(opts, kForPlan);
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm,
                  "prefixsim plan TRACE --slo ttft_p99=2s[,hit_rate>=0.5] [--model M --gpu G] [--tp 1,2,4,8]\n"
                  "               [--router R] [--routers a,b] [--gpu-cost C] [--requests N] [--out DIR]",
                  "Finds the cheapest fleet (replicas x TP) of --model on --gpu that meets the SLO when\n"
                  "it serves TRACE, in engine mode: for every TP, the fewest replicas meeting it, by doubling\n"
                  "(1, 2, 4, ...) then bisection, not a blind grid; each TP's answer is priced (--gpu-cost per\n"
                  "GPU-hour, or the number of GPUs) and the cheapest wins. Prints the answer with its margin\n"
                  "and the runs behind it (the answer meets the SLO; one replica fewer does not); writes\n"
                  "plan.json, plan.md and plan.html to --out. Bisection assumes more replicas never hurt;\n"
                  "a hit-rate bound can break that (a prefix-blind router spreads sessions thinner as the\n"
                  "fleet grows): every violation seen among the runs is reported.\n\n"
                  "SLO terms: ttft_mean, ttft_p50, ttft_p90, ttft_p99, queue_p99, e2e_p99 with <= (or =) and\n"
                  "a value in s or ms; hit_rate, block_hit_rate with >= (or =) and a fraction or a percentage.\n"
                  "--requests N (the first N requests) bounds a long trace's run time."))
    return 0;
  if (!vm.count("trace")) throw InputError("plan: missing the TRACE argument (see prefixsim plan --help)");
  if (!vm.count("slo")) throw InputError("plan: --slo is required (e.g. --slo ttft_p99=2s)");
  const std::vector<SloTerm> slo = parse_slo(vm["slo"].as<std::string>());
  Scenario base;
  apply_scenario_flags(vm, kForPlan, base);
  base.mode = "engine";
  validate(base);
  const std::vector<int> tps = number_list<int>("tp", vm["tp"].as<std::string>(), false);
  for (int tp : tps)
    if (tp > 64) throw InputError("--tp: " + std::to_string(tp) + " is more than 64");
  const int64_t max_replicas = vm["max-replicas"].as<int64_t>();
  if (max_replicas < 1 || max_replicas > 4096) throw InputError("--max-replicas: must be in [1, 4096]");
  std::vector<std::string> routers;
  if (vm.count("routers")) {
    std::stringstream in(vm["routers"].as<std::string>());
    std::string r;
    while (std::getline(in, r, ',')) {
      if (r.empty()) throw InputError("--routers: an empty entry");
      make_router(r, RouterContext{});
      routers.push_back(r);
    }
  }
  make_router(base.router, RouterContext{});
  int threads = resolve_threads(vm);

  const ResolvedScenario resolved0 = resolve_scenario(base);
  double gpu_cost = resolved0.gpu->cost_per_hour;
  if (vm.count("gpu-cost")) {
    gpu_cost = vm["gpu-cost"].as<double>();
    if (!(gpu_cost > 0 && gpu_cost < 1e9)) throw InputError("--gpu-cost: must be a positive price per GPU-hour");
  }
  const bool priced = gpu_cost > 0;
  const std::string cost_unit = priced ? "per hour" : "GPUs";
  // Extra dimensions: their values (default: 0 only) and prices.
  std::vector<std::vector<double>> extra_values;
  std::vector<double> extra_costs;
  for (const PlanDimension* d : dims) {
    extra_values.push_back(vm.count(d->flag) ? number_list<double>(d->flag, vm[d->flag].as<std::string>(), true)
                                             : std::vector<double>{0});
    extra_costs.push_back(vm.count(d->cost_flag) ? vm[d->cost_flag].as<double>() : 0);
    if (!(extra_costs.back() >= 0)) throw InputError(std::string("--") + d->cost_flag + ": must be >= 0");
  }

  const std::string& dir = base.out;
  check_output_dir(dir, "--out");
  for (const char* name : {"/plan.json", "/plan.md", "/plan.html"}) {
    check_output_file(dir + name, "--out");
    check_not_an_input(dir + name, "--out", {base.trace});
  }

  // The trace, parsed once.
  std::vector<Request> requests;
  std::string format;
  {
    auto src = open_scenario_input(base, resolved0);
    format = src->format();
    Request r;
    while (src->next(r)) requests.push_back(r);
  }
  if (requests.empty()) throw InputError(base.trace + ": the trace has no requests");
  PolicyContext ctx;
  ctx.block_size = base.block_size;
  make_policy(base.policy, ctx);
  const PointInput input{&requests, nullptr, format};

  // The shapes: every TP x every extra value.
  std::vector<Shape> shapes;
  for (int tp : tps) {
    std::vector<size_t> at(dims.size(), 0);
    for (;;) {
      Shape s;
      s.tp = tp;
      s.scenario = base;
      s.scenario.tp = tp;
      s.cost_per_replica = (priced ? gpu_cost : 1.0) * tp;
      for (size_t d = 0; d < dims.size(); ++d) {
        s.extra.push_back(extra_values[d][at[d]]);
        std::ostringstream v;
        v << s.extra.back();
        apply_scenario_value("--" + std::string(dims[d]->flag), 0, dims[d]->key, YAML::Node(v.str()), s.scenario);
        s.cost_per_replica += s.extra.back() * extra_costs[d];
      }
      try {
        validate(s.scenario);
        s.resolved = resolve_scenario(s.scenario);
        s.sizing = size_kv_pool(kv_sizing_input(s.scenario, s.resolved));
        if (s.sizing.num_blocks < 2) throw InputError("the KV pool has fewer than 2 blocks");
      } catch (const InputError& e) {
        s.refusal = e.what();
      }
      shapes.push_back(std::move(s));
      size_t d = 0;
      while (d < dims.size() && ++at[d] == extra_values[d].size()) at[d++] = 0;
      if (d == dims.size()) break;
    }
  }

  // Each shape's search, shapes on threads; a run's row is kept with it.
  ProgressLine progress(!vm.count("quiet") && ::isatty(2));
  std::mutex mu;
  size_t runs_done = 0;
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error;
  auto run_fleet = [&](const Shape& shape, int64_t n, const std::string& router) {
    Scenario s = shape.scenario;
    s.replicas = static_cast<int32_t>(n);
    s.router = router;
    const PointResult r = run_point(input, s, shape.resolved, s.policy, ctx, shape.sizing.num_blocks);
    if (r.error) std::rethrow_exception(r.error);
    ojson row;
    row["fleet"] = shape_name(shape, dims);
    row["tp"] = shape.tp;
    for (size_t d = 0; d < dims.size(); ++d) row[dims[d]->key] = shape.extra[d];
    row["replicas"] = n;
    row["router"] = router;
    row["gpus"] = n * shape.tp;
    row["cost"] = static_cast<double>(n) * shape.cost_per_replica;
    const ojson figures = point_figures(r, s, shape.sizing.num_blocks, shape.sizing.capacity_tokens);
    for (auto it = figures.begin(); it != figures.end(); ++it) row[it.key()] = it.value();
    row["meets"] = meets_slo(slo, figures_of(row));
    const std::lock_guard<std::mutex> lock(mu);
    ++runs_done;
    if (progress.due())
      progress.draw("plan: " + std::to_string(runs_done) + " runs done in " +
                    duration_text(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()) +
                    " (last: " + row["fleet"].get<std::string>() + " x " + std::to_string(n) + ")");
    return row;
  };
  parallel_for(shapes.size(), std::min<int>(threads, static_cast<int>(shapes.size())), [&](size_t i) {
    Shape& shape = shapes[i];
    if (!shape.refusal.empty()) return;
    try {
      shape.search = search_replicas(max_replicas, [&](int64_t n) {
        shape.runs.push_back(run_fleet(shape, n, base.router));
        return shape.runs.back()["meets"].get<bool>();
      });
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  });
  if (error) {
    progress.clear();
    std::rethrow_exception(error);
  }

  // The cheapest answer; ties to fewer GPUs, then the shape listed first.
  const Shape* best = nullptr;
  for (const Shape& s : shapes) {
    if (!s.refusal.empty() || s.search.answer == 0) continue;
    const double cost = static_cast<double>(s.search.answer) * s.cost_per_replica;
    if (!best || cost < static_cast<double>(best->search.answer) * best->cost_per_replica ||
        (cost == static_cast<double>(best->search.answer) * best->cost_per_replica &&
         s.search.answer * s.tp < best->search.answer * best->tp))
      best = &s;
  }
  auto row_at = [](const Shape& s, int64_t n) -> const ojson* {
    for (const ojson& r : s.runs)
      if (r["replicas"] == n) return &r;
    return nullptr;
  };
  // The routers compared at the answer.
  std::vector<ojson> router_rows;
  if (best && !routers.empty()) {
    router_rows.resize(routers.size());
    parallel_for(routers.size(), threads, [&](size_t k) {
      try {
        router_rows[k] = run_fleet(*best, best->search.answer, routers[k]);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    });
  }
  progress.clear();
  if (error) std::rethrow_exception(error);

  // plan.json
  ojson j;
  j["schema"] = "prefixsim.plan/1";
  j["tool"] = {{"name", "prefixsim"}, {"version", PREFIXSIM_VERSION}};
  j["trace"] = {{"path", base.trace}, {"format", format}, {"requests", requests.size()}};
  j["scenario"] = ojson::parse(to_json(base).dump());
  ojson jslo = ojson::array();
  for (const SloTerm& t : slo)
    jslo.push_back({{"text", t.text}, {"metric", t.metric}, {"bound", t.at_most ? "<=" : ">="}, {"limit", t.limit}});
  j["slo"] = jslo;
  j["cost"] = {{"unit", cost_unit}, {"gpu_per_hour", priced ? ojson(gpu_cost) : ojson(nullptr)}};
  for (size_t d = 0; d < dims.size(); ++d) j["cost"][std::string(dims[d]->key) + "_per_unit_hour"] = extra_costs[d];
  j["search"] = {{"tp", tps}, {"max_replicas", max_replicas}, {"method", "doubling from 1, then bisection"}};
  ojson jshapes = ojson::array(), jruns = ojson::array();
  std::vector<std::string> violations;
  for (const Shape& s : shapes) {
    ojson o;
    o["fleet"] = shape_name(s, dims);
    o["tp"] = s.tp;
    for (size_t d = 0; d < dims.size(); ++d) o[dims[d]->key] = s.extra[d];
    if (!s.refusal.empty()) {
      o["status"] = "cannot run: " + s.refusal;
    } else if (s.search.answer == 0) {
      o["status"] = "no fleet of up to " + std::to_string(max_replicas) + " replicas meets the SLO";
    } else {
      o["status"] = "meets";
      o["replicas"] = s.search.answer;
      o["cost"] = static_cast<double>(s.search.answer) * s.cost_per_replica;
    }
    o["kv_blocks"] = s.refusal.empty() ? ojson(s.sizing.num_blocks) : ojson(nullptr);
    o["runs"] = s.runs.size();
    o["monotonicity_violations"] = s.search.violations;
    for (const std::string& v : s.search.violations) violations.push_back(shape_name(s, dims) + ": " + v);
    jshapes.push_back(o);
    for (const ojson& r : s.runs) jruns.push_back(r);
  }
  j["shapes"] = jshapes;
  ojson answer = nullptr;
  if (best) {
    const ojson& at = *row_at(*best, best->search.answer);
    const ojson* below = row_at(*best, best->search.answer - 1);
    answer = {{"fleet", shape_name(*best, dims)}, {"tp", best->tp}, {"replicas", best->search.answer},
              {"gpus", best->search.answer * best->tp}, {"router", base.router}, {"policy", base.policy},
              {"cost", at["cost"]}, {"cost_unit", cost_unit}};
    for (size_t d = 0; d < dims.size(); ++d) answer[dims[d]->key] = best->extra[d];
    ojson margin = ojson::object();
    for (const SloTerm& t : slo) {
      const double v = at[t.metric].is_number() ? at[t.metric].get<double>() : NAN;
      margin[t.metric] = {{"value", at[t.metric]}, {"limit", t.limit}, {"margin", std::isfinite(t.margin(v)) ? ojson(t.margin(v)) : ojson(nullptr)}};
    }
    answer["margin"] = margin;
    answer["run"] = at;
    answer["one_fewer"] = below ? *below : ojson(nullptr);
  }
  j["answer"] = answer;
  j["runs"] = jruns;
  if (!router_rows.empty()) j["routers_at_answer"] = router_rows;
  j["monotonicity_violations"] = violations;
  std::string summary;
  if (best)
    summary = std::to_string(best->search.answer) + " x " + best->resolved.gpu->name + " (" + shape_name(*best, dims) +
              ", " + std::to_string(best->search.answer * best->tp) + " GPUs) behind " + base.router + ": cost " +
              fmt(answer["cost"].get<double>(), 2) + " " + cost_unit;
  else
    summary = "no fleet of up to " + std::to_string(max_replicas) + " replicas at any TP tried meets the SLO";
  j["summary"] = summary;

  // plan.md and the terminal
  std::ostringstream md, term;
  md << "# prefixsim plan\n\nTrace `" << base.trace << "` (" << format << "), " << requests.size() << " requests; "
     << base.model << " on " << base.gpu << ", policy " << base.policy << ", router " << base.router << ".\n\nSLO: ";
  for (size_t i = 0; i < slo.size(); ++i) md << (i ? ", " : "") << "`" << slo[i].text << "`";
  md << ".\n\n**Answer:** " << summary << ".\n\n";
  term << "plan: " << summary << "\n";
  if (best) {
    const ojson& at = *row_at(*best, best->search.answer);
    const ojson* below = row_at(*best, best->search.answer - 1);
    md << "Margin at the answer:\n\n";
    term << "  margin:";
    for (const SloTerm& t : slo) {
      md << "- " << margin_text(t, at) << "\n";
      term << " " << margin_text(t, at) << ";";
    }
    term << "\n";
    if (below) {
      md << "\nOne replica fewer (" << best->search.answer - 1 << ") does not meet it:\n\n";
      term << "  one fewer (" << best->search.answer - 1 << " replicas):";
      for (const SloTerm& t : slo) {
        md << "- " << margin_text(t, *below) << "\n";
        term << " " << margin_text(t, *below) << ";";
      }
      term << "\n";
    } else {
      md << "\nOne replica is the smallest fleet.\n";
    }
  }
  md << "\n## Fleet shapes\n\n| shape | status | replicas | cost | runs |\n| --- | --- | ---: | ---: | ---: |\n";
  for (const ojson& o : jshapes)
    md << "| " << o["fleet"].get<std::string>() << " | " << o["status"].get<std::string>() << " | "
       << (o.contains("replicas") ? std::to_string(o["replicas"].get<int64_t>()) : "-") << " | "
       << (o.contains("cost") ? fmt(o["cost"].get<double>(), 2) : "-") << " | " << o["runs"].get<size_t>() << " |\n";
  md << "\n## Runs (in the order run, per shape)\n\n| shape | replicas | meets | TTFT p99 ms | hit rate % | "
        "refused | imbalance |\n| --- | ---: | --- | ---: | ---: | ---: | ---: |\n";
  term << "  runs:\n";
  for (const ojson& r : jruns) {
    const double ttft = r["ttft_p99_ms"].is_number() ? r["ttft_p99_ms"].get<double>() : NAN;
    const double hr = r["hit_rate"].is_number() ? r["hit_rate"].get<double>() : NAN;
    const double imb = r["imbalance"].is_number() ? r["imbalance"].get<double>() : NAN;
    md << "| " << r["fleet"].get<std::string>() << " | " << r["replicas"].get<int64_t>() << " | "
       << (r["meets"].get<bool>() ? "yes" : "no") << " | " << fmt(ttft, 1) << " | " << fmt(100 * hr, 2) << " | "
       << r["refused_requests"].get<uint64_t>() << " | " << fmt(imb, 2) << " |\n";
    term << "    " << r["fleet"].get<std::string>() << " x " << r["replicas"].get<int64_t>() << ": TTFT p99 "
         << fmt(ttft, 1) << " ms, hit rate " << fmt(100 * hr, 2) << " % -> "
         << (r["meets"].get<bool>() ? "meets" : "fails") << "\n";
  }
  if (!router_rows.empty()) {
    md << "\n## Routers at the answer\n\n| router | meets | TTFT p99 ms | hit rate % | imbalance |\n| --- | --- | ---: | "
          "---: | ---: |\n";
    term << "  routers at the answer:\n";
    for (const ojson& r : router_rows) {
      const double ttft = r["ttft_p99_ms"].is_number() ? r["ttft_p99_ms"].get<double>() : NAN;
      const double hr = r["hit_rate"].is_number() ? r["hit_rate"].get<double>() : NAN;
      md << "| " << r["router"].get<std::string>() << " | " << (r["meets"].get<bool>() ? "yes" : "no") << " | "
         << fmt(ttft, 1) << " | " << fmt(100 * hr, 2) << " | "
         << fmt(r["imbalance"].is_number() ? r["imbalance"].get<double>() : NAN, 2) << " |\n";
      term << "    " << r["router"].get<std::string>() << ": TTFT p99 " << fmt(ttft, 1) << " ms, hit rate "
           << fmt(100 * hr, 2) << " % -> " << (r["meets"].get<bool>() ? "meets" : "fails") << "\n";
    }
  }
  md << "\n## Method\n\nFor each shape: fleets of 1, 2, 4, ... replicas until one meets the SLO, then bisection "
        "between the last that failed and the first that met; the answer and one replica fewer are both run. "
        "Bisection assumes more replicas never break the SLO. Latency nearly obeys that (less load per replica), "
        "though a router's split of sessions can move TTFT p99 a little either way; a hit-rate bound can break "
        "it outright (a prefix-blind router spreads sessions over more caches as the fleet grows).";
  if (violations.empty()) {
    md << " No violation was seen among these runs.\n";
  } else {
    md << " Violations seen among these runs (the answer may not be the smallest that meets the SLO):\n\n";
    term << "  warning: monotonicity violations:";
    for (const std::string& v : violations) md << "- " << v << "\n", term << " " << v << ";";
    term << "\n";
  }

  OutputSet out(dir, "--out");
  out.add("plan.json", j.dump(2) + "\n");
  out.add("plan.md", md.str());
  out.add("plan.html", render_plan_html(nlohmann::json::parse(j.dump())));
  out.commit();
  if (!vm.count("quiet")) std::cout << term.str() << "wrote " << dir << "/plan.{json,md,html}\n";
  return best ? 0 : 1;
}

}  // namespace prefixsim::cli
