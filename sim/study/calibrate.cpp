#include "sim/study/calibrate.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "sim/base/error.h"
#include "sim/base/parallel_for.h"
#include "sim/cost/fit.h"
#include "sim/study/validate.h"

namespace prefixsim {
namespace {

using nlohmann::ordered_json;

// The scale of a term that starts at 0: its prior pulls toward 0 in units
// of 10 us per layer (layer_s, a kernel-launch-sized time), or per step of
// what that is on a 32-layer model (step_s), so both weigh alike.
double zero_term_scale(int term) { return term == kStepS ? 32 * 1e-5 : 1e-5; }

struct Row {
  StepTerms a{};
  double b = 0;
};

// The relative-error rows of one run's measured means.
void add_rows(const ObservedRun& run, const ReplayedRun& pred, std::vector<Row>& rows) {
  const std::pair<double, const LinearMean*> metrics[] = {
      {run.ttft.mean, &pred.ttft_mean}, {run.e2e.mean, &pred.e2e_mean}, {run.tpot.mean, &pred.tpot_mean}};
  for (const auto& [y, lin] : metrics) {
    if (!(std::isfinite(y) && y > 0)) continue;
    Row r;
    for (size_t k = 0; k < r.a.size(); ++k) r.a[k] = lin->gradient[k] / y;
    r.b = 1.0 - lin->constant / y;
    rows.push_back(r);
  }
}

// Bounded least squares over the terms some row depends on; the others keep `current`.
StepTerms solve(const std::vector<Row>& rows, const StepTerms& current, const StepTerms& start, double prior,
                const std::vector<int>& free_terms) {
  std::vector<int> active;
  for (int k = 0; k < kNumStepTerms; ++k) {
    const bool free = free_terms.empty() || std::find(free_terms.begin(), free_terms.end(), k) != free_terms.end();
    const bool used = std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.a[static_cast<size_t>(k)] != 0; });
    if (free && used) active.push_back(k);
  }
  StepTerms out = current;
  if (active.empty()) return out;
  const int n = static_cast<int>(active.size());
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (const Row& r : rows) {
    std::vector<double> row(static_cast<size_t>(n));
    double rhs = r.b;
    for (int k = 0; k < kNumStepTerms; ++k) {
      const auto it = std::find(active.begin(), active.end(), k);
      const double lb = step_term_lower_bound(k);
      if (it == active.end()) rhs -= r.a[static_cast<size_t>(k)] * current[static_cast<size_t>(k)];
      else {
        row[static_cast<size_t>(it - active.begin())] = r.a[static_cast<size_t>(k)];
        rhs -= r.a[static_cast<size_t>(k)] * lb;  // x = term - bound >= 0
      }
    }
    a.push_back(row);
    b.push_back(rhs);
  }
  for (int j = 0; j < n; ++j) {
    const int k = active[static_cast<size_t>(j)];
    const double s0 = start[static_cast<size_t>(k)];
    const double scale = s0 > 0 ? s0 : zero_term_scale(k);
    std::vector<double> row(static_cast<size_t>(n));
    row[static_cast<size_t>(j)] = prior / scale;
    a.push_back(row);
    b.push_back(prior * (s0 - step_term_lower_bound(k)) / scale);
  }
  // Columns scaled to unit norm: the terms' units differ by orders of magnitude.
  const int m = static_cast<int>(a.size());
  std::vector<double> norm(static_cast<size_t>(n), 0.0), flat;
  for (const auto& row : a)
    for (int j = 0; j < n; ++j) norm[static_cast<size_t>(j)] += row[static_cast<size_t>(j)] * row[static_cast<size_t>(j)];
  for (double& v : norm) v = v > 0 ? std::sqrt(v) : 1.0;
  for (const auto& row : a)
    for (int j = 0; j < n; ++j) flat.push_back(row[static_cast<size_t>(j)] / norm[static_cast<size_t>(j)]);
  const std::vector<double> x = nnls(flat, m, n, b);
  for (int j = 0; j < n; ++j) {
    const int k = active[static_cast<size_t>(j)];
    out[static_cast<size_t>(k)] = step_term_lower_bound(k) + x[static_cast<size_t>(j)] / norm[static_cast<size_t>(j)];
  }
  return out;
}

// A run near saturation turns a small step-price change into a large
// queueing change, so its relative errors are not Gaussian: residuals past
// `delta` (CalibrateOptions::robust_delta) count linearly (Huber), in the
// solve (by reweighting) and in the objective that accepts a round.

double residual(const Row& r, const StepTerms& t) {
  double v = -r.b;
  for (size_t k = 0; k < t.size(); ++k) v += r.a[k] * t[k];
  return v;
}

double huber(double e, double delta) {
  const double a = std::fabs(e);
  return a <= delta ? 0.5 * e * e : delta * (a - 0.5 * delta);
}

double objective(const std::vector<Row>& rows, const StepTerms& t, double delta) {
  double s = 0;
  for (const Row& r : rows) s += huber(residual(r, t), delta);
  return rows.empty() ? 0 : s / static_cast<double>(rows.size());
}

double mean_abs_error(const std::vector<Row>& rows, const StepTerms& t) {
  double s = 0;
  for (const Row& r : rows) s += std::fabs(residual(r, t));
  return rows.empty() ? 0 : s / static_cast<double>(rows.size());
}

