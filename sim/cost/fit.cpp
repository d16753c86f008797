#include "sim/cost/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sim/base/error.h"

namespace prefixsim {

namespace {

// Least squares on the columns `cols` of A (row-major m x n) by Householder
// QR; returns the solution for those columns (size cols.size()). Columns are
// assumed to have been scaled to comparable norms by the caller.
std::vector<double> lstsq_columns(std::span<const double> a, int m, int n, std::span<const double> b,
                                  const std::vector<int>& cols) {
  const int k = static_cast<int>(cols.size());
  std::vector<double> r(static_cast<size_t>(m) * k);  // column-major m x k copy
  for (int j = 0; j < k; ++j)
    for (int i = 0; i < m; ++i) r[static_cast<size_t>(j) * m + i] = a[static_cast<size_t>(i) * n + cols[j]];
  std::vector<double> y(b.begin(), b.end());
  for (int j = 0; j < k; ++j) {
    double* col = &r[static_cast<size_t>(j) * m];
    double norm = 0;
    for (int i = j; i < m; ++i) norm += col[i] * col[i];
    norm = std::sqrt(norm);
    if (norm == 0) continue;
    const double alpha = col[j] > 0 ? -norm : norm;
    // v = x - alpha e_j, stored in col[j..m); H = I - 2 v v^T / (v^T v)
    col[j] -= alpha;
    double vtv = 0;
    for (int i = j; i < m; ++i) vtv += col[i] * col[i];
    auto reflect = [&](double* x) {
      double d = 0;
      for (int i = j; i < m; ++i) d += col[i] * x[i];
      const double f = 2 * d / vtv;
      for (int i = j; i < m; ++i) x[i] -= f * col[i];
    };
    for (int jj = j + 1; jj < k; ++jj) reflect(&r[static_cast<size_t>(jj) * m]);
    reflect(y.data());
    // The reflected column j is alpha e_j; keep R's diagonal in col[j].
    col[j] = alpha;
    for (int i = j + 1; i < m; ++i) col[i] = 0;
  }
  // Back substitution R z = Q^T y (dependent columns get 0).
  std::vector<double> z(k, 0.0);
  double max_diag = 0;
  for (int j = 0; j < k; ++j) max_diag = std::max(max_diag, std::fabs(r[static_cast<size_t>(j) * m + j]));
  for (int j = k - 1; j >= 0; --j) {
    const double d = r[static_cast<size_t>(j) * m + j];
    if (std::fabs(d) <= 1e-12 * max_diag) continue;
    double s = y[j];
    for (int jj = j + 1; jj < k; ++jj) s -= r[static_cast<size_t>(jj) * m + j] * z[jj];
    z[j] = s / d;
  }
  return z;
}

constexpr int kTerms = 6;  // overhead, linear, floor, attention, KV read, per sequence

struct Design {
  std::vector<double> a;  // row-major rows x kTerms, each row divided by its measured time
  std::vector<double> b;  // all ones: the measured time divided by itself
  int rows = 0;
};

// A candidate split: samples with N >= compute_from are compute-bound (linear*N),
// those with N <= floor_upto pay the floor. With floor_upto < compute_from the
// floor is its own column; with both equal to v the linear column is
// max(N, v) and the floor is tied to linear*v.
Design design(std::span<const StepSample> s, double floor_upto, double compute_from, bool tied, bool per_seq) {
  Design d;
  d.rows = static_cast<int>(s.size());
  d.a.assign(s.size() * kTerms, 0.0);
  d.b.assign(s.size(), 1.0);
  for (size_t i = 0; i < s.size(); ++i) {
    const BatchSummary& x = s[i].shape;
    const double n = static_cast<double>(x.new_tokens);
    double* row = &d.a[i * kTerms];
    row[0] = 1;
    if (tied) {
      row[1] = std::max(n, compute_from);
    } else {
      row[1] = n >= compute_from ? n : 0;
      row[2] = n <= floor_upto ? 1 : 0;
    }
    row[3] = x.attn_units;
    row[4] = x.context_tokens;
    row[5] = per_seq ? static_cast<double>(x.seqs) : 0;
    for (int j = 0; j < kTerms; ++j) row[j] /= s[i].seconds;
  }
  return d;
}

// NNLS on a design with its columns scaled to unit norm (attention units and
// the constant differ by ten orders of magnitude); returns the unscaled
// coefficients and the weighted residual sum of squares.
std::pair<std::vector<double>, double> solve(const Design& d) {
  std::vector<double> scale(kTerms, 0.0);
  for (int j = 0; j < kTerms; ++j) {
    double s = 0;
    for (int i = 0; i < d.rows; ++i) s += d.a[static_cast<size_t>(i) * kTerms + j] * d.a[static_cast<size_t>(i) * kTerms + j];
    scale[j] = std::sqrt(s);
  }
  std::vector<double> a = d.a;
  for (int i = 0; i < d.rows; ++i)
    for (int j = 0; j < kTerms; ++j) {
      double& v = a[static_cast<size_t>(i) * kTerms + j];
      v = scale[j] > 0 ? v / scale[j] : 0;
    }
  std::vector<double> x = nnls(a, d.rows, kTerms, d.b);
  double sse = 0;
  for (int i = 0; i < d.rows; ++i) {
    double r = -d.b[i];
    for (int j = 0; j < kTerms; ++j) r += a[static_cast<size_t>(i) * kTerms + j] * x[j];
    sse += r * r;
  }
  for (int j = 0; j < kTerms; ++j) x[j] = scale[j] > 0 ? x[j] / scale[j] : 0;
  return {x, sse};
}

CostCoefficients to_coefficients(const std::vector<double>& x, bool tied, double v) {
  CostCoefficients c;
  c.overhead_s = x[0];
  c.linear_s_per_token = x[1];
  c.weight_floor_s = tied ? x[1] * v : x[2];
  c.attn_s_per_unit = x[3];
  c.kv_read_s_per_token = x[4];
  c.per_seq_s = x[5];
  return c;
}

}  // namespace

std::vector<double> nnls(std::span<const double> a, int m, int n, std::span<const double> b) {
  if (m < 1 || n < 1 || a.size() != static_cast<size_t>(m) * n || b.size() != static_cast<size_t>(m))
    throw InternalError("nnls: inconsistent dimensions");
  std::vector<double> x(n, 0.0), w(n), resid(m);
  std::vector<bool> passive(n, false);
  auto gradient = [&] {
    for (int i = 0; i < m; ++i) {
      double r = b[i];
      for (int j = 0; j < n; ++j) r -= a[static_cast<size_t>(i) * n + j] * x[j];
      resid[i] = r;
    }
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int i = 0; i < m; ++i) s += a[static_cast<size_t>(i) * n + j] * resid[i];
      w[j] = s;
    }
  };
  double bnorm = 0;
  for (double v : b) bnorm += v * v;
  const double tol = 1e-12 * std::max(1.0, std::sqrt(bnorm));
  gradient();
  for (int outer = 0; outer < 3 * n + 3; ++outer) {
    int best = -1;
    for (int j = 0; j < n; ++j)
      if (!passive[j] && w[j] > tol && (best < 0 || w[j] > w[best])) best = j;
    if (best < 0) break;  // KKT: no active variable would decrease the residual
    passive[best] = true;
    for (int inner = 0; inner < 3 * n + 3; ++inner) {
      std::vector<int> cols;
      for (int j = 0; j < n; ++j)
        if (passive[j]) cols.push_back(j);
      const std::vector<double> zp = lstsq_columns(a, m, n, b, cols);
      std::vector<double> z(n, 0.0);
      bool feasible = true;
      for (size_t t = 0; t < cols.size(); ++t) {
        z[cols[t]] = zp[t];
        feasible = feasible && zp[t] > 0;
      }
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z until the first passive variable hits zero.
      double alpha = 1;
      for (int j : cols)
        if (z[j] <= 0) alpha = std::min(alpha, x[j] / (x[j] - z[j]));
      for (int j = 0; j < n; ++j) {
        x[j] += alpha * (z[j] - x[j]);
        if (passive[j] && x[j] <= 1e-15) {
          passive[j] = false;
          x[j] = 0;
        }
      }
    }
    gradient();
  }
  return x;
}

