#include "workloads/config_node.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/base/error.h"
#include "sim/base/yaml_doc.h"

namespace prefixsim::workloads {

ConfigNode ConfigNode::parse(const std::string& text, const std::string& file) {
  const YAML::Node root = load_yaml_strict(text, file);
  ConfigNode n(root, file, "");
  n.parent_line_ = 1;
  if (!root.IsMap()) n.fail("a workload file must be a YAML mapping (key: value lines)");
  return n;
}

long ConfigNode::line() const {
  const YAML::Mark m = node_.Mark();
  if (m.line >= 0 && !m.is_null()) return m.line + 1;
  return parent_line_;
}

void ConfigNode::fail(const std::string& msg) const {
  throw InputError(file_, line(), (path_.empty() ? std::string() : path_ + ": ") + msg);
}

ConfigNode ConfigNode::child(const YAML::Node& n, const std::string& key) const {
  ConfigNode c(n, file_, path_.empty() ? key : path_ + "." + key);
  c.parent_line_ = line();
  return c;
}

std::optional<ConfigNode> ConfigNode::get(const std::string& key) const {
  if (!node_.IsMap()) fail("expected a mapping");
  const YAML::Node n = node_[key];
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  return child(n, key);
}

ConfigNode ConfigNode::require(const std::string& key) const {
  auto c = get(key);
  if (!c) fail("missing required key '" + key + "'");
  return *c;
}

std::vector<ConfigNode> ConfigNode::elements() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<ConfigNode> out;
  for (size_t i = 0; i < node_.size(); ++i) {
    std::ostringstream p;
    p << path_ << '[' << i << ']';  // key[i], not key.[i]
    ConfigNode c(node_[i], file_, p.str());
    c.parent_line_ = line();
    out.push_back(std::move(c));
  }
  return out;
}

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a string");  // UTF-8: load_yaml_strict checked every scalar
  return node_.Scalar();
}

double ConfigNode::as_double(double lo, double hi) const {
  if (!node_.IsScalar()) fail("expected a number");
  const std::string& s = node_.Scalar();
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) fail("'" + s + "' is not a number");
  if (v < lo || v > hi) {
    std::ostringstream msg;
    msg << s << " is out of range [" << lo << ", " << hi << "]";
    fail(msg.str());
  }
  return v;
}

int64_t ConfigNode::as_int(int64_t lo, int64_t hi) const {
  if (!node_.IsScalar()) fail("expected an integer");
  const std::string& s = node_.Scalar();
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail("'" + s + "' is not an integer");
  if (v < lo || v > hi) fail(s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

uint64_t ConfigNode::as_u64() const {
  if (!node_.IsScalar()) fail("expected a non-negative integer");
  const std::string& s = node_.Scalar();
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail("'" + s + "' is not a non-negative integer");
  return v;
}

void ConfigNode::expect_map(std::initializer_list<const char*> allowed) const {
  if (!node_.IsMap()) fail("expected a mapping");
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      ConfigNode k(it->first, file_, path_.empty() ? key : path_ + "." + key);
      k.parent_line_ = line();
      k.fail("unknown key (expected one of: " + list + ")");
    }
  }
}

}  // namespace prefixsim::workloads
