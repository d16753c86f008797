// `prefixsim compare` end to end: the three outputs, identical whatever the
// thread count, the belady gap, one-line errors (exit 2) for bad usage, and
// `replay --mode cache --policy belady` giving compare's belady figures.
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "test/support.h"

using prefixsim::test::read_file;
using prefixsim::test::run_cli;
using prefixsim::test::temp_dir;

namespace {

// A small Mooncake-style trace: 16-token hash ids, a few shared prefixes.
std::string write_trace(const std::string& dir) {
  const std::string path = dir + "/trace.jsonl";
  std::ofstream out(path);
  std::mt19937_64 rng(5);
  uint64_t next_id = 1000;
  for (int i = 0; i < 120; ++i) {
    const int prefix = static_cast<int>(rng() % 4), own = 1 + static_cast<int>(rng() % 4);
    std::string ids;
    for (int k = 0; k < 2 + prefix; ++k) ids += (ids.empty() ? "" : ",") + std::to_string(prefix * 100 + k);
    for (int k = 0; k < own; ++k) ids += "," + std::to_string(next_id++);
    const int len = (2 + prefix + own) * 16 - static_cast<int>(rng() % 10);
    out << "{\"timestamp\":" << i * 10 << ",\"input_length\":" << len << ",\"output_length\":" << rng() % 20
        << ",\"hash_ids\":[" << ids << "]}\n";
  }
  return path;
}

// Runs `compare TRACE ARGS... --threads T --out DIR/outK` once with one
// thread and once with `threads`; returns the two output folders.
std::array<std::string, 2> compare_twice(const std::string& dir, const std::string& trace,
                                         const std::vector<std::string>& args, const char* threads) {
  std::array<std::string, 2> outs;
  for (int k = 0; k < 2; ++k) {
    outs[k] = dir + "/out" + std::to_string(k);
    std::vector<std::string> argv = {"compare", trace};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--threads", k == 0 ? "1" : threads, "--out", outs[k]});
    const auto r = run_cli(argv);
    INFO(r.err);
    REQUIRE(r.rc == 0);
  }
  return outs;
}

}  // namespace

TEST_CASE("compare writes json, csv and md, identical for any thread count", "[compare][cli]") {
  const std::string dir = temp_dir("compare");
  const std::string trace = write_trace(dir);
  const auto outs = compare_twice(dir, trace,
                                  {"--policies", "lru,lfu,s3fifo:small=0.2,promote=2,belady", "--kv-blocks", "12,30,80",
                                   "--block-size", "16", "--trace-block-size", "16", "--check-invariants"},
                                  "3");
  for (const char* f : {"/compare.json", "/compare.csv", "/compare.md"})
    REQUIRE(read_file(outs[0] + f) == read_file(outs[1] + f));
  const auto j = nlohmann::json::parse(read_file(outs[0] + "/compare.json"));
  REQUIRE(j["schema"] == "prefixsim.compare/1");
  REQUIRE(j["results"].size() == 4 * 3);
  for (const auto& r : j["results"]) {
    for (const char* k : {"policy", "kv_blocks", "capacity_tokens", "hit_rate", "block_hit_rate", "evictions",
                          "gap_to_belady"})
      REQUIRE(r.contains(k));
    REQUIRE(r["capacity_tokens"] == (r["kv_blocks"].get<int64_t>() - 1) * 16);
    if (r["policy"] == "belady") REQUIRE(r["gap_to_belady"] == 0.0);
  }
  REQUIRE(j["results"][2]["policy"] == "s3fifo");
  REQUIRE(j["results"][2]["spec"] == "s3fifo:small=0.2,promote=2");
  // More blocks never lower lru's hit rate here (its curve is in the md).
  REQUIRE(j["results"][8]["hit_rate"].get<double>() >= j["results"][0]["hit_rate"].get<double>());
  REQUIRE(j["results"][8]["hit_rate"].get<double>() > 0);
  const std::string md = read_file(outs[0] + "/compare.md");
  REQUIRE(md.find("Hit rate (%) vs capacity") != std::string::npos);
  REQUIRE(md.find("not a proven optimum") != std::string::npos);
  REQUIRE(read_file(outs[0] + "/compare.csv").rfind("policy,spec,kv_blocks,capacity_tokens,hit_rate", 0) == 0);
}

