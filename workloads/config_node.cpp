#include "workloads/config_node.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "sim/base/error.h"
#include "sim/base/json_out.h"

namespace prefixsim::workloads {

namespace {

// Every mapping in the tree, checked for a key given twice (yaml-cpp keeps
// both, and a lookup would silently take one).
void refuse_duplicate_keys(const YAML::Node& node, const std::string& file, const std::string& path) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) refuse_duplicate_keys(node[i], file, path + "[" + std::to_string(i) + "]");
    return;
  }
  if (!node.IsMap()) return;
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // A key must be a plain name: YAML allows a list or a mapping as a key
    // ("? a: 1"), which no reader here expects (found by the scenario fuzzer:
    // reading such a key as text threw yaml-cpp's "bad conversion", exit 3).
    if (!it->first.IsScalar())
      throw InputError(file, it->first.Mark().line + 1,
                       (path.empty() ? std::string() : path + ": ") + "a key must be a plain name, not a list or mapping");
    const std::string key = it->first.Scalar();
    const std::string at = path.empty() ? key : path + "." + key;
    if (!seen.insert(key).second) throw InputError(file, it->first.Mark().line + 1, at + ": key given twice");
    refuse_duplicate_keys(it->second, file, at);
  }
}

}  // namespace

namespace {
// Where each document of a stream starts, and where its first node is;
// nothing else is kept.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& m) override {
    starts.push_back(m);
    first_nodes.push_back(YAML::Mark::null_mark());
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}
  std::vector<YAML::Mark> starts, first_nodes;

 private:
  void node(const YAML::Mark& m) {
    if (!first_nodes.empty() && first_nodes.back().is_null()) first_nodes.back() = m;
  }
};
}  // namespace

YAML::Node load_yaml_strict(const std::string& text, const std::string& file) {
  // Documents are counted with the parser, three at most, rather than by
  // YAML::LoadAll: yaml-cpp 0.7's LoadAll never returns on a stream it
  // cannot advance through (one that starts with ',', found by the scenario
  // fuzzer), yielding empty documents for ever. A second document that
  // starts where the first did is that case: the parser made no progress.
  YAML::Node root;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts docs;
    int n = 0;
    while (n < 3 && parser.HandleNextDocument(docs)) ++n;
    for (size_t i = 1; i < docs.starts.size(); ++i)
      if (docs.starts[i].pos == docs.starts[i - 1].pos)
        throw InputError(file, docs.starts[i].line + 1,
                         "invalid YAML: the parser cannot read past column " +
                             std::to_string(docs.starts[i].column + 1) + " (a stray ',', ']' or '}'?)");
    if (n >= 2) {
      const YAML::Mark m = docs.first_nodes.size() > 1 && !docs.first_nodes[1].is_null() ? docs.first_nodes[1]
                           : docs.starts.size() > 1                                    ? docs.starts[1]
                                                                                       : YAML::Mark::null_mark();
      throw InputError(file, m.is_null() ? 1 : m.line + 1, "a second YAML document ('---'): give one document only");
    }
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(file, e.mark.line + 1, "invalid YAML: " + e.msg);
  }
  refuse_duplicate_keys(root, file, "");
  return root;
}

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
  if (!node_.IsScalar()) fail("expected a string");
  if (!valid_utf8(node_.Scalar())) fail("must be valid UTF-8 (it goes into traces and reports)");
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
