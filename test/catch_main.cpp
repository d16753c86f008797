// Catch2's main, compiled once and linked into every test executable: a
// run in which a test skipped (PREFIXSIM_SKIP) and nothing failed exits 77,
// which meson reports as SKIP rather than OK.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "test/support.h"

namespace prefixsim::test {
namespace {
bool g_skipped = false;
}
void mark_skipped() { g_skipped = true; }
}  // namespace prefixsim::test

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && prefixsim::test::g_skipped) return 77;
  return failed;
}