TEST_CASE("compare in engine mode adds TTFT percentiles and writes compare.html", "[compare][cli]") {
  const std::string dir = temp_dir("compare_engine");
  const std::string trace = write_trace(dir);
  const auto outs = compare_twice(dir, trace,
                                  {"--policies", "lru,arc", "--kv-blocks", "40,200", "--block-size", "16",
                                   "--trace-block-size", "16", "--mode", "engine"},
                                  "2");
  REQUIRE(read_file(outs[0] + "/compare.json") == read_file(outs[1] + "/compare.json"));
  const auto j = nlohmann::json::parse(read_file(outs[0] + "/compare.json"));
  REQUIRE(j["mode"] == "engine");
  REQUIRE(j["results"].size() == 4);
  for (const auto& r : j["results"]) {
    REQUIRE(r["ttft_p50_ms"].get<double>() > 0);
    REQUIRE(r["ttft_p99_ms"].get<double>() >= r["ttft_p50_ms"].get<double>());
    REQUIRE(r["requests"] == 120);  // every request finished
    REQUIRE_FALSE(r.contains("evicted_after_hit"));  // the retention probe is cache mode's
  }
  REQUIRE(read_file(outs[0] + "/compare.html").find("<canvas") != std::string::npos);
}

TEST_CASE("compare --warmup leaves the warm-up requests out as replay --warmup does, in both modes",
          "[compare][cli][warmup]") {
  const std::string dir = temp_dir("compare_warmup");
  const std::string trace = write_trace(dir);
  const std::vector<std::string> common = {"--kv-blocks", "60", "--block-size", "16", "--trace-block-size", "16",
                                           "--warmup", "40", "--quiet"};
  for (const char* mode : {"cache", "engine"}) {
    INFO(mode);
    std::vector<std::string> cmp = {"compare", trace, "--policies", "lru,fifo", "--mode", mode, "--out",
                                    dir + "/c-" + mode};
    cmp.insert(cmp.end(), common.begin(), common.end());
    const auto c = run_cli(cmp);
    INFO(c.err);
    REQUIRE(c.rc == 0);
    const auto j = nlohmann::json::parse(read_file(dir + "/c-" + mode + "/compare.json"));
    for (const auto& row : j["results"]) {
      const std::string policy = row["policy"];
      std::vector<std::string> rep = {"replay", trace, "--policy", policy, "--mode", mode, "--out",
                                      dir + "/r-" + mode + policy};
      rep.insert(rep.end(), common.begin(), common.end());
      REQUIRE(run_cli(rep).rc == 0);
      const auto r = nlohmann::json::parse(read_file(dir + "/r-" + mode + policy + "/report.json"));
      INFO(policy);
      CHECK(row["requests"] == 80);  // 120 requests, 40 of them warm-up
      CHECK(row["hit_rate"] == r["prefix_cache"]["hit_rate"]);
      if (std::string(mode) == "engine") CHECK(row["ttft_p99_ms"] == r["latency_ms"]["ttft"]["p99"]);
    }
  }
  const auto all = run_cli({"compare", trace, "--policies", "lru", "--kv-blocks", "60", "--trace-block-size", "16",
                            "--warmup", "500", "--out", dir + "/all"});
  INFO(all.err);
  CHECK(all.rc == 2);
  CHECK(all.err.find("--warmup: the warm-up covers all 120 requests") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/all/compare.json"));
}

TEST_CASE("compare rejects bad usage with a one-line message and exit 2", "[compare][cli]") {
  const std::string dir = temp_dir("compare_bad");
  const std::string trace = write_trace(dir);
  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  const Bad cases[] = {
      {{"compare", trace, "--policies", "lru,belady", "--kv-blocks", "20", "--mode", "engine"}, "belady runs in cache mode only"},
      {{"compare", trace, "--policies", "lru", "--kv-blocks", "20", "--mode", "fast"}, "--mode: 'fast'"},
      {{"compare", trace, "--policies", "lru,nosuch", "--kv-blocks", "20"}, "unknown policy 'nosuch'"},
      {{"compare", trace, "--policies", "lru"}, "exactly one of --kv-blocks"},
      {{"compare", trace, "--policies", "lru", "--kv-blocks", "20,abc"}, "--kv-blocks: 'abc'"},
      {{"compare", trace, "--policies", "lfu:half_life=x", "--kv-blocks", "20"}, "half_life"},
      {{"compare", dir + "/missing.jsonl", "--policies", "lru", "--kv-blocks", "20"}, "missing.jsonl"},
  };
  for (const Bad& b : cases) {
    const auto r = run_cli(b.args);
    INFO(b.says << " -> " << r.err);
    REQUIRE(r.rc == 2);
    REQUIRE(r.err.find(b.says) != std::string::npos);
    REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("replay --mode cache --policy belady equals compare's belady at every size; engine mode refuses it",
          "[compare][cli][belady]") {
  // Both read the trace ahead with the same pre-pass (offline_future.h).
  const std::string dir = temp_dir("replay_belady");
  const std::string trace = write_trace(dir);
  const std::vector<std::string> common = {"--block-size", "16", "--trace-block-size", "16"};
  std::vector<std::string> argv = {"compare", trace, "--policies", "lru,belady", "--kv-blocks", "12,30,80",
                                   "--out", dir + "/cmp", "--quiet"};
  argv.insert(argv.end(), common.begin(), common.end());
  const auto c = run_cli(argv);
  INFO(c.err);
  REQUIRE(c.rc == 0);
  const auto cj = nlohmann::json::parse(read_file(dir + "/cmp/compare.json"));
  int checked = 0;
  for (const auto& res : cj["results"]) {
    if (res["policy"] != "belady") continue;
    const std::string n = std::to_string(res["kv_blocks"].get<int64_t>());
    std::vector<std::string> rargv = {"replay", trace, "--mode", "cache", "--policy", "belady", "--kv-blocks", n,
                                      "--check-invariants", "--out", dir + "/rep" + n, "--quiet"};
    rargv.insert(rargv.end(), common.begin(), common.end());
    const auto r = run_cli(rargv);
    INFO("kv blocks " << n << ": " << r.err);
    REQUIRE(r.rc == 0);
    const auto rj = nlohmann::json::parse(read_file(dir + "/rep" + n + "/report.json"));
    REQUIRE(rj["scenario"]["policy_resolved"] == "belady");
    REQUIRE(rj["prefix_cache"]["hit_rate"].get<double>() == res["hit_rate"].get<double>());
    REQUIRE(rj["prefix_cache"]["hit_tokens"] == res["hit_tokens"]);
    REQUIRE(rj["prefix_cache"]["evictions"] == res["evictions"]);
    ++checked;
  }
  REQUIRE(checked == 3);
  // The offline policy knows the future: it beats lru at the smallest size.
  REQUIRE(cj["results"][1]["hit_rate"].get<double>() > cj["results"][0]["hit_rate"].get<double>());

  std::vector<std::string> eargv = {"replay", trace, "--mode", "engine", "--policy", "belady", "--kv-blocks", "30",
                                    "--out", dir + "/eng", "--quiet"};
  eargv.insert(eargv.end(), common.begin(), common.end());
  const auto e = run_cli(eargv);
  INFO(e.err);
  REQUIRE(e.rc == 2);
  REQUIRE(e.err.find("--policy: belady runs in cache mode only") != std::string::npos);
  REQUIRE(std::count(e.err.begin(), e.err.end(), '\n') == 1);
}

TEST_CASE("compare reports a recurring system prompt's reuse distance against each policy's capacity and ghost list",
          "[compare][cli][hot-prefix]") {
  // Block size 16. The system prompt is 32 tokens (2 blocks); a request
  // with it adds 17 tokens of its own (one more full block, looked up:
  // floor(48 / 16) = 3 blocks). One-offs are 40 tokens of their own (2 full
  // blocks). Bursts of 2, 4 and 3 one-offs separate its four uses, so at
  // each reuse the distinct blocks touched since the last use are its own 2
  // plus 2 per one-off (the last use's own third block is older than the
  // prompt: freed first): 6, 10 and 8 blocks; the median is 8.
  const std::string dir = temp_dir("compare_hot");
  const std::string trace = dir + "/trace.jsonl";
  {
    std::ofstream out(trace);
    int32_t next = 1000, id = 0;
    auto request = [&](bool with_prompt, int own) {
      std::string toks;
      if (with_prompt)
        for (int k = 0; k < 32; ++k) toks += (toks.empty() ? "" : ",") + std::to_string(k + 1);
      for (int k = 0; k < own; ++k) toks += (toks.empty() ? "" : ",") + std::to_string(next++);
      out << "{\"id\":\"r" << id << "\",\"t\":" << id << ",\"tokens\":[" << toks << "],\"output_len\":1}\n";
      ++id;
    };
    for (int burst : {2, 4, 3, 0}) {
      request(true, 17);
      for (int k = 0; k < burst; ++k) request(false, 40);
    }
  }
  const auto r = run_cli({"compare", trace, "--policies", "lru,arc,2q,s3fifo", "--kv-blocks", "8,13", "--block-size",
                          "16", "--out", dir + "/out", "--quiet"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(read_file(dir + "/out/compare.json"));
  REQUIRE(j["hot_prefixes"].size() == 1);  // nothing else is reused
  const auto& h = j["hot_prefixes"][0];
  REQUIRE(h["blocks"] == 2);
  REQUIRE(h["tokens"] == 32);
  REQUIRE(h["reuses"] == 3);
  REQUIRE(h["reuse_distances_blocks"] == nlohmann::json::array({6, 10, 8}));
  REQUIRE(h["median_reuse_distance_blocks"] == 8);
  // The very prefix `analyze` ranks hottest.
  const auto a = run_cli({"analyze", trace, "--block-size", "16", "--out", dir + "/an"});
  REQUIRE(a.rc == 0);
  const auto aj = nlohmann::json::parse(read_file(dir + "/an/analysis.json"));
  REQUIRE(aj["hottest_prefixes"][0]["hash"] == h["hash"]);
  // Capacity and ghost per pair: usable blocks c = kv blocks - 1; arc
  // remembers c hashes in all, 2q floor(0.5 c) + 1, s3fifo c, lru none.
  const std::map<std::string, std::function<int64_t(int64_t)>> ghost = {
      {"lru", [](int64_t) { return int64_t{0}; }},
      {"arc", [](int64_t c) { return c; }},
      {"2q", [](int64_t c) { return c / 2 + 1; }},
      {"s3fifo", [](int64_t c) { return c; }}};
  for (const auto& res : j["results"]) {
    const int64_t c = res["kv_blocks"].get<int64_t>() - 1;
    INFO(res["policy"] << " at " << res["kv_blocks"]);
    REQUIRE(res["capacity_blocks"] == c);
    REQUIRE(res["ghost_blocks"] == ghost.at(res["policy"].get<std::string>())(c));
    // What the policy kept (cache mode): shares of its evictions and hits.
    REQUIRE(res["evicted_after_hit"] <= res["evictions"]);
    REQUIRE(res["hits_on_recomputed"] <= res["hit_blocks"]);
  }
  const std::string md = read_file(dir + "/out/compare.md");
  REQUIRE(md.find("median reuse distance") != std::string::npos);
  // lru at 8 blocks: capacity 7 < 8, no ghost; arc at 8 blocks reaches 14.
  REQUIRE(md.find("| lru | 8 | 7 | 0 | 7 | 0 of 1 | 0 of 1 |") != std::string::npos);
  REQUIRE(md.find("| arc | 8 | 7 | 7 | 14 | 0 of 1 | 1 of 1 |") != std::string::npos);
  REQUIRE(md.find("| lru | 13 | 12 | 0 | 12 | 1 of 1 | 1 of 1 |") != std::string::npos);
  REQUIRE(md.find("## What each policy kept") != std::string::npos);
}

TEST_CASE("compare refuses a list entry given twice with exit 2, naming the flag and the entry, and writes nothing",
          "[compare][cli]") {
  const std::string dir = temp_dir("compare_twice");
  const std::string trace = write_trace(dir);
  struct Twice {
    std::vector<std::string> args;
    const char* says;
  };
  const Twice cases[] = {
      {{"--mode", "engine", "--policies", "lru", "--kv-blocks", "40", "--replicas", "2,2"},
       "--replicas: '2' is given twice"},
      {{"--mode", "engine", "--policies", "lru", "--kv-blocks", "40", "--routers", "prefix,prefix"},
       "--routers: 'prefix' is given twice"},
      {{"--mode", "engine", "--policies", "lru", "--kv-blocks", "40", "--routers",
        "kv-aware:overlap_weight=2,temperature=0.5,round-robin,kv-aware:overlap_weight=2,temperature=0.5"},
       "--routers: 'kv-aware:overlap_weight=2,temperature=0.5' is given twice"},
      {{"--policies", "lru,fifo,lru", "--kv-blocks", "40"}, "--policies: 'lru' is given twice"},
      {{"--policies", "lru", "--kv-blocks", "40,80,40"}, "--kv-blocks: '40' is given twice"},
      {{"--policies", "lru", "--kv-blocks", "40", "--kv-offloading-size", "1,1"},
       "--kv-offloading-size: '1' is given twice"},
  };
  for (const Twice& c : cases) {
    std::vector<std::string> argv = {"compare", trace, "--out", dir + "/out"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto r = run_cli(argv);
    INFO(c.says << " -> " << r.err);
    CHECK(r.rc == 2);
    CHECK(r.err == std::string("prefixsim compare: ") + c.says + "\n");
    CHECK_FALSE(std::filesystem::exists(dir + "/out/compare.json"));
  }
}

TEST_CASE("compare --routers takes a router spec with its own commas as one router", "[compare][cli]") {
  const std::string dir = temp_dir("compare_router_spec");
  const std::string trace = write_trace(dir);
  const auto r = run_cli({"compare", trace, "--mode", "engine", "--policies", "lru", "--kv-blocks", "400",
                          "--routers", "kv-aware:overlap_weight=2,temperature=0.5,prefix", "--replicas", "2",
                          "--trace-block-size", "16", "--out", dir + "/out", "--quiet"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json c = nlohmann::json::parse(read_file(dir + "/out/compare.json"));
  CHECK(c["routers"] == nlohmann::json::array({"kv-aware:overlap_weight=2,temperature=0.5", "prefix"}));
  CHECK(c["results"].size() == 2);
}
