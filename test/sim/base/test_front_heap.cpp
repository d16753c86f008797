// FrontHeap: pops the same sequence as one std::priority_queue of the same
// elements, whatever the order of pushes and pops (random schedules with
// many ties in the first key), and the front slot is used (an element due
// first is not pushed onto the heap).
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "sim/base/front_heap.h"

using namespace prefixsim;

namespace {
struct Item {
  int64_t at = 0;
  uint32_t id = 0;  // distinct: (at, id) is a strict total order
  bool operator>(const Item& o) const { return at != o.at ? at > o.at : id > o.id; }
  bool operator==(const Item& o) const { return at == o.at && id == o.id; }
};
}  // namespace

TEST_CASE("a front heap pops what one priority queue of the same pushes pops", "[property]") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    FrontHeap<Item> fh;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
    uint32_t next_id = 0;
    int64_t now = 0;  // pushes are never before the last pop, as in a merge
    const int range = 1 + static_cast<int>(rng() % 8);  // small: many equal times
    for (int op = 0; op < 400; ++op) {
      if (pq.empty() || rng() % 3 != 0) {
        const Item x{now + static_cast<int64_t>(rng() % range), next_id++};
        fh.push(x);
        pq.push(x);
      } else {
        REQUIRE(fh.top() == pq.top());
        const Item got = fh.pop();
        REQUIRE(got == pq.top());
        now = got.at;
        pq.pop();
      }
      REQUIRE(fh.size() == pq.size());
      REQUIRE(fh.empty() == pq.empty());
    }
    while (!pq.empty()) {
      REQUIRE(fh.pop() == pq.top());
      pq.pop();
    }
    CHECK(fh.empty());
  }
}

TEST_CASE("a front heap takes a push due before everything back without the heap", "[property]") {
  FrontHeap<Item> fh;
  fh.push({10, 0});
  fh.push({20, 1});
  fh.push({5, 2});   // the new front; {10, 0} moves to the heap
  CHECK(fh.top() == Item{5, 2});
  CHECK(fh.pop() == Item{5, 2});
  fh.push({7, 3});  // before the heap's top: the front again
  CHECK(fh.top() == Item{7, 3});
  fh.push({7, 4});  // after the front (a tie broken by id): to the heap
  CHECK(fh.pop() == Item{7, 3});
  CHECK(fh.pop() == Item{7, 4});
  CHECK(fh.pop() == Item{10, 0});
  CHECK(fh.pop() == Item{20, 1});
  CHECK(fh.empty());
}
