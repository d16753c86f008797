// ZeroedArray: every element reads as zero bytes after reset, small (calloc)
// or large, sparse or dense (mapped, huge pages asked for); a reset drops the
// old contents; moves hand the memory over.
#include <catch2/catch.hpp>
#include <cstdint>
#include <utility>

#include "sim/base/zeroed_array.h"

using namespace prefixsim;

namespace {
struct Pair {
  uint64_t a;
  uint32_t b;
};
bool all_zero(const ZeroedArray<Pair>& z) {
  for (size_t i = 0; i < z.size(); ++i)
    if (z[i].a != 0 || z[i].b != 0) return false;
  return true;
}
}  // namespace

TEST_CASE("a zeroed array reads zero everywhere after each reset, sparse or dense, small or large", "[memory]") {
  for (const bool dense : {false, true}) {
    for (const size_t n : {size_t{1}, size_t{1000}, size_t{300'000}}) {  // 300k x 16 B: past a 2 MiB huge page
      INFO((dense ? "dense " : "sparse ") << n);
      ZeroedArray<Pair> z;
      z.reset(n, dense);
      REQUIRE(z.size() == n);
      CHECK(z.bytes() == n * sizeof(Pair));
      CHECK(all_zero(z));
      for (size_t i = 0; i < n; i += 7) z[i] = {i + 1, 3};
      z.reset(n, dense);  // the old contents are gone
      CHECK(all_zero(z));
      z[n - 1] = {9, 9};
      ZeroedArray<Pair> moved(std::move(z));
      CHECK(z.size() == 0);
      CHECK(moved[n - 1].a == 9);
      moved.reset(0);
      CHECK(moved.size() == 0);
    }
  }
}