double mape(const CostCoefficients& c, std::span<const StepSample> samples) {
  if (samples.empty()) return 0;
  double s = 0;
  for (const StepSample& x : samples) s += std::fabs(step_seconds(c, x.shape) - x.seconds) / x.seconds;
  return s / static_cast<double>(samples.size());
}

double max_ape(const CostCoefficients& c, std::span<const StepSample> samples) {
  double m = 0;
  for (const StepSample& x : samples) m = std::max(m, std::fabs(step_seconds(c, x.shape) - x.seconds) / x.seconds);
  return m;
}

FitResult fit_cost_model(std::span<const StepSample> samples, const FitOptions& options) {
  if (options.held_out_every == 1 || options.held_out_every < 0)
    throw InputError("fit: held_out_every must be 0 (none) or at least 2");
  std::vector<StepSample> train, held;
  for (size_t i = 0; i < samples.size(); ++i) {
    const StepSample& s = samples[i];
    if (!(std::isfinite(s.seconds) && s.seconds > 0))
      throw InputError("fit: sample " + std::to_string(i) + " has a measured time that is not a positive number");
    if (s.shape.seqs < 1 || s.shape.new_tokens < 1)
      throw InputError("fit: sample " + std::to_string(i) + " is an empty step (no sequences or no new tokens)");
    const bool hold = options.held_out_every > 0 && i % options.held_out_every ==
                                                         static_cast<size_t>(options.held_out_every - 1);
    (hold ? held : train).push_back(s);
  }
  if (train.size() < 2 * kTerms)
    throw InputError("fit: " + std::to_string(train.size()) + " training samples; need at least " +
                     std::to_string(2 * kTerms) + " for " + std::to_string(kTerms) + " terms");

  std::vector<double> ns;
  for (const StepSample& s : train) ns.push_back(static_cast<double>(s.shape.new_tokens));
  std::sort(ns.begin(), ns.end());
  ns.erase(std::unique(ns.begin(), ns.end()), ns.end());

  double best_sse = std::numeric_limits<double>::infinity();
  FitResult best;
  auto consider = [&](const std::vector<double>& x, double sse, bool tied, double v) {
    if (sse < best_sse * (1 - 1e-12)) {
      best_sse = sse;
      best.coefficients = to_coefficients(x, tied, v);
      best.breakpoint_tokens = tied ? v : x[2] / x[1];
    }
  };
  // Breakpoint on a measured token count (or 0: no floor).
  std::vector<double> tied_at = {0.0};
  tied_at.insert(tied_at.end(), ns.begin(), ns.end());
  for (double v : tied_at) {
    auto [x, sse] = solve(design(train, v, v, true, options.fit_per_seq));
    consider(x, sse, true, v);
  }
  // Breakpoint strictly between two measured token counts: floor free, kept
  // only when floor/linear lands inside that gap (else the split is inconsistent).
  for (size_t k = 0; k + 1 < ns.size(); ++k) {
    auto [x, sse] = solve(design(train, ns[k], ns[k + 1], false, options.fit_per_seq));
    if (x[1] <= 0) continue;
    const double nstar = x[2] / x[1];
    if (nstar >= ns[k] && nstar <= ns[k + 1]) consider(x, sse, false, 0);
  }

  best.fit.method = "weighted (1/y) NNLS over overhead, linear, weight floor, attention, KV read" +
                    std::string(options.fit_per_seq ? ", per sequence" : "") + "; breakpoint scan";
  best.fit.train_samples = static_cast<int64_t>(train.size());
  best.fit.held_out_samples = static_cast<int64_t>(held.size());
  best.fit.mape_train = mape(best.coefficients, train);
  const std::span<const StepSample> eval = held.empty() ? std::span<const StepSample>(train) : held;
  best.fit.mape_held_out = mape(best.coefficients, eval);
  best.fit.max_ape_held_out = max_ape(best.coefficients, eval);
  return best;
}

}  // namespace prefixsim
