// The policies' indexed heap against an ordered set: after every push, pop
// and erase from the middle, the top is the smallest key and every block's
// key is where the heap says it is.
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <utility>

#include "policies/indexed_heap.h"

using namespace prefixsim;

TEST_CASE("the indexed heap agrees with an ordered set under random push, pop and erase", "[heap][property]") {
  constexpr int32_t kBlocks = 300;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    IndexedHeap heap;
    heap.reset(kBlocks);
    std::set<std::pair<std::pair<double, uint64_t>, BlockId>> ref;
    uint64_t tick = 0;
    for (int op = 0; op < 4000; ++op) {
      const BlockId b = static_cast<BlockId>(rng() % kBlocks);
      const int what = static_cast<int>(rng() % 3);
      if (!heap.contains(b)) {
        // Few distinct primaries, so the secondary decides often.
        const HeapKey k{static_cast<double>(rng() % 7), ++tick};
        heap.push(b, k);
        ref.insert({{k.primary, k.secondary}, b});
      } else if (what == 0 && !ref.empty()) {
        const BlockId top = heap.pop();
        REQUIRE(top == ref.begin()->second);
        ref.erase(ref.begin());
      } else {
        const HeapKey k = heap.key(b);
        ref.erase({{k.primary, k.secondary}, b});
        heap.erase(b);
        REQUIRE_FALSE(heap.contains(b));
      }
      REQUIRE(heap.size() == static_cast<int32_t>(ref.size()));
      if (!ref.empty()) REQUIRE(heap.top() == ref.begin()->second);
      // Every key, counted into one assertion per step (Catch2's assertions
      // are slow under the sanitizers).
      int wrong_keys = 0;
      for (const auto& [k, blk] : ref)
        wrong_keys += !heap.contains(blk) || heap.key(blk).primary != k.first || heap.key(blk).secondary != k.second;
      REQUIRE(wrong_keys == 0);
    }
  }
}
