// Synthetic workloads: a YAML description (or a built-in preset of the same
// form) becomes a streaming RequestSource of token-form requests in arrival
// order. Same description + seed -> the same requests, byte for byte.
//
// A workload file:
//   name: my-workload
//   seed: 42                 # default 1
//   requests: 2000           # default 1000
//   arrival: {process: poisson|gamma|fixed, rate: R, cv: C}   # R conversations/s
//   pattern: chatbot         # one of pattern_names(), with
//   params: {...}            #   its parameters (see workloads/presets/*.yaml)
// or, instead of pattern/params, a mixture:
//   mixture:
//     - {preset: chatbot, weight: 3, salt: tenant-a}
//     - {file: other.yaml, weight: 1, salt: tenant-b}      # relative to this file
//     - {pattern: random, params: {...}, weight: 0.5}
// Each arrival starts a conversation of a component drawn by weight; a
// multi-turn conversation's later turns follow at think-time gaps. A salt
// isolates the component's cache blocks (vLLM's cache_salt, per tenant).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/request_source.h"

namespace prefixsim::workloads {

// Command-line overrides of a workload's own settings.
struct WorkloadOverrides {
  std::optional<int64_t> requests;
  std::optional<double> rate;     // arrivals (conversation starts) per second
  std::optional<uint64_t> seed;
};

// Built-in presets, embedded into the binary at build time.
std::vector<std::string> preset_names();
// The YAML text of a preset, or nullptr.
const std::string* preset_text(const std::string& name);

// `preset_or_path` is a preset name or a YAML file. Throws InputError
// ("FILE:LINE: key: message") for bad YAML, unknown keys or values, and an
// unknown preset that is not a file either.
std::unique_ptr<RequestSource> make_workload(const std::string& preset_or_path, const WorkloadOverrides& o = {});

}  // namespace prefixsim::workloads

namespace prefixsim {
using workloads::make_workload;
using workloads::WorkloadOverrides;
}  // namespace prefixsim
