// What `prefixsim gpu calibrate` and `gpu validate` print: the fit of a
// profile to measured step times, and a profile held against measured steps
// (sim/cost/calibration_samples.h does the arithmetic).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/cost/calibration_samples.h"

namespace prefixsim {

// The catalog entry a profile from measured steps stands for: `flag` (--gpu)
// when given, else the one H100 the catalog has when the driver's name says
// H100; guessing any further could pair a profile with the wrong datasheet
// figures (InputError naming --gpu).
std::string calibration_gpu(const std::string& flag, const ProfileGpu& measured);

// The samples per kind, the coefficients, the fit's MAPE (train, held-out,
// per kind over all samples) and where the profile went.
std::string calibration_summary_text(const CalibrationSamples& s, const Calibration& cal,
                                     const std::string& samples_path, const std::string& out);

// Overall and per kind: mean and worst |error|, bias, summed time.
std::string validation_text(const Profile& p, const CalibrationSamples& s, const Validation& v,
                            const std::string& samples_path);
nlohmann::json validation_json(const Profile& p, const Validation& v, const std::string& samples_path);
// "12.34 %"
std::string percent_text(double fraction);

}  // namespace prefixsim
