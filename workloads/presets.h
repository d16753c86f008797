// The YAML text of every preset in workloads/presets/, compiled into the
// binary (embed_presets.py generates the definition at build time) so that
// `prefixsim generate chatbot` works from any directory.
#pragma once

#include <span>
#include <string_view>

namespace prefixsim::workloads {

struct EmbeddedPreset {
  std::string_view name;  // file name without .yaml
  std::string_view text;
};

std::span<const EmbeddedPreset> embedded_presets();

}  // namespace prefixsim::workloads