// Rows scaled by their Huber weights at `t` (IRLS).
std::vector<Row> reweighted(std::vector<Row> rows, const StepTerms& t, double delta) {
  for (Row& r : rows) {
    const double e = std::fabs(residual(r, t));
    const double w = e <= delta ? 1.0 : std::sqrt(delta / e);
    for (double& a : r.a) a *= w;
    r.b *= w;
  }
  return rows;
}

// The rows of every run replayed under `t`.
std::vector<Row> rows_at(const std::vector<ObservedRun>& runs, const StepTerms& t, int threads) {
  StepModel m;
  m.terms = t;
  const std::vector<ReplayedRun> preds = replay_all(runs, m, threads);
  std::vector<Row> rows;
  for (size_t i = 0; i < runs.size(); ++i) add_rows(runs[i], preds[i], rows);
  if (rows.empty()) throw InputError("calibrate: no completed run measured a TTFT, E2E or TPOT mean");
  return rows;
}

// Gauss-Newton rounds with a backtracking line search on the replayed
// objective: solve the linearised problem, then take the largest of 1, 1/2,
// 1/4, 1/8 of the step whose replay lowers the Huber objective; stop when
// none does or the terms settle. `start` anchors the prior.
StepTerms fit_terms(const std::vector<ObservedRun>& runs, const StepTerms& from, const StepTerms& start,
                    const CalibrateOptions& o, int rounds, int threads, std::vector<ordered_json>* log) {
  StepTerms t = from;
  std::vector<Row> rows = rows_at(runs, t, threads);
  double j = objective(rows, t, o.robust_delta);
  for (int round = 0; round < rounds; ++round) {
    const StepTerms target = solve(reweighted(rows, t, o.robust_delta), t, start, o.prior_weight, o.free_terms);
    bool accepted = false;
    double step = 1.0, moved = 0;
    for (int tries = 0; tries < 4 && !accepted; ++tries, step /= 2) {
      StepTerms cand = t;
      for (size_t k = 0; k < t.size(); ++k) cand[k] = t[k] + step * (target[k] - t[k]);
      std::vector<Row> cand_rows = rows_at(runs, cand, threads);
      const double cj = objective(cand_rows, cand, o.robust_delta);
      if (cj < j) {
        moved = 0;
        for (size_t k = 0; k < t.size(); ++k) {
          const double scale = std::max(std::fabs(t[k]), k == kLayerS || k == kStepS ? zero_term_scale(static_cast<int>(k)) : 1e-12);
          moved = std::max(moved, std::fabs(cand[k] - t[k]) / scale);
        }
        t = cand;
        rows = std::move(cand_rows);
        j = cj;
        accepted = true;
      }
    }
    if (log)
      log->push_back({{"round", round + 1},
                      {"accepted_step", accepted ? step * 2 : 0.0},
                      {"objective", j},
                      {"mean_abs_error", mean_abs_error(rows, t)},
                      {"terms", step_terms_json(t)}});
    if (!accepted || moved < o.tolerance) break;
  }
  return t;
}

}  // namespace

CalibrateResult calibrate_runs(const std::vector<ObservedRun>& runs, const StepModel& start,
                               const CalibrateOptions& o) {
  std::vector<ObservedRun> completed;
  for (const ObservedRun& r : runs)
    if (!r.saturated) completed.push_back(r);
  if (completed.empty()) throw InputError("calibrate: every run given was saturated; nothing to fit");
  CalibrateResult res;
  res.model.terms = fit_terms(completed, start.terms, start.terms, o, o.iterations, o.threads, &res.iterations);
  res.fitted = validate_document(runs, replay_all(runs, res.model, o.threads), res.model);

  ordered_json basis_summary = res.fitted["summary"];
  std::string basis = "in-sample: the " + std::to_string(completed.size()) + " completed runs it was fitted on";
  if (o.leave_one_out && completed.size() >= 2) {
    std::vector<ReplayedRun> held(runs.size());
    std::vector<std::exception_ptr> errors(runs.size());
    parallel_for(runs.size(), o.threads, [&](size_t i) {
      try {
        StepModel m = res.model;
        if (!runs[i].saturated) {
          std::vector<ObservedRun> others;
          for (const ObservedRun& r : completed)
            if (r.path != runs[i].path) others.push_back(r);
          m.terms = fit_terms(others, start.terms, start.terms, o, o.iterations, 1, nullptr);
        }
        held[i] = replay_observed(runs[i], m);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    res.held_out = validate_document(runs, held, res.model);
    basis_summary = res.held_out["summary"];
    basis = "leave-one-out over " + std::to_string(completed.size()) +
            " completed observed runs: each predicted by the terms fitted on the others";
  }
  ordered_json ke;
  ke["validated"] = true;
  ke["basis"] = basis;
  ke["runs"] = basis_summary["completed_runs"];
  ke["metrics"] = basis_summary["metrics"];
  res.model.known_error = nlohmann::json::parse(ke.dump());
  std::string list;
  for (const ObservedRun& r : completed) list += (list.empty() ? "" : ", ") + r.id;
  res.model.provenance = "prefixsim calibrate --observed over " + std::to_string(completed.size()) +
                         " completed runs (" + list + "), starting from " +
                         (start.provenance.empty() ? std::string("the roofline's terms") : start.provenance);
  return res;
}

}  // namespace prefixsim
