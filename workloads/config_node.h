// Typed, validated access to a workload YAML document. Every error names the
// file, the line and the dotted key path ("chatbot.yaml:7: params.user_tokens.dist:
// unknown distribution 'foo'"), and keys nobody reads are rejected, so a typo
// never silently falls back to a default.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace prefixsim::workloads {

class ConfigNode {
 public:
  ConfigNode(YAML::Node node, std::string file, std::string path)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

  // Parses YAML text with load_yaml_strict (sim/base/yaml_doc.h); every
  // refusal is InputError("FILE:LINE: ...").
  static ConfigNode parse(const std::string& text, const std::string& file);

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  long line() const;  // 1-based line of this node (of its parent when missing)
  const YAML::Node& yaml() const { return node_; }

  bool is_map() const { return node_.IsMap(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_sequence() const { return node_.IsSequence(); }

  // A child of a map, or nullopt when absent (or null).
  std::optional<ConfigNode> get(const std::string& key) const;
  ConfigNode require(const std::string& key) const;
  std::vector<ConfigNode> elements() const;  // a sequence's items

  std::string as_string() const;
  double as_double(double lo, double hi) const;
  int64_t as_int(int64_t lo, int64_t hi) const;
  uint64_t as_u64() const;

  // The node must be a map whose keys are all in `allowed`.
  void expect_map(std::initializer_list<const char*> allowed) const;

  [[noreturn]] void fail(const std::string& msg) const;

 private:
  ConfigNode child(const YAML::Node& n, const std::string& key) const;
  YAML::Node node_;
  std::string file_;
  std::string path_;
  long parent_line_ = 0;
};

}  // namespace prefixsim::workloads
