#include "sim/base/yaml_doc.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "sim/base/error.h"
#include "sim/base/json_out.h"

namespace prefixsim {

namespace {

long line_of(const YAML::Mark& m) { return m.is_null() ? 1 : m.line + 1; }

// One pass over the parser's events, before any tree is built. It notes
// where each document starts and where its first node is, and counts the
// nodes and scalar bytes of the document as it would be expanded: an alias
// adds the whole size of its anchored node, which is known once that node
// has ended. This costs one step per event, whatever the aliases multiply to.
class StreamScan final : public YAML::EventHandler {
 public:
  explicit StreamScan(const std::string& file) : file_(file) {}

  void OnDocumentStart(const YAML::Mark& m) override {
    starts.push_back(m);
    first_nodes.push_back(YAML::Mark::null_mark());
    nodes_ = bytes_ = 0;
    anchors_.clear();
    open_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override { leaf(m, anchor, 0); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    leaf(m, anchor, static_cast<int64_t>(value.size()));
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(m, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(m, anchor);
  }
  void OnMapEnd() override { close(); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override;

  std::vector<YAML::Mark> starts, first_nodes;

 private:
  // An anchored node's expanded size; nodes < 0 while the node is still open.
  struct Size {
    int64_t nodes = 0, bytes = 0;
  };
  struct Open {
    YAML::anchor_t anchor;
    int64_t nodes_before, bytes_before;
  };

  void first_node(const YAML::Mark& m) {
    if (!first_nodes.empty() && first_nodes.back().is_null()) first_nodes.back() = m;
  }
  void leaf(const YAML::Mark& m, YAML::anchor_t anchor, int64_t bytes) {
    first_node(m);
    nodes_ += 1;
    bytes_ += bytes;
    if (anchor) anchor_size(anchor) = {1, bytes};
  }
  void open(const YAML::Mark& m, YAML::anchor_t anchor) {
    first_node(m);
    open_.push_back({anchor, nodes_, bytes_});
    nodes_ += 1;
    if (anchor) anchor_size(anchor) = {-1, 0};
  }
  void close() {
    const Open o = open_.back();
    open_.pop_back();
    if (o.anchor) anchor_size(o.anchor) = {nodes_ - o.nodes_before, bytes_ - o.bytes_before};
  }
  Size& anchor_size(YAML::anchor_t anchor) {
    if (anchor >= anchors_.size()) anchors_.resize(anchor + 1);
    return anchors_[anchor];
  }

  const std::string& file_;
  int64_t nodes_ = 0, bytes_ = 0;  // the current document, expanded so far
  std::vector<Size> anchors_;      // by anchor id (yaml-cpp numbers them per document from 1)
  std::vector<Open> open_;         // the collections not yet ended, outermost first
};

void StreamScan::OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) {
  first_node(m);
  const Size s = anchor < anchors_.size() ? anchors_[anchor] : Size{1, 0};
  if (s.nodes < 0)
    throw InputError(file_, line_of(m), "an alias inside the node it names: the tree would never end");
  nodes_ += s.nodes;
  bytes_ += s.bytes;
  // Checked at aliases only: without them the tree is the text, which the
  // readers already bound by size.
  if (nodes_ > kMaxYamlExpandedNodes)
    throw InputError(file_, line_of(m),
                     "YAML expands to more than " + std::to_string(kMaxYamlExpandedNodes) + " nodes (aliases)");
  if (bytes_ > kMaxYamlExpandedBytes)
    throw InputError(file_, line_of(m), "YAML expands to more than " + std::to_string(kMaxYamlExpandedBytes) +
                                            " bytes of text (aliases)");
}

// Every mapping checked for a key given twice or a key that is not a plain
// name, every scalar for UTF-8. A node reached again through an alias was
// checked where it first appeared (its anchor, earlier in the text, so its
// errors name that path), and is not walked again.
class TreeCheck {
 public:
  explicit TreeCheck(const std::string& file) : file_(file) {}

  void walk(const YAML::Node& node, const std::string& path) {
    if (!first_visit(node)) return;
    if (node.IsScalar()) {
      if (!valid_utf8(node.Scalar())) fail(node, path, "must be valid UTF-8 (it goes into traces and reports)");
    } else if (node.IsSequence()) {
      size_t i = 0;
      for (const YAML::Node& item : node) walk(item, path + "[" + std::to_string(i++) + "]");
    } else if (node.IsMap()) {
      walk_map(node, path);
    }
  }

 private:
  void walk_map(const YAML::Node& node, const std::string& path) {
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      // A key must be a plain name: YAML allows a list or a mapping as a key
      // ("? a: 1"), which no reader here expects (reading one as text threw
      // yaml-cpp's "bad conversion", exit 3).
      if (!it->first.IsScalar()) fail(it->first, path, "a key must be a plain name, not a list or mapping");
      const std::string& key = it->first.Scalar();
      if (!valid_utf8(key)) fail(it->first, path, "a key must be valid UTF-8");
      const std::string at = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) fail(it->first, at, "key given twice");
      walk(it->second, at);
    }
  }

  // Nodes are told apart by identity (an alias is the anchored node itself),
  // looked up by where they start in the text.
  bool first_visit(const YAML::Node& node) {
    std::vector<YAML::Node>& at = seen_[node.Mark().pos];
    for (const YAML::Node& n : at)
      if (n.is(node)) return false;
    at.push_back(node);
    return true;
  }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& path, const std::string& msg) const {
    throw InputError(file_, line_of(at.Mark()), (path.empty() ? std::string() : path + ": ") + msg);
  }

  const std::string& file_;
  std::unordered_map<int, std::vector<YAML::Node>> seen_;
};

// Counts the stream's documents with the parser (three at most) rather than
// YAML::LoadAll: yaml-cpp 0.7's LoadAll never returns on a stream it cannot
// advance through (one that starts with ',', found by the scenario fuzzer),
// yielding empty documents for ever. A second document that starts where the
// first did is that case: the parser made no progress.
void scan_stream(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  StreamScan docs(file);
  int n = 0;
  while (n < 3 && parser.HandleNextDocument(docs)) ++n;
  for (size_t i = 1; i < docs.starts.size(); ++i)
    if (docs.starts[i].pos == docs.starts[i - 1].pos)
      throw InputError(file, docs.starts[i].line + 1,
                       "invalid YAML: the parser cannot read past column " + std::to_string(docs.starts[i].column + 1) +
                           " (a stray ',', ']' or '}'?)");
  if (n >= 2) {
    const YAML::Mark m = docs.first_nodes.size() > 1 && !docs.first_nodes[1].is_null() ? docs.first_nodes[1]
                         : docs.starts.size() > 1                                    ? docs.starts[1]
                                                                                     : YAML::Mark::null_mark();
    throw InputError(file, line_of(m), "a second YAML document ('---'): give one document only");
  }
}

}  // namespace

YAML::Node load_yaml_strict(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    scan_stream(text, file);
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(file, e.mark.line + 1, "invalid YAML: " + e.msg);
  }
  TreeCheck(file).walk(root, "");
  return root;
}

}  // namespace prefixsim
