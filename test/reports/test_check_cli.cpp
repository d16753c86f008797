// `prefixsim check` end to end through the binary: verdicts, exit codes,
// JUnit XML and baseline updates, on reports crafted from a known RunReport.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reports/outputs.h"
#include "test/reports/sample_report.h"
#include "test/support.h"

using namespace prefixsim;
using ojson = nlohmann::ordered_json;

namespace {

ojson sample_json(bool engine = true) { return report_to_json(test::sample_run_report(engine)); }

std::string write_json(const std::string& dir, const std::string& name, const ojson& j) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << j.dump(2);
  return path;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// The table row of one metric.
std::string row_of(const std::string& out, const std::string& metric) {
  const auto at = out.find("\n" + metric + " ");
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST_CASE("check passes an identical report and calls every metric unchanged", "[check][cli]") {
  const std::string dir = test::temp_dir("check-same");
  const std::string base = write_json(dir, "base.json", sample_json());
  const auto r = test::run_cli({"check", write_json(dir, "now.json", sample_json()), "--baseline", base});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(contains(row_of(r.out, "hit_rate"), "0.6000 -> 0.6000"));
  CHECK(contains(row_of(r.out, "ttft_p99"), "unchanged"));
  CHECK(contains(r.out, "8 metrics checked, 0 regressed, 0 skipped"));
}

TEST_CASE("check passes an improvement: higher hit rate, lower TTFT", "[check][cli]") {
  const std::string dir = test::temp_dir("check-better");
  ojson now = sample_json();
  now["prefix_cache"]["hit_rate"] = 0.65;
  now["latency_ms"]["ttft"]["p99"] = 100.0;
  const auto r = test::run_cli({"check", write_json(dir, "now.json", now), "--baseline",
                                write_json(dir, "base.json", sample_json())});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(contains(row_of(r.out, "hit_rate"), "improved"));
  CHECK(contains(row_of(r.out, "hit_rate"), "+0.0500"));
  CHECK(contains(row_of(r.out, "ttft_p99"), "improved"));
}

TEST_CASE("check passes a worsening within tolerance and fails one beyond it", "[check][cli]") {
  const std::string dir = test::temp_dir("check-worse");
  const std::string base = write_json(dir, "base.json", sample_json());
  ojson now = sample_json();
  now["prefix_cache"]["hit_rate"] = 0.597;  // default tolerance 0.005 absolute
  auto r = test::run_cli({"check", write_json(dir, "within.json", now), "--baseline", base});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(contains(row_of(r.out, "hit_rate"), "worse, within tolerance"));

  now["prefix_cache"]["hit_rate"] = 0.59;
  const std::string over = write_json(dir, "over.json", now);
  r = test::run_cli({"check", over, "--baseline", base});
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  CHECK(contains(row_of(r.out, "hit_rate"), "REGRESSION"));
  CHECK(contains(r.out, "result: REGRESSION"));
  // A looser tolerance on the command line lets it pass.
  r = test::run_cli({"check", over, "--baseline", base, "--tolerance", "hit_rate=0.02"});
  CHECK(r.rc == 0);

  // Relative tolerances: TTFT p99 10 % higher fails the default 5 %, passes 20 %.
  ojson slow = sample_json();
  slow["latency_ms"]["ttft"]["p99"] = slow["latency_ms"]["ttft"]["p99"].get<double>() * 1.10;
  const std::string slow_path = write_json(dir, "slow.json", slow);
  r = test::run_cli({"check", slow_path, "--baseline", base});
  CHECK(r.rc == 1);
  CHECK(contains(row_of(r.out, "ttft_p99"), "REGRESSION"));
  CHECK(contains(row_of(r.out, "ttft_p99"), "(+10.00%)"));
  r = test::run_cli({"check", slow_path, "--baseline", base, "--tolerance", "ttft_p99=20%"});
  CHECK(r.rc == 0);
}

TEST_CASE("check exits 2 naming the field when a metric is missing", "[check][cli]") {
  const std::string dir = test::temp_dir("check-missing");
  ojson now = sample_json();
  now["latency_ms"]["ttft"].erase("p99");
  const auto r = test::run_cli({"check", write_json(dir, "now.json", now), "--baseline",
                                write_json(dir, "base.json", sample_json())});
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "now.json"));
  CHECK(contains(r.err, "latency_ms.ttft.p99"));
  CHECK(r.out.empty());
}

