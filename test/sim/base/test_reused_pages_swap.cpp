// A kept mapping whose pages were swapped out reads as zeros when taken
// again: mincore() calls a swapped-out page not resident, like a page never
// touched, but it comes back with its old contents unless dropped. Needs
// swap and MADV_PAGEOUT (Linux 5.4): skipped (exit 77) where the pages
// cannot be pushed out (no swap device, as on CI's machines).
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "sim/base/reused_pages.h"
#include "test/support.h"

using namespace prefixsim;

namespace {
bool swap_configured() {
  std::ifstream in("/proc/swaps");
  std::string line;
  int lines = 0;
  while (std::getline(in, line))
    if (!line.empty()) ++lines;
  return lines > 1;  // a header, then one line per device
}
}  // namespace

TEST_CASE("a kept mapping swapped out while kept reads as zeros when taken again", "[memory]") {
#ifndef MADV_PAGEOUT
  PREFIXSIM_SKIP("MADV_PAGEOUT is not known to this system's headers");
#else
  if (!swap_configured()) PREFIXSIM_SKIP("no swap device: pages cannot be swapped out here");
  reused_pages::release_all();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = 64 * page;
  size_t cap = 0;
  auto* p = static_cast<unsigned char*>(reused_pages::take(bytes, cap));
  std::memset(p, 0xab, cap);
  reused_pages::give(p, cap);
  if (::madvise(p, cap, MADV_PAGEOUT) != 0) PREFIXSIM_SKIP("MADV_PAGEOUT refused");
  std::vector<unsigned char> resident(cap / page);
  REQUIRE(::mincore(p, cap, resident.data()) == 0);
  size_t out = 0;
  for (unsigned char r : resident) out += (r & 1) ? 0 : 1;
  if (out == 0) PREFIXSIM_SKIP("the kernel kept every page resident");
  size_t cap2 = 0;
  auto* q = static_cast<unsigned char*>(reused_pages::take(bytes, cap2));
  REQUIRE(q == p);  // the kept mapping, not a fresh one
  size_t nonzero = 0;
  for (size_t i = 0; i < cap2; ++i) nonzero += q[i] != 0;
  CHECK(nonzero == 0);
  reused_pages::give(q, cap2);
  reused_pages::release_all();
#endif
}
