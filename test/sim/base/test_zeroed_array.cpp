// ZeroedArray: every element reads as zero bytes after reset, small (calloc)
// or large, sparse (a mapping reused from runs before, cleared where used) or
// dense (mapped, huge pages asked for); a reset drops the old contents; moves
// hand the memory over. reused_pages: what is kept, and up to what.
#include <catch2/catch.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/base/reused_pages.h"
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

TEST_CASE("a large sparse array reuses the mapping of one released before, cleared where it was written",
          "[memory]") {
  reused_pages::release_all();
  const size_t n = 1'000'000;  // 16 MB: past the reuse threshold
  ZeroedArray<Pair> z;
  z.reset(n);
  z.reset(0);  // a large array released: from now on the process keeps mappings
  CHECK(reused_pages::active());
  z.reset(n);
  const Pair* first = z.data();
  // Written in a few places far apart (the pages between stay untouched),
  // and read elsewhere (a page that maps the kernel's zero page).
  for (const size_t i : {size_t{0}, size_t{4097}, n / 2, n - 1}) z[i] = {i + 1, 7};
  CHECK(z[n / 3].a == 0);
  z.reset(0);
  CHECK(reused_pages::kept_bytes() >= n * sizeof(Pair));
  ZeroedArray<Pair> again;
  again.reset(n);
  CHECK(again.data() == first);  // the kept mapping, not a fresh one
  CHECK(reused_pages::kept_bytes() == 0);
  CHECK(all_zero(again));
  // A smaller request may take a larger kept mapping; it reads zero too.
  for (size_t i = 0; i < n; i += 513) again[i] = {1, 1};
  again.reset(0);
  ZeroedArray<Pair> smaller;
  smaller.reset(n / 3);
  CHECK(smaller.data() == first);
  CHECK(all_zero(smaller));
  reused_pages::release_all();
  CHECK(reused_pages::kept_bytes() == 0);
}

TEST_CASE("released mappings are kept up to a limit, the oldest unmapped first", "[memory]") {
  reused_pages::release_all();
  std::vector<std::pair<void*, size_t>> maps;
  for (int i = 0; i < 40; ++i) {  // 40 x 64 MiB, far past what is kept
    size_t cap = 0;
    void* p = reused_pages::take(size_t{64} << 20, cap);
    CHECK(cap >= (size_t{64} << 20));
    maps.emplace_back(p, cap);
  }
  for (auto [p, cap] : maps) reused_pages::give(p, cap);
  const size_t kept = reused_pages::kept_bytes();
  CHECK(kept > 0);
  CHECK(kept < size_t{40} * (size_t{64} << 20));
  // The newest handed back is kept: the next take of that size gets it.
  size_t cap = 0;
  CHECK(reused_pages::take(size_t{64} << 20, cap) == maps.back().first);
  reused_pages::give(maps.back().first, cap);
  reused_pages::release_all();
}
