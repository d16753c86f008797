// report.html and compare.html in a real browser: headless Chromium loads the
// page from disk (offline), runs Chart.js, and the page's own self-check
// records in <div id="render-status"> how many canvases got pixels and
// whether any error fired. A screenshot of the run report is kept in the
// test's build directory. Skips where /usr/bin/chromium is absent.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "test/reports/sample_report.h"
#include "test/support.h"

using namespace prefixsim;
namespace fs = std::filesystem;

namespace {

const char* kChromium = "/usr/bin/chromium";

std::string chromium_cmd(const std::string& work, const std::string& profile, const std::string& action,
                         const std::string& page) {
  fs::create_directories(profile);
  return std::string("timeout 40 ") + kChromium +
         " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
         " --disable-component-update --disable-sync --disable-extensions --hide-scrollbars"
         " --user-data-dir='" + profile + "' --virtual-time-budget=5000 " + action + " 'file://" + page + "'" +
         " 2>>'" + work + "/chromium.log'";
}

struct RenderStatus {
  std::map<std::string, std::string> attrs;
  std::string errors;
  int get(const std::string& k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? -1 : std::stoi(it->second);
  }
};

// Loads the page, dumps the DOM after the scripts ran, and reads the status element.
RenderStatus render(const std::string& work, const std::string& name, const std::string& html) {
  const std::string page = work + "/" + name + ".html", dom = work + "/" + name + ".dom.html";
  write_file_atomic(page, html);
  const std::string cmd = chromium_cmd(work, work + "/profile-" + name, "--dump-dom", page) + " > '" + dom + "'";
  const int rc = std::system(cmd.c_str());
  INFO("chromium: " << cmd << "\n" << test::read_file(work + "/chromium.log"));
  REQUIRE(rc == 0);
  const std::string text = test::read_file(dom);
  std::smatch m;
  const std::regex div(R"(<div id="render-status"([^>]*)>([^<]*)</div>)");
  INFO("dumped DOM has no render-status element: " << dom);
  REQUIRE(std::regex_search(text, m, div));
  RenderStatus s;
  s.errors = m[2].str();
  const std::string attrs = m[1].str();
  const std::regex attr(R"(data-([a-z]+)="([^"]*)\")");
  for (auto it = std::sregex_iterator(attrs.begin(), attrs.end(), attr); it != std::sregex_iterator(); ++it)
    s.attrs[(*it)[1].str()] = (*it)[2].str();
  return s;
}

std::string test_build_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::temp_directory_path().string() : exe.parent_path().string();
}

}  // namespace

TEST_CASE("report.html draws its charts in headless Chromium without errors", "[reports][html][browser]") {
  if (!fs::exists(kChromium)) PREFIXSIM_SKIP(kChromium << " is absent (apt-get install chromium)");
  const std::string work = test::temp_dir("html-browser");

  // Every page comes from a real CLI run, as a user would open it.
  auto html_of_run = [&](const std::vector<std::string>& args, const std::string& out, const char* file) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--quiet", "--out", out});
    const auto r = test::run_cli(full);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    return test::read_file(out + "/" + file);
  };

  SECTION("engine-mode run report: hit rate and KV usage, TTFT CDF, queue length") {
    const std::string html =
        html_of_run({"replay", "--workload", "multi-turn", "--requests", "400"}, work + "/run-engine", "report.html");
    const RenderStatus s = render(work, "engine", html);
    INFO("page errors: " << s.errors);
    CHECK(s.attrs.at("done") == "yes");
    CHECK(s.get("charts") == 3);
    CHECK(s.get("canvases") == 3);
    CHECK(s.get("drawn") == 3);
    CHECK(s.get("points") > 40);
    CHECK(s.get("errors") == 0);

    // Keep a screenshot beside the test binary for people (and the README).
    const std::string shot_dir = test_build_dir() + "/report_html_browser";
    fs::create_directories(shot_dir);
    const std::string page = work + "/engine.html", png = shot_dir + "/report.png";
    fs::remove(png);
    const std::string cmd = chromium_cmd(work, work + "/profile-shot", "--screenshot='" + png + "' --window-size=1280,2000", page) +
                            " > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    REQUIRE(fs::exists(png));
    CHECK(fs::file_size(png) > 20000);  // a blank 1280x2000 page compresses to a few kB
    std::cout << "report.html screenshot: " << png << std::endl;
  }

