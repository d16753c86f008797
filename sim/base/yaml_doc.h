// The one YAML loader: every YAML the project reads (scenarios, sweep grids,
// workloads, the model and GPU catalogs, built in or given by the user) comes
// through load_yaml_strict, so each reader gets the same guarantees.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

namespace prefixsim {

// yaml-cpp shares an aliased node, so a file of a few hundred bytes can stand
// for a tree of billions of nodes (ten levels of nine aliases: 9^10), which
// any reader walking it would spin on. The tree as it would be expanded is
// bounded instead. The largest real configs (sweep grids, catalogs) expand to
// a few thousand nodes; a million is far above any of them and is walked in
// milliseconds.
constexpr int64_t kMaxYamlExpandedNodes = 1'000'000;
// The text the expanded tree holds, likewise: one long scalar aliased a
// thousand times is as costly to a reader as a thousand copies. 64 MiB is
// far above any real config (they are kilobytes).
constexpr int64_t kMaxYamlExpandedBytes = int64_t{64} << 20;

// Parses YAML text strictly; every refusal is InputError "FILE:LINE: ...":
//   - invalid YAML, or a second document ('---');
//   - a tree that expands through aliases past the bounds above, or an alias
//     inside its own anchor;
//   - a key given twice in a mapping, or a key that is a list or a mapping
//     (yaml-cpp accepts both silently);
//   - a scalar (key or value) that is not valid UTF-8 (it would reach the
//     JSON writers and traces).
// Errors inside a mapping name the dotted key path ("arrival.rate: ...").
YAML::Node load_yaml_strict(const std::string& text, const std::string& file);

}  // namespace prefixsim
