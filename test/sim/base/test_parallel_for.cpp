// parallel_for: every index runs exactly once whatever the thread count,
// including more threads than items and no items at all.
#include <catch2/catch.hpp>
#include <atomic>
#include <vector>

#include "sim/base/parallel_for.h"

using namespace prefixsim;

TEST_CASE("parallel_for runs every index exactly once on any number of threads", "[parallel]") {
  for (size_t n : {0u, 1u, 5u, 1000u}) {
    for (int threads : {0, 1, 2, 3, 8}) {
      INFO("n " << n << " threads " << threads);
      std::vector<std::atomic<int>> hits(n);
      parallel_for(n, threads, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) CHECK(hits[i].load() == 1);
    }
  }
}

TEST_CASE("heaviest_first orders indices by descending weight, ties in index order", "[parallel]") {
  const std::vector<int> w = {3, 9, 3, 1, 9};
  REQUIRE(heaviest_first(w.size(), [&](size_t i) { return w[i]; }) == std::vector<size_t>{1, 4, 0, 2, 3});
  REQUIRE(heaviest_first(0, [](size_t) { return 0; }).empty());
}