TEST_CASE("check exits 2 naming the schema field on a schema mismatch", "[check][cli]") {
  const std::string dir = test::temp_dir("check-schema");
  ojson other = sample_json();
  other["schema"] = "prefixsim.report/2";
  const std::string good = write_json(dir, "good.json", sample_json());
  auto r = test::run_cli({"check", good, "--baseline", write_json(dir, "base.json", other)});
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "base.json: field 'schema' is 'prefixsim.report/2'"));
  ojson noschema = sample_json();
  noschema.erase("schema");
  r = test::run_cli({"check", write_json(dir, "now.json", noschema), "--baseline", good});
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "now.json: field 'schema'"));
  r = test::run_cli({"check", good, "--baseline", dir + "/absent.json"});
  CHECK(r.rc == 2);
  r = test::run_cli({"check", good, "--baseline", good, "--tolerance", "latency=5%"});
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "unknown metric 'latency'"));
}

TEST_CASE("check of a cache-mode report checks only the hit rates and says why", "[check][cli]") {
  const std::string dir = test::temp_dir("check-cache");
  ojson now = sample_json(false);
  now["prefix_cache"]["hit_rate"] = 0.5;
  const auto r = test::run_cli({"check", write_json(dir, "cache.json", now), "--baseline",
                                write_json(dir, "base.json", sample_json()), "--allow-scenario-change"});
  INFO(r.out << r.err);
  CHECK(r.rc == 1);  // the hit rate fell by 0.1
  CHECK(contains(r.err, "warning: the report's scenario is not the baseline's: field 'mode'"));
  CHECK(contains(row_of(r.out, "ttft_p99"), "skipped (report is a cache-mode report"));
  CHECK(contains(r.out, "2 metrics checked, 1 regressed, 6 skipped"));
  CHECK(contains(r.out, "only what both sides have was checked"));
}

TEST_CASE("check --junit writes JUnit XML that parses back with one testcase per metric", "[check][cli][junit]") {
  const std::string dir = test::temp_dir("check-junit");
  ojson now = sample_json();
  now["prefix_cache"]["hit_rate"] = 0.5;
  const std::string xml = dir + "/check & <junit>.xml";
  const auto r = test::run_cli({"check", write_json(dir, "now <1>.json", now), "--baseline",
                                write_json(dir, "base.json", sample_json()), "--junit", xml});
  REQUIRE(r.rc == 1);
  const std::string text = test::read_file(xml);
  CHECK(contains(text, "<failure type=\"regression\""));
  // Python's XML parser (meson needs python3, so it is there) reads it back.
  const std::string script = dir + "/parse.py", result = dir + "/parsed.txt";
  std::ofstream(script) << "import sys, xml.etree.ElementTree as ET\n"
                           "root = ET.parse(sys.argv[1]).getroot()\n"
                           "cases = root.findall('./testsuite/testcase')\n"
                           "fails = [c.get('name') for c in cases if c.find('failure') is not None]\n"
                           "open(sys.argv[2], 'w').write('%s %d %s %s' % (root.tag, len(cases), ','.join(fails), "
                           "root.find('./testsuite').get('failures')))\n";
  const std::string cmd = "python3 '" + script + "' '" + xml + "' '" + result + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(test::read_file(result) == "testsuites 8 hit_rate 1");
}

TEST_CASE("check --update-baseline writes a baseline that later checks use, tolerances kept", "[check][cli]") {
  const std::string dir = test::temp_dir("check-update");
  const std::string report = write_json(dir, "report.json", sample_json());
  const std::string base = dir + "/baseline.json";
  auto r = test::run_cli({"check", report, "--baseline", base, "--update-baseline", "--tolerance", "hit_rate=0.01"});
  REQUIRE(r.rc == 0);
  const auto b = nlohmann::json::parse(test::read_file(base));
  CHECK(b["schema"] == "prefixsim.baseline/1");
  CHECK(b["metrics"]["hit_rate"] == 0.6);
  CHECK(b["tolerances"]["hit_rate"] == "0.01");
  ojson now = sample_json();
  now["prefix_cache"]["hit_rate"] = 0.592;  // beyond the default 0.005, within the baseline's 0.01
  const std::string now_path = write_json(dir, "now.json", now);
  r = test::run_cli({"check", now_path, "--baseline", base});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(contains(row_of(r.out, "hit_rate"), "worse, within tolerance"));
  // Accepting the new numbers: update, then the same report passes as unchanged.
  r = test::run_cli({"check", now_path, "--baseline", base, "--update-baseline"});
  CHECK(r.rc == 0);
  CHECK(nlohmann::json::parse(test::read_file(base))["tolerances"]["hit_rate"] == "0.01");
  r = test::run_cli({"check", now_path, "--baseline", base});
  CHECK(r.rc == 0);
  CHECK(contains(row_of(r.out, "hit_rate"), "unchanged"));
  // A baseline file listing an unknown metric is bad input.
  std::ofstream(dir + "/bad.json") << R"({"schema":"prefixsim.baseline/1","metrics":{"hit_ratio":0.5}})";
  r = test::run_cli({"check", now_path, "--baseline", dir + "/bad.json"});
  CHECK(r.rc == 2);
  CHECK(contains(r.err, "metrics.hit_ratio"));
}

