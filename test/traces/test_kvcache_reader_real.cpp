// The real claude-code archive of ../shared (710 kv-cache-tester
// conversations in a tar.xz): every request read, in arrival order. Suite
// 'real': it decompresses the whole archive (seconds in a release build,
// far longer under the sanitizers). Skipped when ../shared is absent.
#include <catch2/catch.hpp>
#include <set>

#include "test/support.h"
#include "test/traces/trace_test_util.h"

using namespace prefixsim;
using namespace prefixsim::test;

TEST_CASE("the claude-code archive reads 710 conversations and 49,334 requests", "[traces][kvcache][real]") {
  const auto archive = shared_path("traces/claude-code/traces.tar.xz");
  if (!archive) PREFIXSIM_SKIP("../shared/traces/claude-code is absent");
  auto src = open_trace(*archive, {});
  Request r;
  uint64_t n = 0;
  TimeNs last = 0;
  bool ordered = true;
  std::set<std::string> sessions;
  while (src->next(r)) {
    ++n;
    ordered = ordered && r.arrival >= last;
    last = r.arrival;
    sessions.insert(r.session);
  }
  CHECK(ordered);
  CHECK(n == 49334);
  CHECK(sessions.size() == 710);
}
