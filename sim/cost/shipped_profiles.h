// The calibrated cost-model profiles that ship inside the binary
// (sim/cost/catalog/profiles/*.json, fitted by `prefixsim gpu calibrate` from step
// times measured on a real GPU), and how `--profile` picks one: a path to a
// profile file, or `builtin` for the shipped profile of the run's model, GPU
// and TP degree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/profile.h"

namespace prefixsim {

// What `--profile builtin` asks for.
inline constexpr std::string_view kBuiltinProfile = "builtin";

struct ShippedProfile {
  std::string file;  // "sim/cost/catalog/profiles/NAME.json", as errors and reports name it
  Profile profile;
};

// Every shipped profile, in file-name order, validated once (a bad one is an
// InternalError: the build shipped it).
const std::vector<ShippedProfile>& shipped_profiles();

// The shipped profile for (model, gpu catalog name, tp), or nullptr.
const ShippedProfile* find_shipped_profile(std::string_view model, std::string_view gpu, int tp);

// `--profile` resolved: `builtin` -> the shipped profile for this run (an
// InputError naming --profile and listing what ships when there is none);
// anything else is a path, read and validated.
Profile resolve_profile(const std::string& spec, std::string_view model, std::string_view gpu, int tp);

}  // namespace prefixsim