TEST_CASE("check --help explains the metrics and exit codes", "[check][cli]") {
  const auto r = test::run_cli({"check", "--help"});
  CHECK(r.rc == 0);
  CHECK(contains(r.out, "usage: prefixsim check REPORT --baseline"));
  CHECK(contains(r.out, "latency_ms.ttft.p99"));
  CHECK(contains(r.out, "exit: 0"));
}

TEST_CASE("check refuses a report of another serving setup than the baseline's, unless allowed", "[check][cli]") {
  const std::string dir = test::temp_dir("check-scenario");
  const std::string base = write_json(dir, "base.json", sample_json());
  struct Change {
    const char* what;
    const char* path;  // report.json key path
    ojson value;
    const char* field;  // as the error names it
  };
  const std::vector<Change> changes = {
      {"cache mode against engine", "mode", "cache", "'mode'"},
      {"another policy", "scenario.policy", "s3fifo", "'policy'"},
      {"another pool", "kv_cache.num_blocks", 8192, "'kv_blocks'"},
      {"another model", "scenario.model", "qwen3-8b", "'model'"},
      {"another GPU", "scenario.gpu", "a100-80gb", "'gpu'"},
  };
  for (const Change& c : changes) {
    INFO(c.what);
    ojson now = sample_json();
    const std::string p = c.path;
    if (p.find('.') == std::string::npos) now[p] = c.value;
    else now[p.substr(0, p.find('.'))][p.substr(p.find('.') + 1)] = c.value;
    const std::string now_path = write_json(dir, "now.json", now);
    auto r = test::run_cli({"check", now_path, "--baseline", base});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, std::string("the report's scenario is not the baseline's: field ") + c.field));
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
    r = test::run_cli({"check", now_path, "--baseline", base, "--allow-scenario-change"});
    CHECK(r.rc != 2);
  }
}

TEST_CASE("a baseline file records the scenario and the trace; new traffic is reported, not refused",
          "[check][cli]") {
  const std::string dir = test::temp_dir("check-traffic");
  const std::string report = write_json(dir, "r.json", sample_json());
  const std::string base = dir + "/baseline.json";
  REQUIRE(test::run_cli({"check", report, "--baseline", base, "--update-baseline"}).rc == 0);
  const nlohmann::json b = nlohmann::json::parse(test::read_file(base));
  CHECK(b["scenario"]["policy"] == "lru");
  CHECK(b["scenario"]["kv_blocks"] == 4096);
  CHECK(b["trace"]["checksum"] == "00112233445566778899aabbccddeeff");
  CHECK(b["trace"]["requests"] == 50);
  // Re-rendered prompt templates: other bytes, same setup. Checked, with a note.
  ojson now = sample_json();
  now["trace"]["checksum"] = "ffeeddccbbaa99887766554433221100";
  now["trace"]["requests"] = 60;
  const auto r = test::run_cli({"check", write_json(dir, "now.json", now), "--baseline", base});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(contains(r.out, "the trace differs from the baseline's (checksum"));
  CHECK(contains(r.out, "requests 50 -> 60"));
  // A baseline from before scenarios were recorded: re-create it, or allow.
  nlohmann::json old = b;
  old.erase("scenario");
  std::ofstream(dir + "/old.json") << old.dump(2);
  auto o = test::run_cli({"check", report, "--baseline", dir + "/old.json"});
  CHECK(o.rc == 2);
  CHECK(contains(o.err, "old.json: field 'scenario' is missing"));
  CHECK(test::run_cli({"check", report, "--baseline", dir + "/old.json", "--allow-scenario-change"}).rc == 0);
}

TEST_CASE("check refuses the report as its own baseline, by any spelling", "[check][cli]") {
  const std::string dir = test::temp_dir("check-self");
  const std::string report = write_json(dir, "r.json", sample_json());
  const std::string before = test::read_file(report);
  for (const std::string& base : {report, dir + "/./r.json"}) {
    for (bool update : {false, true}) {
      std::vector<std::string> args = {"check", report, "--baseline", base};
      if (update) args.push_back("--update-baseline");
      const auto r = test::run_cli(args);
      CHECK(r.rc == 2);
      CHECK(contains(r.err, "is the report itself"));
    }
  }
  CHECK(test::read_file(report) == before);
}
