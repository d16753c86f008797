// The prefix router's approximate tree: a prompt's match is its leading
// hashes in the set; inserting refreshes a prompt root last, so eviction
// takes old leaves before the roots shared by newer prompts.
#include <catch2/catch.hpp>
#include <vector>

#include "sim/fleet/prefix_set.h"

using namespace prefixsim;

namespace {
BlockHash h(uint64_t v) { return BlockHash{v * 0x9e3779b97f4a7c15ULL + 1, v}; }
std::vector<BlockHash> chain(std::initializer_list<uint64_t> ids) {
  std::vector<BlockHash> out;
  for (uint64_t i : ids) out.push_back(h(i));
  return out;
}
}  // namespace

TEST_CASE("a prefix set matches leading blocks only", "[prefix_set]") {
  PrefixSet s(100);
  s.insert(chain({1, 2, 3}));
  CHECK(s.match(chain({1, 2, 3, 4})) == 3);
  CHECK(s.match(chain({1, 2, 9})) == 2);
  CHECK(s.match(chain({9, 2, 3})) == 0);  // a later block present does not count without its prefix
  CHECK(s.size() == 3);
  s.insert(chain({1, 2, 3}));
  CHECK(s.size() == 3);  // no duplicates
}

TEST_CASE("a full prefix set evicts the least recently used leaf first", "[prefix_set]") {
  PrefixSet s(4);
  s.insert(chain({1, 2, 3}));  // recency, oldest first: 3 2 1
  s.insert(chain({1, 5}));     // 3 2 5 1 (the shared root refreshed last)
  s.insert(chain({1, 6}));     // full: 3, the oldest leaf, goes: 2 5 6 1
  CHECK(s.size() == 4);
  CHECK(s.match(chain({1, 2, 3})) == 2);
  CHECK(s.match(chain({1, 5})) == 2);
  CHECK(s.match(chain({1, 6})) == 2);
  s.insert(chain({7}));  // 2 goes
  CHECK(s.match(chain({1, 2})) == 1);
  CHECK(s.match(chain({7})) == 1);
}

TEST_CASE("a prefix set grows its slots without losing order", "[prefix_set]") {
  PrefixSet s(5000);
  std::vector<BlockHash> big;
  for (uint64_t i = 0; i < 3000; ++i) big.push_back(h(i + 100));
  s.insert(big);  // past the first 1024 slots: grows twice
  CHECK(s.size() == 3000);
  CHECK(s.match(big) == 3000);
  std::vector<BlockHash> other;
  for (uint64_t i = 0; i < 2500; ++i) other.push_back(h(i + 10'000));
  s.insert(other);  // 500 of big's oldest (its leaves) go
  CHECK(s.size() == 5000);
  CHECK(s.match(big) == 2500);
  CHECK(s.match(other) == 2500);
}
