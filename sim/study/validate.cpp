#include "sim/study/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>

#include "reports/validate_report.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/parallel_for.h"

namespace prefixsim {
namespace {

using nlohmann::ordered_json;

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

ordered_json num_or_null(double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(nullptr); }

}  // namespace

const std::vector<std::string>& validate_metric_names() {
  static const std::vector<std::string> names = {"ttft_mean", "ttft_p50", "ttft_p90", "ttft_p99",
                                                 "e2e_mean",  "e2e_p50",  "e2e_p90",  "e2e_p99",
                                                 "tpot_mean", "tpot_p50", "tpot_p90", "tpot_p99",
                                                 "throughput_rps"};
  return names;
}

ordered_json compare_run(const ObservedRun& run, const ReplayedRun& pred) {
  ordered_json r;
  r["id"] = run.id;
  r["path"] = run.path;
  r["form"] = run.form;
  r["model"] = run.scenario.model;
  r["gpu"] = run.scenario.gpu;
  r["tp"] = run.scenario.tp;
  r["replicas"] = run.scenario.replicas;
  r["requests"] = run.requests.size();
  r["latency_measured_at"] = run.client_side ? "client" : "engine";
  r["kv_blocks"] = pred.kv_blocks;
  r["kv_source"] = pred.kv_source;
  r["saturated"] = run.saturated;
  if (run.saturated) r["saturation"] = run.saturation;
  r["notes"] = run.notes;
  r["finished"] = pred.finished;
  r["refused"] = pred.refused;
  r["preemptions"] = pred.preemptions;
  const std::pair<const MeasuredStat*, const MeasuredStat*> stats[] = {
      {&run.ttft, &pred.ttft}, {&run.e2e, &pred.e2e}, {&run.tpot, &pred.tpot}};
  ordered_json metrics = ordered_json::object();
  double worst = 0;
  auto add = [&](const std::string& name, double measured, double predicted) {
    if (!std::isfinite(measured) || measured <= 0) return;
    const double err = std::isfinite(predicted) ? (predicted - measured) / measured : NAN;
    metrics[name] = {{"measured", measured}, {"predicted", num_or_null(predicted)}, {"error", num_or_null(err)}};
    if (std::isfinite(err)) worst = std::max(worst, std::fabs(err));
  };
  const char* prefixes[] = {"ttft", "e2e", "tpot"};
  for (int i = 0; i < 3; ++i) {
    const std::string p = prefixes[i];
    add(p + "_mean", stats[i].first->mean, stats[i].second->mean);
    add(p + "_p50", stats[i].first->p50, stats[i].second->p50);
    add(p + "_p90", stats[i].first->p90, stats[i].second->p90);
    add(p + "_p99", stats[i].first->p99, stats[i].second->p99);
  }
  add("throughput_rps", run.throughput_rps, pred.throughput_rps);
  r["metrics"] = metrics;
  r["worst_abs_error"] = worst;
  return r;
}

ordered_json summarize_runs(const ordered_json& runs) {
  ordered_json s;
  int64_t completed = 0, saturated = 0;
  for (const ordered_json& r : runs) (r["saturated"].get<bool>() ? saturated : completed) += 1;
  s["completed_runs"] = completed;
  s["saturated_runs"] = saturated;
  ordered_json metrics = ordered_json::object();
  for (const std::string& m : validate_metric_names()) {
    std::vector<double> abs_err, err;
    for (const ordered_json& r : runs) {
      if (r["saturated"].get<bool>() || !r["metrics"].contains(m) || r["metrics"][m]["error"].is_null()) continue;
      err.push_back(r["metrics"][m]["error"].get<double>());
      abs_err.push_back(std::fabs(err.back()));
    }
    if (err.empty()) continue;
    metrics[m] = {{"runs", err.size()},
                  {"median_abs_error", median(abs_err)},
                  {"max_abs_error", *std::max_element(abs_err.begin(), abs_err.end())},
                  {"median_error", median(err)}};
  }
  s["metrics"] = metrics;
  return s;
}

std::vector<ReplayedRun> replay_all(const std::vector<ObservedRun>& runs, const StepModel& model, int threads) {
  std::vector<ReplayedRun> preds(runs.size());
  std::vector<std::exception_ptr> errors(runs.size());
  const std::vector<size_t> order = heaviest_first(runs.size(), [&](size_t i) { return runs[i].requests.size(); });
  parallel_for(runs.size(), threads, [&](size_t j) {
    const size_t i = order[j];
    try {
      preds[i] = replay_observed(runs[i], model);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return preds;
}

ordered_json validate_document(const std::vector<ObservedRun>& runs, const std::vector<ReplayedRun>& preds,
                               const StepModel& model) {
  std::vector<ordered_json> rows;
  for (size_t i = 0; i < runs.size(); ++i) rows.push_back(compare_run(runs[i], preds[i]));
  // Worst runs first (saturated ones last), ties by id: the same order every time.
  std::stable_sort(rows.begin(), rows.end(), [](const ordered_json& a, const ordered_json& b) {
    if (a["saturated"] != b["saturated"]) return !a["saturated"].get<bool>();
    if (a["worst_abs_error"] != b["worst_abs_error"])
      return a["worst_abs_error"].get<double>() > b["worst_abs_error"].get<double>();
    return a["id"].get<std::string>() < b["id"].get<std::string>();
  });
  ordered_json doc;
  doc["schema"] = "prefixsim.validate/1";
  doc["cost_model"] = ordered_json::parse(to_json(model).dump());
  doc["runs"] = rows;
  doc["summary"] = summarize_runs(doc["runs"]);
  return doc;
}

ordered_json validate_runs(const std::vector<std::string>& paths, const StepModel& model, int threads) {
  std::vector<ObservedRun> runs;
  for (const std::string& p : paths) runs.push_back(read_observed_run(p));
  return validate_document(runs, replay_all(runs, model, threads), model);
}

void write_validate_outputs(const std::string& dir, const ordered_json& doc, const std::string& title) {
  OutputSet out(dir, "--out");
  out.add("validate.json", doc.dump(2) + "\n");
  out.add("validate.md", render_validate_md(doc, title));
  out.add("validate.html", render_validate_html(doc, title));
  out.commit();
}

std::vector<std::string> error_gate_failures(const ordered_json& doc, const std::string& spec) {
  std::vector<std::pair<std::string, double>> limits;
  auto limit_of = [&](const std::string& text, const std::string& what) {
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(x >= 0 && x < 1e6))
      throw InputError("--max-error: " + what + ": '" + text + "' is not a fraction >= 0 (0.1 = 10 %)");
    return x;
  };
  if (spec.find('=') == std::string::npos) {
    const double x = limit_of(spec, "limit");
    for (const char* m : {"ttft_mean", "e2e_mean", "tpot_mean"}) limits.push_back({m, x});
  } else {
    size_t from = 0;
    while (from <= spec.size()) {
      const size_t comma = spec.find(',', from);
      const std::string part = spec.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      const size_t eq = part.find('=');
      const std::string name = eq == std::string::npos ? part : part.substr(0, eq);
      const auto& names = validate_metric_names();
      if (eq == std::string::npos || std::find(names.begin(), names.end(), name) == names.end())
        throw InputError("--max-error: '" + part + "': expected METRIC=FRACTION with METRIC one of ttft_mean, "
                         "ttft_p50, ..., tpot_p99, throughput_rps");
      limits.push_back({name, limit_of(part.substr(eq + 1), name)});
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  }
  std::vector<std::string> failures;
  for (const auto& [name, limit] : limits) {
    const ordered_json& m = doc["summary"]["metrics"];
    if (!m.contains(name)) continue;
    const double med = m[name]["median_abs_error"].get<double>();
    if (med > limit)
      failures.push_back(name + ": median |error| " + std::to_string(med) + " > " + std::to_string(limit));
  }
  return failures;
}

std::pair<double, std::string> worst_median_error(const ordered_json& doc) {
  std::pair<double, std::string> worst{0, ""};
  for (const auto& [name, m] : doc["summary"]["metrics"].items())
    if (m["median_abs_error"].get<double>() > worst.first) worst = {m["median_abs_error"].get<double>(), name};
  return worst;
}

}  // namespace prefixsim
