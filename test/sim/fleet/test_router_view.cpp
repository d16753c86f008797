// The lagging router view (sim/fleet/router_view.h): KV events reach the
// router `lag` after the pool changed, in order, and a hash stored twice
// needs two removals; the pool's own listener still hears every event at once.
#include <catch2/catch.hpp>
#include <vector>

#include "sim/engine/event_loop.h"
#include "sim/fleet/router_view.h"

using namespace prefixsim;

namespace test_router_view {

struct Recorder final : PoolListener {
  std::vector<std::pair<TimeNs, bool>> heard;  // (when, stored)
  const EventLoop* loop = nullptr;
  void on_pool_cached(const BlockHash&, uint32_t) override { heard.push_back({loop->now(), true}); }
  void on_pool_evicted(const BlockHash&, uint32_t) override { heard.push_back({loop->now(), false}); }
};

void advance_to(EventLoop& loop, TimeNs t) {
  loop.schedule(t, 0, 0, 0);
  Event e;
  REQUIRE(loop.pop(e));
}

const BlockHash a{1, 0}, b{2, 0}, c{3, 0};

TEST_CASE("a lagging view learns of a stored or removed block only lag later", "[router][router_view]") {
  EventLoop loop;
  Recorder next;
  next.loop = &loop;
  LaggedCacheIndex view(loop, 100, &next);
  const std::vector<BlockHash> prompt = {a, b, c};
  view.on_pool_cached(a, 0);  // at 0
  view.on_pool_cached(b, 0);
  CHECK(view.leading(prompt, 99) == 0);
  CHECK(view.leading(prompt, 100) == 2);  // a, b; c never stored
  advance_to(loop, 200);
  view.on_pool_evicted(a, 0);  // at 200: the router still believes a until 300
  CHECK(view.leading(prompt, 299) == 2);
  CHECK(view.leading(prompt, 300) == 0);  // the run starts at a, now gone
  // The pool's earlier listener (the KV tiers) heard everything when it happened.
  CHECK(next.heard == std::vector<std::pair<TimeNs, bool>>{{0, true}, {0, true}, {200, false}});
}

TEST_CASE("a hash two blocks carry stays held until both are removed", "[router][router_view]") {
  EventLoop loop;
  LaggedCacheIndex view(loop, 10, nullptr);
  const std::vector<BlockHash> prompt = {a};
  view.on_pool_cached(a, 0);
  view.on_pool_cached(a, 0);
  view.on_pool_evicted(a, 0);
  CHECK(view.leading(prompt, 10) == 1);
  view.on_pool_evicted(a, 0);
  CHECK(view.leading(prompt, 10) == 0);
  view.on_pool_evicted(a, 0);  // a removal of what it never saw stored is ignored
  view.on_pool_cached(a, 0);
  CHECK(view.leading(prompt, 10) == 1);
}

}  // namespace test_router_view
