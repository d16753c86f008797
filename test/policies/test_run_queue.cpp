// The run queue against an ordered set: after every push, pop and erase
// from anywhere, the top is the smallest key. One generator drifts keys
// upwards like GreedyDual's (new ones a little above the last popped) but
// also far below and far above, on equal primaries and with shuffled
// secondaries: mostly one-entry runs and many spills of the merged front.
// The other pushes batches sorted either way, as requests release their
// chains: long runs, merged, with dead entries enough to compact the arena
// many times. The reference mode (one heap) goes through the first too.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "policies/run_queue.h"

using namespace prefixsim;

namespace {

using Ref = std::set<std::pair<std::pair<double, uint64_t>, BlockId>>;

template <class Queue>
void run_random_ops(uint64_t seed, Queue& q, double width) {
  constexpr int32_t kBlocks = 300;
  std::mt19937_64 rng(seed);
  Ref ref;
  std::map<BlockId, std::pair<double, uint64_t>> key_of;
  double floor = 0;  // the last popped primary
  for (int op = 0; op < 6000; ++op) {
    const BlockId b = static_cast<BlockId>(rng() % kBlocks);
    const int what = static_cast<int>(rng() % 3);
    if (!q.contains(b)) {
      const int shape = static_cast<int>(rng() % 10);
      double primary = floor + static_cast<double>(rng() % 8) * width;  // just above the minimum
      if (shape == 0) primary = floor - static_cast<double>(rng() % 5) * width;       // below it
      if (shape == 1) primary = floor + static_cast<double>(rng() % 1000) * width;    // beyond the ring
      if (shape == 2) primary += static_cast<double>(rng() % 100) / 100.0 * width;    // inside a bucket
      // Unique secondaries; shape 3's are not in push order.
      const uint64_t secondary = static_cast<uint64_t>(op) + (shape == 3 ? (rng() % 50) * 1000000 : 0);
      q.push(b, {primary, secondary});
      ref.insert({{primary, secondary}, b});
      key_of[b] = {primary, secondary};
    } else if (what == 0) {
      const BlockId top = q.top();
      REQUIRE(top == ref.begin()->second);
      REQUIRE(q.top_key().primary == ref.begin()->first.first);
      REQUIRE(q.top_key().secondary == ref.begin()->first.second);
      floor = ref.begin()->first.first;
      q.pop();
      ref.erase(ref.begin());
      key_of.erase(top);
    } else {
      ref.erase({key_of.at(b), b});
      key_of.erase(b);
      q.erase(b);
      REQUIRE_FALSE(q.contains(b));
    }
    REQUIRE(q.size() == static_cast<int32_t>(ref.size()));
    if (!ref.empty()) REQUIRE(q.top() == ref.begin()->second);
  }
}

}  // namespace

TEST_CASE("the run queue agrees with an ordered set under random push, pop and erase", "[heap][property]") {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    for (bool reference : {false, true}) {
      for (double width : {1.0, 0.25, 0.0}) {
        INFO("seed " << seed << ", width " << width << (reference ? ", reference heap" : ""));
        RunQueue q;
        q.reset(300, reference);
        run_random_ops(seed, q, width);
      }
    }
  }
}

// Batches of pushes sorted ascending or descending (a request's blocks
// released last to first), sometimes with a break or a repeated primary
// inside, between pops and erases: the runs it was built for, plus enough
// dead entries to compact the arena many times.
TEST_CASE("the run queue agrees with an ordered set on sorted batches of pushes", "[heap][property]") {
  constexpr int32_t kBlocks = 400;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    RunQueue q;
    q.reset(kBlocks);
    Ref ref;
    std::map<BlockId, std::pair<double, uint64_t>> key_of;
    uint64_t tick = 0;
    double level = 0;
    for (int round = 0; round < 400; ++round) {
      // Pops (evictions) and erases (hits on free blocks).
      const int pops = static_cast<int>(rng() % 30);
      for (int i = 0; i < pops && !ref.empty(); ++i) {
        REQUIRE(q.top() == ref.begin()->second);
        REQUIRE(q.top_key().primary == ref.begin()->first.first);
        REQUIRE(q.top_key().secondary == ref.begin()->first.second);
        level = ref.begin()->first.first;
        key_of.erase(q.pop());
        ref.erase(ref.begin());
      }
      for (int i = static_cast<int>(rng() % 5); i > 0 && !key_of.empty(); --i) {
        auto it = key_of.begin();
        std::advance(it, static_cast<long>(rng() % key_of.size()));
        q.erase(it->first);
        ref.erase({it->second, it->first});
        key_of.erase(it);
      }
      // One release batch.
      const bool descending = rng() % 2;
      const int n = 1 + static_cast<int>(rng() % 40);
      double primary = level + static_cast<double>(rng() % 100) / 10.0;
      for (int i = 0; i < n; ++i) {
        const BlockId b = static_cast<BlockId>(rng() % kBlocks);
        if (q.contains(b)) continue;
        const int shape = static_cast<int>(rng() % 20);
        if (shape == 0) primary += descending ? 1.0 : -1.0;  // a break in the order
        else if (shape > 2) primary += descending ? -0.125 : 0.125;  // shapes 1, 2: an equal primary
        q.push(b, {primary, ++tick});
        ref.insert({{primary, tick}, b});
        key_of[b] = {primary, tick};
      }
      REQUIRE(q.size() == static_cast<int32_t>(ref.size()));
    }
    while (!ref.empty()) {
      REQUIRE(q.pop() == ref.begin()->second);
      ref.erase(ref.begin());
    }
    REQUIRE(q.empty());
  }
}

TEST_CASE("the run queue merges runs sorted either way and spills its front for a smaller push", "[heap]") {
  RunQueue q;
  q.reset(16);
  q.push(1, {3.0, 1});  // a descending run: 3, 2, 1 (a gdsf request's chain)
  q.push(2, {2.0, 2});
  q.push(3, {1.0, 3});
  q.push(4, {1.5, 4});  // breaks it: an ascending run 1.5, 2.5, +inf
  q.push(5, {2.5, 5});
  q.push(6, {1e300, 6});
  q.push(7, {-0.0, 8});  // -0 sorts as 0, as HeapKey's < has it
  q.push(8, {0.0, 7});
  REQUIRE(q.size() == 8);
  REQUIRE(q.pop() == 8);
  REQUIRE(q.top_key().secondary == 7);
  REQUIRE(q.pop() == 7);
  REQUIRE(q.pop() == 3);
  q.erase(4);  // a hit on a free block: skipped when reached
  REQUIRE_FALSE(q.contains(4));
  REQUIRE(q.pop() == 2);
  q.push(9, {-5.0, 9});  // below the merged front: it goes back to the runs
  q.push(10, {2.0, 10});
  REQUIRE(q.pop() == 9);
  REQUIRE(q.pop() == 10);
  REQUIRE(q.pop() == 5);
  REQUIRE(q.pop() == 1);
  REQUIRE(q.pop() == 6);
  REQUIRE(q.empty());
}
