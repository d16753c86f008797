#include "sim/cost/calibration_text.h"

#include <cstdio>
#include <sstream>

#include "sim/base/error.h"
#include "sim/cost/catalog.h"

namespace prefixsim {
namespace {

std::string fmt_g(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

nlohmann::json to_json(const KindError& e) {
  return {{"steps", e.steps},           {"mape", e.mape},         {"max_ape", e.max_ape}, {"bias", e.bias},
          {"measured_s", e.measured_s}, {"predicted_s", e.predicted_s}};
}

std::string error_line(const std::string& what, const KindError& e) {
  return "  " + what + std::string(what.size() < 8 ? 8 - what.size() : 0, ' ') + std::to_string(e.steps) +
         " steps: MAPE " + percent_text(e.mape) + ", worst " + percent_text(e.max_ape) + ", bias " +
         (e.bias >= 0 ? "+" : "") + percent_text(e.bias) + "; summed " + fmt_g("%.4g", e.predicted_s) +
         " s predicted vs " + fmt_g("%.4g", e.measured_s) + " s measured\n";
}

}  // namespace

std::string percent_text(double fraction) { return fmt_g("%.2f", fraction * 100) + " %"; }

std::string calibration_gpu(const std::string& flag, const ProfileGpu& measured) {
  if (!flag.empty()) return find_gpu(flag, "--gpu").name;
  if (measured.name.find("H100") != std::string::npos) return "h100-sxm-80gb";
  std::string known;
  for (const GpuSpec& g : gpu_catalog()) known += (known.empty() ? "" : ", ") + g.name;
  throw InputError("--gpu: required: the samples' GPU '" + measured.name +
                   "' is not an H100, so name its catalog entry (known: " + known + ")");
}

std::string calibration_summary_text(const CalibrationSamples& s, const Calibration& cal,
                                     const std::string& samples_path, const std::string& out) {
  std::ostringstream os;
  const Profile& p = cal.profile;
  const CostCoefficients& c = p.coefficients;
  os << "calibrated " << p.model << " at TP " << p.tp << " on " << p.gpu.catalog << " (" << p.gpu.name
     << ") from " << samples_path << ":";
  for (StepKind k : kStepKinds)
    os << (k == kStepKinds[0] ? " " : ", ") << samples_of_kind(s, k).size() << " " << to_string(k);
  os << " steps\n"
     << "  overhead " << fmt_g("%.4g", c.overhead_s * 1e3) << " ms, per seq " << fmt_g("%.4g", c.per_seq_s * 1e6)
     << " us, linear " << fmt_g("%.4g", c.linear_s_per_token * 1e6) << " us/token, weight floor "
     << fmt_g("%.4g", c.weight_floor_s * 1e3) << " ms (breakpoint " << fmt_g("%.0f", cal.fit.breakpoint_tokens)
     << " tokens), attention " << fmt_g("%.4g", c.attn_s_per_unit * 1e9) << " ns/unit, KV read "
     << fmt_g("%.4g", c.kv_read_s_per_token * 1e9) << " ns/token"
     << (c.allreduce_s_per_token > 0
               ? ", all-reduce " + fmt_g("%.4g", c.allreduce_s_per_token * 1e6) + " us/token (roofline, not timed)"
               : "")
     << "\n"
     << "  MAPE train " << percent_text(p.fit.mape_train) << " (" << p.fit.train_samples << " steps), held-out "
     << percent_text(p.fit.mape_held_out) << " (" << p.fit.held_out_samples << " steps, max "
     << percent_text(p.fit.max_ape_held_out) << ")\n  MAPE per kind, all steps:";
  for (StepKind k : kStepKinds) {
    const auto subset = samples_of_kind(s, k);
    os << (k == kStepKinds[0] ? " " : ", ") << to_string(k) << " "
       << (subset.empty() ? "-" : percent_text(mape(cal.fit.coefficients, subset)));  // against what was timed
  }
  os << "\nwrote " << out << " (use it with prefixsim replay --profile " << out << ")\n";
  return os.str();
}

std::string validation_text(const Profile& p, const CalibrationSamples& s, const Validation& v,
                            const std::string& samples_path) {
  std::ostringstream os;
  os << "profile for " << p.model << " at TP " << p.tp << " on " << p.gpu.catalog << " (measured "
     << p.date.substr(0, 10) << ", held-out MAPE " << percent_text(p.fit.mape_held_out) << ") against "
     << samples_path << ":\n"
     << error_line("all", v.all);
  for (StepKind k : kStepKinds)
    if (v.by_kind[static_cast<size_t>(k)].steps) os << error_line(to_string(k), v.by_kind[static_cast<size_t>(k)]);
  if (allreduce_untimed(s))
    os << "  (one shard was timed: the profile's all-reduce term, which it did not time, is left out)\n";
  return os.str();
}

nlohmann::json validation_json(const Profile& p, const Validation& v, const std::string& samples_path) {
  nlohmann::json j = {{"samples", samples_path}, {"profile", to_json(p)}, {"all", to_json(v.all)}};
  for (StepKind k : kStepKinds) j["by_kind"][to_string(k)] = to_json(v.by_kind[static_cast<size_t>(k)]);
  return j;
}

}  // namespace prefixsim
