// The ghost list in both modes against a plain model (a deque of live
// hashes, oldest first): after random pushes, ghost hits (erase) and drops of
// the oldest, membership, size and which ghost goes first agree. Few distinct
// hashes, so hashes are erased and pushed again while their old ring slots
// are still queued (dead): the keyed ring must tell them apart by the slot
// their key points at.
#include <catch2/catch.hpp>
#include <algorithm>
#include <deque>
#include <random>

#include "policies/ghost_list.h"

using namespace prefixsim;

namespace {

BlockHash hash_of_key(uint32_t k) { return BlockHash{0x9e3779b97f4a7c15ULL * (k + 1), k * 7919ULL + 3}; }

void check_against_model(uint64_t seed, int64_t capacity, bool keyed) {
  constexpr uint32_t kKeys = 40;
  std::mt19937_64 rng(seed);
  GhostList g;
  g.reset(capacity, keyed ? kKeys : 0);
  std::deque<uint32_t> model;  // live ghosts, oldest first
  auto in_model = [&](uint32_t k) { return std::find(model.begin(), model.end(), k) != model.end(); };
  for (int op = 0; op < 5000; ++op) {
    const uint32_t k = static_cast<uint32_t>(rng() % kKeys);
    const BlockHash h = hash_of_key(k);
    switch (rng() % 4) {
      case 0:
      case 1: {  // remember it; a ring full of slots (live or dead) drops the oldest live ghost
        g.push(h, k);
        if (!model.empty() && !g.contains(hash_of_key(model.front()), model.front())) model.pop_front();
        if (!in_model(k)) model.push_back(k);
        break;
      }
      case 2:  // a ghost hit
        REQUIRE(g.erase(h, k) == in_model(k));
        model.erase(std::remove(model.begin(), model.end(), k), model.end());
        break;
      default:
        g.pop_oldest();
        if (!model.empty()) model.pop_front();
        break;
    }
    REQUIRE(g.size() == static_cast<int64_t>(model.size()));
    REQUIRE(g.size() <= capacity);
    uint32_t disagree = 0;  // one assertion per step: Catch2's are slow under the sanitizers
    for (uint32_t m = 0; m < kKeys; ++m) disagree += g.contains(hash_of_key(m), m) != in_model(m);
    REQUIRE(disagree == 0);
  }
}

}  // namespace

TEST_CASE("ghost list keeps membership and drops its oldest ghost first, keyed or hashed", "[ghost]") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (int64_t cap : {1, 3, 9, 16, 64}) {
      for (bool keyed : {false, true}) {
        INFO("seed " << seed << ", capacity " << cap << (keyed ? ", keyed" : ", hashed"));
        check_against_model(seed, cap, keyed);
      }
    }
  }
}

TEST_CASE("keyed and hashed ghost lists give the same answers to the same operations", "[ghost]") {
  std::mt19937_64 rng(77);
  GhostList keyed, hashed;
  keyed.reset(25, 60);
  hashed.reset(25, 0);
  for (int op = 0; op < 20000; ++op) {
    const uint32_t k = static_cast<uint32_t>(rng() % 60);
    const BlockHash h = hash_of_key(k);
    const int what = static_cast<int>(rng() % 5);
    if (what < 3) {
      keyed.push(h, k);
      hashed.push(h, k);
    } else if (what == 3) {
      REQUIRE(keyed.erase(h, k) == hashed.erase(h, k));
    } else {
      keyed.pop_oldest();
      hashed.pop_oldest();
    }
    REQUIRE(keyed.size() == hashed.size());
    uint32_t disagree = 0;
    for (uint32_t m = 0; m < 60; ++m) disagree += keyed.contains(hash_of_key(m), m) != hashed.contains(hash_of_key(m), m);
    REQUIRE(disagree == 0);
  }
}
