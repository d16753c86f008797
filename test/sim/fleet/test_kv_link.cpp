// The KV links of a disaggregated fleet against hand-computed transfers:
// one alone takes bytes / bandwidth + latency; transfers crossing a link at
// once share it (max-min fair, not an equal split per transfer), a transfer
// speeds up when another leaves, and an infinitely fast link takes only the
// latency.
#include <catch2/catch.hpp>
#include <vector>

#include "sim/fleet/kv_link.h"

using namespace prefixsim;

namespace test_kv_link {
constexpr double kGBps = 1e9;
constexpr uint64_t kGB = 1'000'000'000;
constexpr TimeNs kMs = 1'000'000;

// Runs the links until every transfer is through; returns each one's time.
std::vector<TimeNs> drain(KvLinks& links, size_t n) {
  std::vector<TimeNs> at(n, -1);
  std::vector<uint32_t> ids;
  while (links.active() > 0 || links.next_through() != INT64_MAX) {
    const TimeNs t = links.next_through();
    links.advance(t);
    ids.clear();
    links.take_through(ids);
    for (uint32_t id : ids) at.at(id) = t;
  }
  return at;
}

TEST_CASE("one transfer alone takes its bytes over the NIC's bandwidth", "[kv_link]") {
  KvLinks links(2, {10 * kGBps, 0, 5'000});
  links.start(0, 1, kGB, 0);
  CHECK(links.next_through() == 100 * kMs);
  CHECK(links.line_time(0, 1, kGB) == 100 * kMs + 5'000);
  CHECK(drain(links, 1) == std::vector<TimeNs>{100 * kMs});
  CHECK(links.tx(0).bytes == kGB);
  CHECK(links.rx(1).bytes == kGB);
  CHECK(links.tx(0).busy == 100 * kMs);
  CHECK(links.rx(0).busy == 0);
}

TEST_CASE("two transfers from one instance share its NIC and both take twice as long", "[kv_link]") {
  KvLinks links(3, {10 * kGBps, 0, 0});
  links.start(0, 1, kGB, 0);
  links.start(0, 2, kGB, 0);
  CHECK(drain(links, 2) == std::vector<TimeNs>{200 * kMs, 200 * kMs});
  CHECK(links.tx(0).max_concurrent == 2);
  CHECK(links.tx(0).busy == 200 * kMs);
}

TEST_CASE("a transfer slows while another shares its link and speeds up when it leaves", "[kv_link]") {
  // A alone for 50 ms (0.5 GB), then both at 5 GB/s: A's last 0.5 GB takes
  // 100 ms (through at 150); B has 0.5 GB left then, alone: 50 ms more.
  KvLinks links(3, {10 * kGBps, 0, 0});
  links.start(0, 1, kGB, 0);
  links.advance(50 * kMs);
  links.start(0, 2, kGB, 50 * kMs);
  CHECK(drain(links, 2) == std::vector<TimeNs>{150 * kMs, 200 * kMs});
}

TEST_CASE("links are shared max-min fairly: a flow limited elsewhere leaves its share to the others", "[kv_link]") {
  // B, C and D all enter instance 3 (10/3 GB/s each); A shares instance 0's
  // NIC with B only, so it gets what B cannot use: 20/3 GB/s, not 5.
  KvLinks links(5, {10 * kGBps, 0, 0});
  links.start(0, 2, kGB, 0);  // A
  links.start(0, 3, kGB, 0);  // B
  links.start(1, 3, kGB, 0);  // C
  links.start(4, 3, kGB, 0);  // D
  const auto at = drain(links, 4);
  CHECK(at[0] == 150 * kMs);
  CHECK(at[1] == 300 * kMs);
  CHECK(at[2] == 300 * kMs);
  CHECK(at[3] == 300 * kMs);
}

TEST_CASE("the fabric limits transfers between distinct instances", "[kv_link]") {
  KvLinks links(6, {10 * kGBps, 15 * kGBps, 0});
  links.start(0, 3, kGB, 0);
  links.start(1, 4, kGB, 0);
  links.start(2, 5, kGB, 0);
  CHECK(drain(links, 3) == std::vector<TimeNs>{200 * kMs, 200 * kMs, 200 * kMs});
  CHECK(links.fabric().bytes == 3 * kGB);
  CHECK(links.line_time(0, 3, kGB) == 100 * kMs);
}

TEST_CASE("instances with NICs of their own: the slower end sets the pace", "[kv_link]") {
  KvLinks links(2, {10 * kGBps, 0, 0}, {20 * kGBps, 5 * kGBps});
  CHECK(links.line_time(0, 1, kGB) == 200 * kMs);
  CHECK(links.line_time(1, 0, kGB) == 200 * kMs);
  links.start(0, 1, kGB, 0);
  CHECK(drain(links, 1) == std::vector<TimeNs>{200 * kMs});
}

TEST_CASE("an infinitely fast link moves the bytes at once", "[kv_link]") {
  KvLinks links(2, {0, 0, 7'000});
  links.start(0, 1, 123 * kGB, 40);
  CHECK(links.next_through() == 40);
  CHECK(drain(links, 1) == std::vector<TimeNs>{40});
  CHECK(links.line_time(0, 1, kGB) == 7'000);
}

}  // namespace test_kv_link