  SECTION("mixed-fleet run report: the fleet's charts and the groups' table") {
    const std::string html = html_of_run({"replay", "--workload", "multi-turn", "--requests", "300", "--rate", "20",
                                          "--replica-groups", "h100-sxm-80gb:x=2;a100-80gb:tp=2:x=1", "--router",
                                          "kv-aware"},
                                         work + "/run-mixed", "report.html");
    CHECK(html.find("<h2>Replica groups</h2>") != std::string::npos);
    const RenderStatus s = render(work, "mixed", html);
    INFO("page errors: " << s.errors);
    CHECK(s.attrs.at("done") == "yes");
    CHECK(s.get("charts") >= 3);
    CHECK(s.get("drawn") == s.get("charts"));
    CHECK(s.get("errors") == 0);
  }

  SECTION("cache-mode run report: one chart over requests, no latency charts") {
    const RenderStatus s = render(
        work, "cache",
        html_of_run({"replay", "--workload", "multi-turn", "--requests", "1000", "--mode", "cache", "--kv-tokens",
                     "100000"},
                    work + "/run-cache", "report.html"));
    INFO("page errors: " << s.errors);
    CHECK(s.get("charts") == 1);
    CHECK(s.get("drawn") == 1);
    CHECK(s.get("errors") == 0);
  }

  SECTION("compare page: hit rate vs capacity for every policy") {
    const std::string trace = work + "/rag.jsonl";
    REQUIRE(test::run_cli({"generate", "rag", "--requests", "500", "-o", trace}).rc == 0);
    const std::string html = html_of_run({"compare", trace, "--policies", "lru,lfu,arc,s3fifo", "--kv-blocks",
                                          "256,1024,4096,16384"},
                                         work + "/run-compare", "compare.html");
    const RenderStatus s = render(work, "compare", html);
    INFO("page errors: " << s.errors);
    CHECK(s.get("charts") == 1);
    CHECK(s.get("drawn") == 1);
    CHECK(s.get("points") == 16);
    CHECK(s.get("errors") == 0);
  }
  fs::remove_all(work);
}

TEST_CASE("report.html of a GPU run with --shadow draws the cost model against the measured steps",
          "[reports][html][browser][shadow]") {
  if (!fs::exists(kChromium)) PREFIXSIM_SKIP(kChromium << " is absent (apt-get install chromium)");
  const std::string work = test::temp_dir("html-browser-shadow");
  // No GPU here: the report a GPU replay would give (sample_report.h).
  const RenderStatus s = render(work, "shadow", render_report_html(test::sample_gpu_shadow_report()));
  INFO("page errors: " << s.errors);
  CHECK(s.attrs.at("done") == "yes");
  CHECK(s.get("charts") == 4);  // the run's three and the shadow's
  CHECK(s.get("drawn") == 4);
  CHECK(s.get("points") > 2000);
  CHECK(s.get("errors") == 0);
  fs::remove_all(work);
}

TEST_CASE("the page self-check reports script errors (the browser test can fail)", "[reports][html][browser]") {
  if (!fs::exists(kChromium)) PREFIXSIM_SKIP(kChromium << " is absent (apt-get install chromium)");
  const std::string work = test::temp_dir("html-browser-broken");
  std::string html = render_report_html(test::sample_run_report(true));
  // Break the drawing code: Chart.js throws on an unknown chart type.
  const std::string from = "type: 'line',", to = "type: 'no-such-chart-type',";
  const auto at = html.find(from);
  REQUIRE(at != std::string::npos);
  html.replace(at, from.size(), to);
  const RenderStatus s = render(work, "broken", html);
  CHECK(s.get("errors") >= 1);
  CHECK(s.get("drawn") < 3);
  fs::remove_all(work);
}
