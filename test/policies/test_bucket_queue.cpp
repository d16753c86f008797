// The bucket queue against an ordered set: after every push, pop and erase
// from anywhere, the top is the smallest key. The keys drift upwards like
// GreedyDual's (new ones a little above the last popped) but also land
// below the front, beyond the ring, and on equal primaries with shuffled
// secondaries, so every path (front list, ring, heap, moving the front back,
// sorting a bucket) is taken.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "policies/bucket_queue.h"

using namespace prefixsim;

namespace {

using Ref = std::set<std::pair<std::pair<double, uint64_t>, BlockId>>;

void run_random_ops(uint64_t seed, double width, int32_t slots) {
  constexpr int32_t kBlocks = 300;
  std::mt19937_64 rng(seed);
  BucketQueue q;
  q.reset(kBlocks, width, slots);
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

TEST_CASE("the bucket queue agrees with an ordered set under random push, pop and erase", "[heap][property]") {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    INFO("seed " << seed);
    run_random_ops(seed, 1.0, 64);     // integer keys, as lfu-da's
    run_random_ops(seed, 0.25, 64);    // fractional keys, as gdsf's
    run_random_ops(seed, 1.0, 4096);   // a ring wider than every key
    run_random_ops(seed, 0.0, 64);     // the plain heap
  }
}

TEST_CASE("the bucket queue keeps keys far from the front, and equal keys in push order", "[heap]") {
  BucketQueue q;
  q.reset(8, 1.0, 64);
  q.push(1, {1e300, 0});   // far beyond any ring
  q.push(2, {-1e300, 0});  // far below
  q.push(3, {5, 2});
  q.push(4, {5, 1});       // same bucket, smaller secondary: sorted at the front
  q.push(5, {5, 3});
  REQUIRE(q.pop() == 2);
  REQUIRE(q.pop() == 4);
  REQUIRE(q.pop() == 3);
  q.push(6, {5, 4});       // joins the front bucket behind its last entry
  q.push(7, {5, 0});       // would break the front's order: kept aside, still first
  REQUIRE(q.pop() == 7);
  REQUIRE(q.pop() == 5);
  REQUIRE(q.pop() == 6);
  REQUIRE(q.pop() == 1);
  REQUIRE(q.empty());
}
