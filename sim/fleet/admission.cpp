#include "sim/fleet/admission.h"

#include <cstdio>

#include "sim/base/error.h"
#include "sim/base/spec_params.h"
#include "sim/fleet/router.h"

namespace prefixsim {

AdmissionConfig parse_admission(const std::string& spec) {
  const ParsedSpec ps = parse_spec(spec, "--admission");
  AdmissionConfig c;
  if (ps.name == "off" || ps.name == "none") {
    if (!ps.params.empty()) throw InputError("--admission " + ps.name + ": takes no parameters");
    return c;
  }
  if (ps.name != "saturation")
    throw InputError("--admission: unknown '" + ps.name + "' (off, or saturation[:waiting=N,kv=F,queue=N])");
  SpecParams p("--admission saturation", ps.params);
  c.enabled = true;
  c.waiting = p.get_int("waiting", c.waiting);
  if (c.waiting < 0 || c.waiting > (int64_t{1} << 30))
    throw InputError("--admission saturation: waiting must be in [0, 2^30]");
  c.kv = p.get_double_in("kv", c.kv, 0, 1);
  c.queue = p.get_int("queue", c.queue);
  if (c.queue < 0 || c.queue > (int64_t{1} << 30)) throw InputError("--admission saturation: queue must be in [0, 2^30]");
  p.reject_unused();
  return c;
}

std::string admission_text(const AdmissionConfig& c) {
  if (!c.enabled) return "off";
  char kv[32];
  std::snprintf(kv, sizeof kv, "%g", c.kv);
  return "saturation:waiting=" + std::to_string(c.waiting) + ",kv=" + kv + ",queue=" + std::to_string(c.queue);
}

bool fleet_saturated(const FleetView& view, const AdmissionConfig& c) {
  for (uint32_t i = 0; i < view.size(); ++i)
    if (static_cast<int64_t>(view.waiting(i)) <= c.waiting && view.kv_usage(i) <= c.kv) return false;
  return true;
}

}  // namespace prefixsim
