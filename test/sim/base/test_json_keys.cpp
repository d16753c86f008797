// refuse_duplicate_json_keys: whole JSON documents (profiles, step models)
// refuse a key given twice instead of keeping the last one.
#include <catch2/catch.hpp>

#include <string>

#include "sim/base/error.h"
#include "sim/base/json_keys.h"

using prefixsim::refuse_duplicate_json_keys;

namespace {

std::string refusal(const std::string& text) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text, refuse_duplicate_json_keys(text, "p.json"));
    (void)parsed;
  } catch (const prefixsim::InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a key repeated in one JSON object is refused at the repeat's line, naming the field path", "[json]") {
  CHECK(refusal("{\"schema\": \"x\",\n \"coefficients\": {\"overhead_s\": 1,\n  \"overhead_s\": 2}}") ==
        "p.json:3: field 'coefficients.overhead_s' given twice");
  CHECK(refusal("{\"a\": 1, \"a\": 1}") == "p.json:1: field 'a' given twice");
  CHECK(refusal("{\"runs\": [{\"x\": 1},\n {\"x\": 2, \"x\": 3}]}") == "p.json:2: field 'runs.x' given twice");
}

TEST_CASE("the same key in different objects is no repeat, and the document parses as without the guard",
          "[json]") {
  const std::string text = "{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}, \"l\": [{\"x\": 3}, {\"x\": 4}], \"x\": 5}";
  CHECK(refusal(text) == "(accepted)");
  CHECK(nlohmann::json::parse(text, refuse_duplicate_json_keys(text, "p.json")) == nlohmann::json::parse(text));
}

TEST_CASE("the repeat's line skips the key's name quoted inside a string", "[json]") {
  CHECK(refusal("{\"note\": \"say \\\"k\\\": here\",\n\"k\": 1,\n\"k\": 2}") == "p.json:3: field 'k' given twice");
}
