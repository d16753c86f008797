// The flag toolkit's one comma-list parser (sim/cli/options.h): specs that
// carry their own commas, and the refusals every list flag shares (empty
// list or entry, an entry twice, a number that is not positive).
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/cli/options.h"

using namespace prefixsim;
using namespace prefixsim::cli;
using Strings = std::vector<std::string>;

namespace {

// The message parse throws for `text`, or "" when it accepts it.
template <typename F>
std::string refusal(F parse, const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string spec_refusal(const std::string& text) {
  return refusal([](const std::string& t) { return parse_spec_list("--routers", t); }, text);
}

std::string int_refusal(const std::string& text) {
  return refusal([](const std::string& t) { return parse_positive_int_list("--replicas", t); }, text);
}

}  // namespace

TEST_CASE("a key=value entry continues the spec before it; a name or name:key=value starts a new one", "[cli][lists]") {
  CHECK(parse_spec_list("--routers", "kv-aware:overlap_weight=2,temperature=0.5") ==
        Strings{"kv-aware:overlap_weight=2,temperature=0.5"});
  CHECK(parse_spec_list("--routers", "round-robin,kv-aware:overlap_weight=2,temperature=0.5,prefix") ==
        Strings{"round-robin", "kv-aware:overlap_weight=2,temperature=0.5", "prefix"});
  CHECK(parse_spec_list("--policies", "lru,s3fifo:small=0.2,promote=2,lfu:half_life=9") ==
        Strings{"lru", "s3fifo:small=0.2,promote=2", "lfu:half_life=9"});
  CHECK(parse_spec_list("--policies", "lru") == Strings{"lru"});
}

TEST_CASE("a spec list refuses a parameter with no spec before it, naming the flag and the entry", "[cli][lists]") {
  CHECK(spec_refusal("temperature=0.5,prefix") == "--routers: 'temperature=0.5' is a parameter with nothing before it");
}

TEST_CASE("an entry given twice is refused, naming the flag and the entry", "[cli][lists]") {
  CHECK(spec_refusal("prefix,prefix") == "--routers: 'prefix' is given twice");
  CHECK(spec_refusal("kv-aware:temperature=1,prefix,kv-aware:temperature=1") ==
        "--routers: 'kv-aware:temperature=1' is given twice");
  CHECK(spec_refusal("kv-aware:temperature=1,kv-aware:temperature=2").empty());  // two different routers
  CHECK(int_refusal("2,2") == "--replicas: '2' is given twice");
  CHECK(int_refusal("1,2,02") == "--replicas: '02' is given twice");  // the same value, written apart
  CHECK(refusal([](const std::string& t) { return parse_positive_real_list("--kv-gb", t); }, "1,1.0") ==
        "--kv-gb: '1.0' is given twice");
  CHECK(refusal([](const std::string& t) { return parse_gib_list("--kv-offloading-size", t); }, "inf,0,inf") ==
        "--kv-offloading-size: 'inf' is given twice");
}

TEST_CASE("an empty list or an empty entry anywhere in it is refused", "[cli][lists]") {
  CHECK(spec_refusal("") == "--routers: nothing given");
  CHECK(spec_refusal("prefix,") == "--routers: empty entry in 'prefix,'");
  CHECK(spec_refusal(",prefix") == "--routers: empty entry in ',prefix'");
  CHECK(spec_refusal("a,,b") == "--routers: empty entry in 'a,,b'");
  CHECK(int_refusal("") == "--replicas: nothing given");
  CHECK(int_refusal("50,") == "--replicas: empty entry in '50,'");
  CHECK(int_refusal(",50") == "--replicas: empty entry in ',50'");
}

TEST_CASE("numeric lists keep their order and take positive numbers only", "[cli][lists]") {
  CHECK(parse_positive_int_list("--kv-blocks", "400,100,1600") == std::vector<int64_t>{400, 100, 1600});
  CHECK(parse_positive_real_list("--kv-gb", "0.5,2") == std::vector<double>{0.5, 2});
  CHECK(int_refusal("0,10") == "--replicas: '0' is not a positive number");
  CHECK(int_refusal("-1") == "--replicas: '-1' is not a positive number");
  CHECK(int_refusal("2.5") == "--replicas: '2.5' is not a positive number");
  CHECK(int_refusal("abc") == "--replicas: 'abc' is not a positive number");
  CHECK(int_refusal("1000000000000000000000") == "--replicas: '1000000000000000000000' is not a positive number");
  CHECK(refusal([](const std::string& t) { return parse_positive_real_list("--kv-gb", t); }, "nan") ==
        "--kv-gb: 'nan' is not a positive number");
}

TEST_CASE("GiB lists take 0 for none and inf for unbounded, and refuse negatives", "[cli][lists]") {
  const std::vector<double> gib = parse_gib_list("--kv-offloading-size", "0,2.5,inf");
  REQUIRE(gib.size() == 3);
  CHECK(gib[0] == 0);
  CHECK(gib[1] == 2.5);
  CHECK(std::isinf(gib[2]));
  auto gib_refusal = [](const std::string& t) {
    return refusal([](const std::string& x) { return parse_gib_list("--kv-offloading-size", x); }, t);
  };
  CHECK(gib_refusal("-1") == "--kv-offloading-size: '-1' is not a size in GiB (0: none, inf: unbounded)");
  CHECK(gib_refusal("nan") == "--kv-offloading-size: 'nan' is not a size in GiB (0: none, inf: unbounded)");
  CHECK(gib_refusal("2GiB") == "--kv-offloading-size: '2GiB' is not a size in GiB (0: none, inf: unbounded)");
}
