// load_yaml_strict: the one YAML loader every reader uses (scenarios, grids,
// workloads, catalogs). What it refuses, and that a few real aliases still work.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "sim/base/error.h"
#include "sim/base/yaml_doc.h"

using prefixsim::InputError;
using prefixsim::load_yaml_strict;

namespace {

// `levels` levels of nine aliases over a list of nine scalars: level k
// expands to about 9^(k+1) nodes, in a few hundred bytes of text.
std::string alias_ladder(int levels) {
  std::string y = "a: &a [x,x,x,x,x,x,x,x,x]\n";
  std::string prev = "a";
  for (int i = 1; i <= levels; ++i) {
    const std::string name = "l" + std::to_string(i);
    y += name + ": &" + name + " [";
    for (int k = 0; k < 9; ++k) y += (k ? ",*" : "*") + prev;
    y += "]\n";
    prev = name;
  }
  return y;
}

std::string refusal(const std::string& text, const std::string& file = "f.yaml") {
  try {
    (void)load_yaml_strict(text, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("an alias bomb (ten levels of nine aliases) is refused at once, naming the line past the bound",
          "[yaml]") {
  const std::string bomb = alias_ladder(9);
  CHECK(bomb.size() < 500);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = refusal(bomb, "bomb.yaml");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Levels 1-5 expand to about 672,000 nodes; level 6 (line 7) passes 10^6.
  CHECK(msg == "bomb.yaml:7: YAML expands to more than 1000000 nodes (aliases)");
  CHECK(seconds < 0.5);
}

TEST_CASE("a tree that expands to just under the bound loads, and is checked without walking every alias",
          "[yaml]") {
  const auto t0 = std::chrono::steady_clock::now();
  const YAML::Node root = load_yaml_strict(alias_ladder(5), "f.yaml");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(root["l5"][8][8][8][8][8][8].Scalar() == "x");
  CHECK(seconds < 0.5);
}

TEST_CASE("a config's few aliases resolve to their anchors", "[yaml]") {
  const YAML::Node root = load_yaml_strict(
      "defaults: &d {policy: lru, block_size: 16}\nrun_a: *d\nrun_b:\n  <<: *d\nmodels: &m [a, b]\nother: *m\n",
      "f.yaml");
  CHECK(root["run_a"]["policy"].Scalar() == "lru");
  CHECK(root["run_a"]["block_size"].as<int>() == 16);
  CHECK(root["other"][1].Scalar() == "b");
}

TEST_CASE("an alias inside the node it names is refused, not walked for ever", "[yaml]") {
  CHECK(refusal("x: 1\nloop: &a [1, *a]\n") == "f.yaml:2: an alias inside the node it names: the tree would never end");
}

TEST_CASE("one long scalar aliased many times is refused by the bound on expanded text", "[yaml]") {
  std::string y = "s: &s " + std::string(1 << 20, 'z') + "\nl: [";
  for (int i = 0; i < 70; ++i) y += (i ? ",*s" : "*s");
  y += "]\n";
  CHECK(refusal(y) == "f.yaml:2: YAML expands to more than 67108864 bytes of text (aliases)");
}

TEST_CASE("a key given twice is refused at the repeat, naming the key path", "[yaml]") {
  CHECK(refusal("a: 1\nb:\n  c: 2\n  c: 3\n") == "f.yaml:4: b.c: key given twice");
  CHECK(refusal("list:\n  - {x: 1, x: 2}\n") == "f.yaml:2: list[0].x: key given twice");
  // A shared mapping is reported where it is written, not where it is used.
  CHECK(refusal("base: &b {x: 1, x: 2}\nother: *b\n") == "f.yaml:1: base.x: key given twice");
}

TEST_CASE("a key that is a list or a mapping is refused", "[yaml]") {
  CHECK(refusal("scheduler:\n  ? [a]\n  : 1\n") == "f.yaml:2: scheduler: a key must be a plain name, not a list or mapping");
}

TEST_CASE("a scalar or a key that is not UTF-8 is refused, naming where it is", "[yaml]") {
  CHECK(refusal("a: ok\nname: \"\xed\xa0\x80\"\n") ==
        "f.yaml:2: name: must be valid UTF-8 (it goes into traces and reports)");
  CHECK(refusal("items: [ok, \xff]\n") == "f.yaml:1: items[1]: must be valid UTF-8 (it goes into traces and reports)");
  CHECK(refusal("outer:\n  k\xfe: 1\n") == "f.yaml:2: outer: a key must be valid UTF-8");
  CHECK(refusal("name: caf\xc3\xa9\n") == "(accepted)");
}

TEST_CASE("a second document is refused at its first node; a stray comma does not hang the parser", "[yaml]") {
  CHECK(refusal("mode: cache\n---\nmode: engine\n") ==
        "f.yaml:3: a second YAML document ('---'): give one document only");
  CHECK(refusal(",x\n").rfind("f.yaml:1: invalid YAML: the parser cannot read past column 1", 0) == 0);
  CHECK(refusal("a: [1, 2\n").rfind("f.yaml:", 0) == 0);
}
