#include "reports/backend_shadow.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "reports/latency.h"

namespace prefixsim {

namespace {
double rel_error(const BackendStepReport& s) { return (s.modeled_ms - s.measured_ms) / s.measured_ms; }
}  // namespace

BackendReport::Shadow summarize_shadow(std::span<const BackendStepReport> steps) {
  BackendReport::Shadow r;
  std::vector<const BackendStepReport*> timed;
  for (const BackendStepReport& s : steps) {
    r.modeled_ms += s.modeled_ms;
    r.measured_ms += s.measured_ms;
    if (s.measured_ms > 0) timed.push_back(&s);
  }
  r.steps = timed.size();
  if (timed.empty()) return r;
  const size_t n = timed.size();
  const size_t shown = std::min(n, kMaxShadowPoints);
  for (size_t i = 0; i < shown; ++i) r.points.push_back(*timed[i * n / shown]);
  std::vector<double> abs_err;
  for (const BackendStepReport* s : timed) {
    const double e = rel_error(*s);
    r.bias += e;
    abs_err.push_back(std::fabs(e));
  }
  r.bias = 100 * r.bias / static_cast<double>(n);
  const LatencySummary a = summarize(abs_err);
  r.mape = 100 * a.mean;
  r.p50_abs_error = 100 * a.p50;
  r.p90_abs_error = 100 * a.p90;
  std::stable_sort(timed.begin(), timed.end(), [](const BackendStepReport* x, const BackendStepReport* y) {
    return std::fabs(rel_error(*x)) > std::fabs(rel_error(*y));
  });
  for (size_t i = 0; i < n && i < 10; ++i) r.worst.push_back(*timed[i]);
  return r;
}

}  // namespace prefixsim
