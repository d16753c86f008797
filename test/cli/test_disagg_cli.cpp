// `replay --prefill-replicas P --decode-replicas D` from the command line:
// the disagg section adds up (every request split or prefilled locally, one
// transfer per split request, the links carrying the transfers' bytes), the
// run repeats itself byte for byte, compare and sweep take the keys (the
// same bytes on 1 or 2 threads), and misuse is exit 2 naming the flag.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test/support.h"

using namespace prefixsim::test;
using nlohmann::json;

namespace test_disagg_cli {
json json_of(const std::string& path) { return json::parse(read_file(path)); }
const std::vector<std::string> kLoad = {"--workload", "multi-turn", "--requests", "200", "--rate", "20",
                                        "--kv-blocks", "3000", "--quiet"};
std::vector<std::string> with_load(std::vector<std::string> head) {
  head.insert(head.end(), kLoad.begin(), kLoad.end());
  return head;
}

TEST_CASE("a disaggregated replay reports its pools, transfers and links, and they add up", "[cli][disagg]") {
  const std::string dir = temp_dir("disagg-cli");
  auto r = run_cli(with_load({"replay", "--prefill-replicas", "2", "--decode-replicas", "2", "--prefill-router",
                              "prefix", "--kv-link-gbps", "25", "--out", dir + "/a"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/a/report.json");
  CHECK(rep["trace"]["requests"] == 200);
  REQUIRE(rep.contains("disagg"));
  const json& d = rep["disagg"];
  CHECK(d["design"] == "vllm-nixl:first_token=decode,decode_pick=after,local_prefill=-1");
  REQUIRE(d["pools"].size() == 2);
  CHECK(d["pools"][0]["name"] == "prefill");
  CHECK(d["pools"][0]["instances"] == 2);
  CHECK(d["pools"][1]["name"] == "decode");
  const uint64_t split = d["requests"]["split"].get<uint64_t>();
  CHECK(split + d["requests"]["local"].get<uint64_t>() == 200);
  CHECK(d["pools"][0]["arrived"].get<uint64_t>() == split);
  CHECK(d["pools"][1]["arrived"].get<uint64_t>() == 200);
  CHECK(d["transfers"]["count"].get<uint64_t>() == split);
  uint64_t tx = 0, rx = 0;
  for (const json& l : d["links"]) {
    const std::string name = l["name"];
    if (name.find(" tx") != std::string::npos) tx += l["bytes"].get<uint64_t>();
    if (name.find(" rx") != std::string::npos) rx += l["bytes"].get<uint64_t>();
    CHECK(l["busy_share"].get<double>() >= 0);
    CHECK(l["busy_share"].get<double>() <= 1);
  }
  CHECK(tx == d["transfers"]["bytes"].get<uint64_t>());
  CHECK(rx == tx);
  CHECK(d["transfers"]["mean_ms"].get<double>() >= d["transfers"]["line_rate_mean_ms"].get<double>());
  CHECK(d["ttft_parts_ms"]["transfer"]["count"].get<uint64_t>() == split);
  // TTFT = queue + prefill + transfer + first decode, on average.
  const json& parts = d["ttft_parts_ms"];
  const double sum = parts["queue"]["mean"].get<double>() + parts["prefill"]["mean"].get<double>() +
                     parts["transfer"]["mean"].get<double>() + parts["first_decode"]["mean"].get<double>();
  CHECK(sum == Approx(rep["latency_ms"]["ttft"]["mean"].get<double>()).epsilon(1e-6));
  CHECK(read_file(dir + "/a/summary.md").find("disaggregated (vllm-nixl") != std::string::npos);
  // The page shows the pools, the TTFT parts and the busiest links.
  const std::string html = read_file(dir + "/a/report.html");
  CHECK(html.find("<h2>Disaggregated prefill and decode (vllm-nixl") != std::string::npos);
  CHECK(html.find("<tr><td>prefill</td><td>2</td>") != std::string::npos);
  CHECK(html.find("<tr><td>decode</td><td>2</td>") != std::string::npos);
  CHECK(html.find("<td>transfer (hand-off to KV read)</td>") != std::string::npos);
  CHECK(html.find("<tr><td>" + d["links"][0]["name"].get<std::string>() + "</td>") != std::string::npos);
  // The same run again: the same bytes.
  REQUIRE(run_cli(with_load({"replay", "--prefill-replicas", "2", "--decode-replicas", "2", "--prefill-router",
                             "prefix", "--kv-link-gbps", "25", "--out", dir + "/b"}))
              .rc == 0);
  CHECK(read_file(dir + "/a/report.json") == read_file(dir + "/b/report.json"));
}

std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string c; std::getline(in, c, ',');) cells.push_back(c);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

TEST_CASE("the fleet's KV usage over time weighs each pool by its blocks when the pools differ", "[cli][disagg]") {
  const std::string dir = temp_dir("disagg-usage");
  // The decode instance on TP 2 has a pool about twice a TP 1 instance's.
  auto r = run_cli({"replay", "--workload", "multi-turn", "--requests", "200", "--rate", "20", "--quiet",
                    "--prefill-replicas", "2", "--decode-replicas", "1", "--decode-tp", "2", "--out", dir + "/a"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/a/report.json");
  std::vector<double> usable;  // per instance, in replica order
  for (const json& p : rep["disagg"]["pools"])
    for (int i = 0; i < p["instances"].get<int>(); ++i) usable.push_back(p["num_blocks"].get<double>() - 1);
  REQUIRE(usable.size() == 3);
  REQUIRE(usable[2] > 1.5 * usable[0]);
  std::stringstream series(read_file(dir + "/a/series.csv"));
  std::string line;
  std::getline(series, line);
  const std::vector<std::string> head = csv_cells(line);
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(head.begin(), head.end(), name) - head.begin());
  };
  int checked = 0;
  while (std::getline(series, line)) {
    const std::vector<std::string> cells = csv_cells(line);
    double used = 0, all = 0;
    bool complete = true;
    for (size_t i = 0; i < usable.size(); ++i) {
      const std::string& v = cells.at(column("r" + std::to_string(i) + "_kv_usage"));
      complete = complete && !v.empty();
      if (!v.empty()) used += std::stod(v) * usable[i], all += usable[i];
    }
    if (!complete) continue;
    CHECK(std::stod(cells.at(column("kv_usage"))) == Approx(used / all).epsilon(1e-9));
    ++checked;
  }
  CHECK(checked > 3);
}

TEST_CASE("admission gates a disaggregated fleet on its prefill pool: those refused never reach a pool",
          "[cli][disagg][admission]") {
  const std::string dir = temp_dir("disagg-adm");
  auto r = run_cli({"replay", "--workload", "multi-turn", "--requests", "300", "--rate", "200", "--quiet",
                    "--prefill-replicas", "1", "--decode-replicas", "1", "--admission", "saturation:waiting=1,queue=2",
                    "--out", dir + "/a"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json rep = json_of(dir + "/a/report.json");
  REQUIRE(rep.contains("admission"));
  const json& a = rep["admission"];
  const uint64_t refused = a["refused_saturated"].get<uint64_t>() + a["refused_queue_full"].get<uint64_t>();
  CHECK(refused > 0);  // 200 requests a second on one prefill instance
  CHECK(a["offered_requests"].get<uint64_t>() == 300);
  CHECK(a["refusal_rate"].get<double>() == Approx(static_cast<double>(refused) / 300.0));
  const json& d = rep["disagg"];
  const uint64_t split = d["requests"]["split"].get<uint64_t>();
  CHECK(split + refused == 300);
  CHECK(d["pools"][0]["arrived"].get<uint64_t>() == split);  // the refused never reached the prefill pool
  CHECK(d["pools"][0]["finished"].get<uint64_t>() == split);
  CHECK(d["pools"][1]["finished"].get<uint64_t>() == split);
}

TEST_CASE("a slower link moves the same bytes more slowly and lengthens TTFT", "[cli][disagg]") {
  const std::string dir = temp_dir("disagg-link");
  for (const char* gbps : {"50", "1"}) {
    auto r = run_cli(with_load({"replay", "--prefill-replicas", "1", "--decode-replicas", "1", "--kv-link-gbps", gbps,
                                "--out", dir + "/" + gbps}));
    INFO(r.err);
    REQUIRE(r.rc == 0);
  }
  const json fast = json_of(dir + "/50/report.json"), slow = json_of(dir + "/1/report.json");
  // About the same bytes: what the decode instance lacks at its lookup, whose
  // cache the link's timing moves a little (here 0.1 %).
  CHECK(slow["disagg"]["transfers"]["bytes"].get<double>() ==
        Approx(fast["disagg"]["transfers"]["bytes"].get<double>()).epsilon(0.01));
  CHECK(slow["disagg"]["transfers"]["mean_ms"].get<double>() >
        10 * fast["disagg"]["transfers"]["mean_ms"].get<double>());
  CHECK(slow["disagg"]["ttft_parts_ms"]["transfer"]["mean"].get<double>() >
        fast["disagg"]["ttft_parts_ms"]["transfer"]["mean"].get<double>());
  CHECK(slow["latency_ms"]["ttft"]["p50"].get<double>() > fast["latency_ms"]["ttft"]["p50"].get<double>());
}

TEST_CASE("sweep runs disaggregated points, the same bytes on 1 or 2 threads", "[cli][disagg]") {
  const std::string dir = temp_dir("disagg-sweep");
  write_text_file(dir, "grid.yaml",
             "base:\n  workload: multi-turn\n  requests: 120\n  rate: 20\n  kv_blocks: 3000\n"
             "  prefill_replicas: 1\n  decode_replicas: 1\n"
             "axes:\n  kv_link_gbps: [1, 50]\n  disagg: [vllm-nixl, mooncake]\n");
  for (const char* t : {"1", "2"}) {
    auto r = run_cli({"sweep", dir + "/grid.yaml", "--threads", t, "--out", dir + "/t" + t, "--quiet"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
  }
  const std::string one = read_file(dir + "/t1/sweep.csv");
  CHECK(one == read_file(dir + "/t2/sweep.csv"));
  CHECK(one.find("mooncake") != std::string::npos);
}

TEST_CASE("compare's pool sizes apply to pools of the compared server", "[cli][disagg]") {
  const std::string dir = temp_dir("disagg-compare");
  auto r = run_cli({"compare", data_path("traces/mooncake_small.jsonl"), "--mode", "engine", "--policies", "lru",
                    "--kv-blocks", "40,3000", "--prefill-replicas", "1", "--decode-replicas", "1", "--out", dir,
                    "--quiet"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  // compare.csv: policy,spec,kv_blocks,capacity_tokens,...,refused_requests (10th column),...
  const std::string csv = read_file(dir + "/compare.csv");
  auto refused_at = [&](const std::string& blocks) {
    const size_t at = csv.find("\"lru\"," + blocks + ",");
    REQUIRE(at != std::string::npos);
    std::string line = csv.substr(at, csv.find('\n', at) - at);
    for (int k = 0; k < 8; ++k) line = line.substr(line.find(',') + 1);
    return std::stoll(line.substr(0, line.find(',')));
  };
  CHECK(refused_at("40") > 0);  // 40 blocks hold no request of that trace
  CHECK(refused_at("3000") == 0);
}

TEST_CASE("disaggregation misuse is exit 2 naming the flag", "[cli][disagg]") {
  const std::string dir = temp_dir("disagg-bad");
  struct Case {
    std::vector<std::string> flags;
    const char* says;
  } cases[] = {
      {{"--prefill-replicas", "2"}, "--prefill-replicas: needs --decode-replicas"},
      {{"--decode-replicas", "2"}, "--decode-replicas: needs --prefill-replicas"},
      {{"--kv-link-gbps", "10"}, "need --prefill-replicas and --decode-replicas"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--replicas", "2"}, "--replicas: give --prefill-replicas"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--disagg", "splitwise"}, "--disagg: unknown design"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--disagg", "mooncake:first_token=both"}, "first_token"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--kv-link-gbps", "-1"}, "--kv-link-gbps: must be"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--prefill-tp", "65"}, "--prefill-tp: must be"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--decode-router", "nearest"}, "unknown router 'nearest'"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--mode", "cache"}, "engine mode"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--admission", "saturation:kv=2"}, "--admission"},
      {{"--prefill-replicas", "1", "--decode-replicas", "1", "--prefill-gpu", "tpu-v9"}, "tpu-v9"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> a = {"replay", "--out", dir + "/out"};
    a.insert(a.end(), c.flags.begin(), c.flags.end());
    const CliResult r = run_cli(with_load(a));
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

}  // namespace test_disagg_cli
