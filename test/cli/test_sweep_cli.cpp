// `prefixsim sweep` end to end: grid expansion (lists, ranges, zip groups,
// their order), a point equal to the replay with the same settings, resume
// (kept rows are not rerun, and a resumed sweep writes the bytes a fresh one
// does), and bad grids (exit 2, "FILE:LINE: key: ...").
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace {

std::string trace_in(const std::string& dir) {
  const std::string t = dir + "/mt.jsonl";
  REQUIRE(run_cli({"generate", "multi-turn", "--requests", "150", "--seed", "3", "-o", t}).rc == 0);
  return t;
}

CliResult sweep(const std::string& grid, const std::string& out, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"sweep", grid, "--out", out, "--quiet", "--threads", "2"};
  a.insert(a.end(), more.begin(), more.end());
  return run_cli(a);
}

// Sweeps `grid` into dir/out, which must succeed; sweep.json's rows.
json sweep_rows(const std::string& grid, const std::string& dir) {
  auto r = sweep(grid, dir + "/out");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return json::parse(read_file(dir + "/out/sweep.json"))["results"];
}

}  // namespace

TEST_CASE("sweep expands lists, ranges and zip groups into their product, the last axis fastest", "[cli][sweep]") {
  const std::string dir = temp_dir("sweep-expand");
  const std::string trace = trace_in(dir);
  const std::string grid = write_text_file(dir, "grid.yaml",
                                           "base:\n  trace: " + trace + "\n  mode: cache\n"
                                           "axes:\n  policy: [lru, s3fifo]\n  kv_blocks: {from: 400, to: 1200, step: 400}\n"
                                           "zip:\n  - {block_size: [16, 32], trace_block_size: [0, 0]}\n");
  auto r = sweep(grid, dir + "/out");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::ordered_json::parse(read_file(dir + "/out/sweep.json"));  // keys in file order
  CHECK(j["schema"] == "prefixsim.sweep/1");
  CHECK(j["axes"] == nlohmann::ordered_json({"policy", "kv_blocks", "block_size", "trace_block_size"}));
  REQUIRE(j["points_total"] == 12);
  REQUIRE(j["points_done"] == 12);
  const auto& rows = j["results"];
  std::vector<std::string> seen;
  for (const auto& row : rows) seen.push_back(row["params"].dump());
  CHECK(seen[0] == R"({"policy":"lru","kv_blocks":400,"block_size":16,"trace_block_size":0})");
  CHECK(seen[1] == R"({"policy":"lru","kv_blocks":400,"block_size":32,"trace_block_size":0})");
  CHECK(seen[2] == R"({"policy":"lru","kv_blocks":800,"block_size":16,"trace_block_size":0})");
  CHECK(seen[11] == R"({"policy":"s3fifo","kv_blocks":1200,"block_size":32,"trace_block_size":0})");
  // CSV: the axes, then the headline columns; one row per point.
  const std::string csv = read_file(dir + "/out/sweep.csv");
  CHECK(csv.rfind("policy,kv_blocks,block_size,trace_block_size,requests,hit_rate,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 13);
  // More capacity never lowers lru's hit rate on the same trace and block size
  // (at these sizes every request fits: none is left out of the figures).
  for (const auto& row : rows) CHECK(row["refused_requests"] == 0);
  CHECK(rows[0]["hit_rate"].get<double>() <= rows[2]["hit_rate"].get<double>());
  CHECK(rows[2]["hit_rate"].get<double>() <= rows[4]["hit_rate"].get<double>());
  const std::string html = read_file(dir + "/out/sweep.html");
  CHECK(html.find("chart-0") != std::string::npos);
  CHECK(read_file(dir + "/out/sweep.md").find("| policy | kv_blocks |") != std::string::npos);
  // Threads do not change the bytes.
  REQUIRE(run_cli({"sweep", grid, "--out", dir + "/one", "--quiet", "--threads", "1"}).rc == 0);
  CHECK(read_file(dir + "/one/sweep.json") == read_file(dir + "/out/sweep.json"));
}

TEST_CASE("a sweep point gives what replay gives with the same settings", "[cli][sweep]") {
  const std::string dir = temp_dir("sweep-replay");
  const std::string trace = trace_in(dir);
  const std::string grid = write_text_file(dir, "grid.yaml",
                                           "base:\n  trace: " + trace + "\n  kv_blocks: 300\n"
                                           "axes:\n  replicas: [1, 3]\n  router: [round-robin, prefix]\n"
                                           "  max_num_batched_tokens: [2048]\n");
  const json rows = sweep_rows(grid, dir);
  REQUIRE(rows.size() == 4);
  for (const json& row : rows) {
    const std::string n = std::to_string(row["params"]["replicas"].get<int>());
    const std::string router = row["params"]["router"];
    auto rep = run_cli({"replay", trace, "--kv-blocks", "300", "--replicas", n, "--router", router,
                        "--max-num-batched-tokens", "2048", "--quiet", "--out", dir + "/r" + n + router});
    INFO(rep.err);
    REQUIRE(rep.rc == 0);
    const json report = json::parse(read_file(dir + "/r" + n + router + "/report.json"));
    INFO(row.dump());
    CHECK(report["prefix_cache"]["hit_rate"] == row["hit_rate"]);
    CHECK(report["latency_ms"]["ttft"]["p99"] == row["ttft_p99_ms"]);
    CHECK(report["latency_ms"]["ttft"]["p50"] == row["ttft_p50_ms"]);
    CHECK(report["prefix_cache"]["evictions"] == row["evictions"]);
  }
  CHECK(rows[2]["imbalance"].is_number());  // a fleet of 3
  CHECK(rows[0]["imbalance"].is_null());
}

TEST_CASE("a warm-up is a sweep axis: each point leaves its warm-up requests out as replay does", "[cli][sweep]") {
  const std::string dir = temp_dir("sweep-warmup");
  const std::string trace = trace_in(dir);
  const std::string grid = write_text_file(dir, "grid.yaml",
                                           "base:\n  trace: " + trace + "\n  kv_blocks: 300\n"
                                           "axes:\n  warmup: [0, 20]\n  mode: [cache, engine]\n");
  const json rows = sweep_rows(grid, dir);
  REQUIRE(rows.size() == 4);
  for (const json& row : rows) {
    const std::string w = std::to_string(row["params"]["warmup"].get<int>());
    const std::string mode = row["params"]["mode"];
    auto rep = run_cli({"replay", trace, "--kv-blocks", "300", "--warmup", w, "--mode", mode, "--quiet", "--out",
                        dir + "/r" + w + mode});
    INFO(rep.err);
    REQUIRE(rep.rc == 0);
    const json report = json::parse(read_file(dir + "/r" + w + mode + "/report.json"));
    INFO(row.dump());
    CHECK(report["prefix_cache"]["hit_rate"] == row["hit_rate"]);
    CHECK(report["trace"]["requests"] == row["requests"]);
  }
  CHECK(rows[0]["hit_rate"] != rows[2]["hit_rate"]);  // the warm-up changes the figure
}

TEST_CASE("sweep --resume keeps the points already done and writes what a fresh sweep writes", "[cli][sweep]") {
  const std::string dir = temp_dir("sweep-resume");
  const std::string trace = trace_in(dir);
  const std::string head = "base:\n  trace: " + trace + "\n  mode: cache\naxes:\n  policy: [lru, lfu]\n";
  const std::string part = write_text_file(dir, "part.yaml", head + "  kv_blocks: [40, 80]\n");
  const std::string full = write_text_file(dir, "full.yaml", head + "  kv_blocks: [40, 80, 160]\n");
  REQUIRE(sweep(full, dir + "/fresh").rc == 0);
  REQUIRE(sweep(part, dir + "/out").rc == 0);
  auto r = run_cli({"sweep", full, "--out", dir + "/out", "--resume", "--threads", "2"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("4 kept from the earlier sweep.json, 2 run") != std::string::npos);
  CHECK(read_file(dir + "/out/sweep.json") == read_file(dir + "/fresh/sweep.json"));
  CHECK(read_file(dir + "/out/sweep.csv") == read_file(dir + "/fresh/sweep.csv"));
  // A kept row is taken as it is, not rerun: a mark put into it survives.
  json j = json::parse(read_file(dir + "/out/sweep.json"));
  j["results"][0]["evictions"] = 123456789;
  write_text_file(dir + "/out", "sweep.json", j.dump(2) + "\n");
  REQUIRE(sweep(full, dir + "/out", {"--resume"}).rc == 0);
  CHECK(json::parse(read_file(dir + "/out/sweep.json"))["results"][0]["evictions"] == 123456789);
  // Without --resume everything runs again.
  REQUIRE(sweep(full, dir + "/out").rc == 0);
  CHECK(read_file(dir + "/out/sweep.json") == read_file(dir + "/fresh/sweep.json"));
  // Another base is refused rather than mixed in.
  const std::string other_base =
      write_text_file(dir, "other_base.yaml", "base:\n  trace: " + trace + "\n  mode: cache\n  block_size: 32\naxes:\n  kv_blocks: [40]\n");
  auto bad = sweep(other_base, dir + "/out", {"--resume"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("another base scenario") != std::string::npos);
}

TEST_CASE("sweep --resume refuses a kept row it cannot trust, naming it, and leaves the file", "[cli][sweep]") {
  const std::string dir = temp_dir("sweep-resume-bad");
  const std::string trace = trace_in(dir);
  const std::string grid = write_text_file(
      dir, "grid.yaml", "base:\n  trace: " + trace + "\n  mode: cache\naxes:\n  kv_blocks: [40, 80]\n");
  REQUIRE(sweep(grid, dir + "/good").rc == 0);
  const json good = json::parse(read_file(dir + "/good/sweep.json"));
  struct Case {
    const char* name;
    std::function<void(json&)> spoil;
    const char* says;
  } cases[] = {
      {"a text figure", [](json& j) { j["results"][0]["hit_rate"] = "abc"; },
       "results[0].hit_rate: expected a number or null, got \"abc\""},
      {"a missing figure", [](json& j) { j["results"][1].erase("ttft_p99_ms"); }, "results[1]: no ttft_p99_ms"},
      {"an unknown field", [](json& j) { j["results"][0]["hit_rate_pct"] = 1; }, "results[0]: unknown field 'hit_rate_pct'"},
      {"repeated params", [](json& j) { j["results"][1]["params"] = j["results"][0]["params"]; },
       "results[1]: repeats the params of results[0]"},
      {"params off the grid", [](json& j) { j["results"][1]["params"]["kv_blocks"] = 99; }, "are not a point of"},
      {"a row that is not an object", [](json& j) { j["results"][0] = 3; }, "results[0]: not a sweep row"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    json spoilt = good;
    c.spoil(spoilt);
    const std::string out = dir + "/case" + std::to_string(&c - cases);
    std::filesystem::create_directories(out);
    const std::string text = spoilt.dump(2) + "\n";
    write_text_file(out, "sweep.json", text);
    const CliResult r = sweep(grid, out, {"--resume"});
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(read_file(out + "/sweep.json") == text);
  }
}

TEST_CASE("bad grids are exit 2 naming the file, line and key", "[cli][sweep]") {
  const std::string dir = temp_dir("sweep-bad");
  const std::string trace = trace_in(dir);
  const std::string base = "base:\n  trace: " + trace + "\n  mode: cache\n";  // lines 1-3
  struct Case {
    std::string grid, where;
  };
  const std::vector<Case> cases = {
      {base + "axes:\n  polcy: [lru]\n", ":5: polcy: unknown key"},
      {base + "axes:\n  policy: []\n", ":5: policy: an empty axis"},
      {base + "axes:\n  kv_blocks: {from: 90, to: 10, step: 10}\n", ":5: kv_blocks: an empty axis"},
      // Two integers past 2^53 are two values (a double could not step from one to the other), and the
      // second is the scenario's to refuse.
      {base + "axes:\n  kv_blocks: {from: 9007199254740992, to: 9007199254740993, step: 1}\n",
       ":5: kv_blocks: --kv-blocks: must be in [2, 2^31-1] (the count includes the null block), got 9007199254740992"},
      {base + "axes:\n  kv_blocks: {from: 1, to: 1000000, step: 1}\n", ":5: kv_blocks: a range of more than 100000 values"},
      {base + "axes:\n  gpu_mem_util: {from: 1.0e15, to: 1.00000000000001e15, step: 0.001}\n",
       ":5: gpu_mem_util: range step: too small to move past"},
      {base + "axes:\n  mode: [engine]\n", ":5: mode: contradictory: also set in base (line 3)"},
      {base + "axes:\n  kv_blocks: [10]\nzip:\n  - {kv_gb: [1]}\n", ":7: kv_gb: contradictory"},
      {base + "axes:\n  policy: [lru]\nzip:\n  - {kv_blocks: [10, 20], block_size: [16]}\n",
       ":7: block_size: contradictory: a zip group"},
      {base + "axes:\n  kv_blocks: [40, 40]\n", ":5: kv_blocks: contradictory: the same point twice"},
      {base + "axes:\n  policy: [lru]\n  policy: [lfu]\n", ":6"},
      {base + "axes:\n  kv_blocks: [40]\n  tp:\n    - 1\n    - 0\n", ":8: tp: --tp: must be in [1, 64]"},
      {base + "axes:\n  kv_blocks: [40, x]\n", ":5: kv_blocks: expected an integer"},
      {base + "axes:\n  replicas: [2]\n", ":5: replicas: --replicas: a fleet runs in engine mode"},
      {base + "axes:\n  policy: [lru, nosuch]\n", ":5: policy:"},
      {base + "axes:\n  out: [a]\n", ":5: out: not an axis"},
      {base + "axis:\n  policy: [lru]\n", ":4: axis: unknown key"},
  };
  for (const Case& c : cases) {
    const std::string grid = write_text_file(dir, "grid.yaml", c.grid);
    auto r = sweep(grid, dir + "/out");
    INFO(c.grid << "\n" << r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find("grid.yaml" + c.where) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("sweep never writes over a file a grid point reads (a trace, profile or catalog named in the grid)",
          "[cli][sweep]") {
  const std::string dir = temp_dir("sweep-input-is-output");
  const std::string trace = read_file(data_path("traces/mooncake_small.jsonl"));
  write_text_file(dir, "sweep.csv", trace);
  write_text_file(dir, "sweep.md", "models: []\n");
  const std::string grid = write_text_file(dir, "g.yaml",
                                           "base: {trace: " + dir + "/sweep.csv, mode: cache, model_file: " + dir +
                                               "/sweep.md}\n"
                                           "axes: {policy: [lru, fifo]}\n");
  auto r = run_cli({"sweep", grid, "--out", dir});
  CHECK(r.rc == 2);
  CHECK(r.err.find("is also an input") != std::string::npos);
  CHECK(read_file(dir + "/sweep.csv") == trace);
  CHECK(read_file(dir + "/sweep.md") == "models: []\n");
}
