// parallel_for: every index runs exactly once whatever the thread count,
// including more threads than items and no items at all.
#include <catch2/catch.hpp>
#include <atomic>
#include <vector>

#include "sim/parallel_for.h"

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
