// A sweep as a library call (sim/study/sweep.h): a grid's points are the
// product of its axes with zip groups advancing together; run_sweep writes
// the same bytes on one thread or two, and a resumed sweep runs only what
// its sweep.json lacks.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "sim/study/sweep.h"
#include "sim/study/sweep_grid.h"
#include "test/support.h"

using namespace prefixsim;
using prefixsim::test::read_file;
using prefixsim::test::temp_dir;

namespace {

std::string write_grid(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/grid.yaml";
  std::ofstream(path) << text;
  return path;
}

const char* const kGrid =
    "base:\n"
    "  workload: multi-turn\n"
    "  requests: 60\n"
    "  mode: cache\n"
    "axes:\n"
    "  policy: [lru, arc]\n"
    "  kv_tokens: {from: 2000, to: 6000, step: 2000}\n"
    "zip:\n"
    "  - {block_size: [16, 32], seed: [1, 2]}\n";

}  // namespace

TEST_CASE("a grid's points are the product of its axes, zip groups advancing together, the last fastest",
          "[sweep]") {
  const std::string dir = temp_dir("sweep-grid");
  const Grid g = load_grid(write_grid(dir, kGrid));
  const std::vector<GridPoint> points = expand_grid(g);
  REQUIRE(points.size() == 2 * 3 * 2);
  CHECK(points[0].params.dump() == R"({"policy":"lru","kv_tokens":2000,"block_size":16,"seed":1})");
  CHECK(points[1].params.dump() == R"({"policy":"lru","kv_tokens":2000,"block_size":32,"seed":2})");
  CHECK(points[2].params.dump() == R"({"policy":"lru","kv_tokens":4000,"block_size":16,"seed":1})");
  CHECK(points[11].params.dump() == R"({"policy":"arc","kv_tokens":6000,"block_size":32,"seed":2})");
  for (const GridPoint& p : points) {
    CHECK(p.scenario.requests == std::optional<int64_t>(60));  // the base under every point
    CHECK(p.scenario.block_size == (p.params["seed"] == 1 ? 16 : 32));
  }
}

TEST_CASE("run_sweep writes the same bytes on one thread or two, and a resume runs only the missing points",
          "[sweep]") {
  const std::string dir = temp_dir("sweep-run");
  SweepOptions o;
  o.grid_path = write_grid(dir, kGrid);
  o.out_dir = dir + "/one";
  o.threads = 1;
  const SweepOutcome one = run_sweep(o);
  CHECK(one.points == 12);
  CHECK(one.ran == 12);
  CHECK_FALSE(one.worker_exit);
  o.out_dir = dir + "/two";
  o.threads = 2;
  run_sweep(o);
  for (const char* f : {"sweep.json", "sweep.csv", "sweep.md", "sweep.html"})
    CHECK(read_file(dir + "/one/" + f) == read_file(dir + "/two/" + f));
  o.resume = true;
  const SweepOutcome again = run_sweep(o);
  CHECK(again.points == 12);
  CHECK(again.ran == 0);
  CHECK(read_file(dir + "/two/sweep.json") == read_file(dir + "/one/sweep.json"));
}
