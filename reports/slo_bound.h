// One bound of a service level: a figure at most (latency) or at least (hit
// rate) a limit. The arithmetic behind plan's SloTerm (sim/study/
// plan_search.h), and behind the margins plan.md prints from plan.json.
#pragma once

#include <cmath>

namespace prefixsim {

// Whether v keeps the bound; a missing figure (NaN) never does.
inline bool slo_meets(bool at_most, double limit, double v) {
  if (!std::isfinite(v)) return false;
  return at_most ? v <= limit : v >= limit;
}

// How far inside the limit v is, as a fraction of the limit (negative:
// outside); NaN for a missing figure or a zero limit.
inline double slo_margin(bool at_most, double limit, double v) {
  if (!std::isfinite(v) || limit == 0) return NAN;
  return at_most ? (limit - v) / limit : (v - limit) / limit;
}

}  // namespace prefixsim
