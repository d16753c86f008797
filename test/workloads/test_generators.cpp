// Workload generators: determinism, arrival statistics, skew, shared-prefix
// structure and mixtures.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/engine/request.h"
#include "test/support.h"
#include "traces/native_writer.h"
#include "workloads/distributions.h"
#include "workloads/workload.h"

using namespace prefixsim;

namespace {

std::string generate(const std::string& workload, const WorkloadOverrides& o) {
  auto src = make_workload(workload, o);
  std::ostringstream out;
  write_native_jsonl(*src, out);
  return out.str();
}

std::vector<Request> collect(const std::string& workload, const WorkloadOverrides& o) {
  auto src = make_workload(workload, o);
  std::vector<Request> out;
  Request r;
  while (src->next(r)) out.push_back(r);
  return out;
}

std::string write_yaml(const std::string& text) {
  const std::string path = test::temp_dir("yaml") + "/w.yaml";
  std::ofstream(path) << text;
  return path;
}

WorkloadOverrides with(int64_t n, uint64_t seed) {
  WorkloadOverrides o;
  o.requests = n;
  o.seed = seed;
  return o;
}

// Mean and coefficient of variation of the inter-arrival gaps, in seconds.
std::pair<double, double> gap_stats(const std::vector<Request>& rs) {
  double sum = 0, sq = 0;
  const double n = static_cast<double>(rs.size() - 1);
  for (size_t i = 1; i < rs.size(); ++i) {
    const double g = static_cast<double>(rs[i].arrival - rs[i - 1].arrival) * 1e-9;
    sum += g;
    sq += g * g;
  }
  const double mean = sum / n;
  return {mean, std::sqrt(sq / n - mean * mean) / mean};
}

}  // namespace

TEST_CASE("every preset gives byte-identical output for the same seed and differs for another", "[workloads]") {
  for (const std::string& preset : workloads::preset_names()) {
    INFO(preset);
    const std::string a = generate(preset, with(150, 7));
    CHECK(!a.empty());
    CHECK(a == generate(preset, with(150, 7)));
    CHECK(a != generate(preset, with(150, 8)));
  }
}

TEST_CASE("requests come in arrival order with the requested count and unique ids", "[workloads]") {
  for (const std::string& preset : workloads::preset_names()) {
    INFO(preset);
    const auto rs = collect(preset, with(300, 3));
    REQUIRE(rs.size() == 300);
    std::map<std::string, int> ids;
    for (size_t i = 0; i < rs.size(); ++i) {
      CHECK(rs[i].validate().empty());
      CHECK(rs[i].prompt_len == static_cast<int64_t>(rs[i].tokens.size()));
      CHECK(rs[i].output_len > 0);
      if (i) CHECK(rs[i].arrival >= rs[i - 1].arrival);
      ++ids[rs[i].id];
    }
    CHECK(ids.size() == rs.size());
  }
}

TEST_CASE("Poisson arrivals have the configured rate and a coefficient of variation of 1", "[workloads][arrival]") {
  WorkloadOverrides o = with(20000, 11);
  o.rate = 25;
  const auto [mean, cv] = gap_stats(collect("random", o));
  CHECK(mean == Approx(1.0 / 25).epsilon(0.03));
  CHECK(cv == Approx(1.0).epsilon(0.05));
}

TEST_CASE("Gamma arrivals are bursty with the configured coefficient of variation", "[workloads][arrival]") {
  const std::string path = write_yaml(
      "pattern: random\nrequests: 40000\nseed: 5\narrival: {process: gamma, rate: 8, cv: 3}\n"
      "params: {prompt_tokens: 32, output_tokens: 1}\n");
  const auto [mean, cv] = gap_stats(collect(path, {}));
  CHECK(mean == Approx(1.0 / 8).epsilon(0.06));
  CHECK(cv == Approx(3.0).epsilon(0.08));
}

TEST_CASE("fixed-rate arrivals are evenly spaced", "[workloads][arrival]") {
  const std::string path = write_yaml(
      "pattern: random\nrequests: 1000\narrival: {process: fixed, rate: 4}\nparams: {prompt_tokens: 32}\n");
  const auto rs = collect(path, {});
  for (size_t i = 1; i < rs.size(); ++i) CHECK(std::llabs(rs[i].arrival - rs[i - 1].arrival - 250'000'000) <= 1);
}

TEST_CASE("Zipf popularity follows 1/(i+1)^s", "[workloads][zipf]") {
  workloads::Zipf z(1000, 1.0);
  workloads::Rng rng(42);
  std::vector<int> count(1000, 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) ++count[z.sample(rng)];
  CHECK(count[0] / double(n) == Approx(z.probability(0)).epsilon(0.03));
  CHECK(count[0] / double(count[1]) == Approx(2.0).epsilon(0.06));
  CHECK(count[0] / double(count[9]) == Approx(10.0).epsilon(0.15));
}

TEST_CASE("lognormal lengths have the configured mean", "[workloads][dist]") {
  const auto d = workloads::Dist::lognormal(500, 0.5, 0, 1e9);
  workloads::Rng rng(9);
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) sum += d.sample(rng);
  CHECK(sum / n == Approx(500).epsilon(0.02));
}

TEST_CASE("single-shot presets share exactly their fixed prefix and nothing after it", "[workloads][prefix]") {
  const std::vector<std::pair<std::string, size_t>> cases = {
      {"chatbot", 512}, {"batch-summarization", 64}, {"rag", 256}};
  for (const auto& [preset, shared] : cases) {
    INFO(preset);
    const auto rs = collect(preset, with(200, 4));
    for (const Request& r : rs) {
      REQUIRE(r.tokens.size() > shared);
      CHECK(std::equal(r.tokens.begin(), r.tokens.begin() + static_cast<long>(shared), rs[0].tokens.begin()));
    }
    // The token right after the shared part differs between requests (unique
    // content), except where RAG retrieves the same document.
    std::map<int32_t, int> next;
    for (const Request& r : rs) ++next[r.tokens[shared]];
    if (preset != "rag") CHECK(next.size() >= rs.size() - 2);
    else CHECK(next.size() > 20);
  }
  const auto random = collect("random", with(200, 4));
  std::map<int32_t, int> first;
  for (const Request& r : random) ++first[r.tokens[0]];
  CHECK(first.size() >= random.size() - 2);
}

TEST_CASE("RAG documents follow the configured Zipf popularity", "[workloads][prefix]") {
  // One document per request right after a 256-token instruction: the
  // most popular document is retrieved P(0) of the time.
  const auto rs = collect("rag", with(4000, 6));
  std::map<int32_t, int> doc;
  for (const Request& r : rs) ++doc[r.tokens[256]];
  int top = 0;
  for (const auto& [tok, c] : doc) top = std::max(top, c);
  const workloads::Zipf z(20000, 0.95);
  CHECK(top / 4000.0 == Approx(z.probability(0)).epsilon(0.25));
}

TEST_CASE("multi-turn re-sends the whole history: each turn extends the previous prompt and output",
          "[workloads][prefix]") {
  const auto rs = collect("multi-turn", with(600, 2));
  std::map<std::string, const Request*> last;
  int follow_ups = 0;
  for (const Request& r : rs) {
    REQUIRE(!r.session.empty());
    REQUIRE(r.output_tokens.size() == static_cast<size_t>(r.output_len));
    auto it = last.find(r.session);
    if (it != last.end()) {
      const Request& p = *it->second;
      std::vector<int32_t> history = p.tokens;
      history.insert(history.end(), p.output_tokens.begin(), p.output_tokens.end());
      REQUIRE(r.tokens.size() > history.size());
      CHECK(std::equal(history.begin(), history.end(), r.tokens.begin()));
      CHECK(r.arrival > p.arrival);  // think time
      ++follow_ups;
    }
    last[r.session] = &r;
  }
  CHECK(follow_ups > 300);
}

TEST_CASE("a mixture draws components by weight and salts each tenant", "[workloads][mixture]") {
  const std::string path = write_yaml(
      "name: two-tenants\nseed: 3\nrequests: 4000\narrival: {process: poisson, rate: 50}\n"
      "mixture:\n"
      "  - {preset: chatbot, weight: 3, salt: tenant-a}\n"
      "  - {pattern: random, params: {prompt_tokens: 100}, weight: 1, salt: tenant-b}\n");
  const auto rs = collect(path, {});
  std::map<std::string, int> salts;
  for (const Request& r : rs) ++salts[r.extras.salt];
  REQUIRE(salts.size() == 2);
  CHECK(salts["tenant-a"] / 4000.0 == Approx(0.75).margin(0.025));
  for (const Request& r : rs)
    if (r.extras.salt == "tenant-b") CHECK(r.prompt_len == 100);
  // The salt reaches the native output.
  CHECK(generate(path, {}).find("\"salt\":\"tenant-a\"") != std::string::npos);
}

TEST_CASE("command-line overrides replace the workload's requests, rate and seed", "[workloads]") {
  WorkloadOverrides o = with(500, 1);
  o.rate = 100;
  const auto rs = collect("chatbot", o);
  REQUIRE(rs.size() == 500);
  const auto [mean, cv] = gap_stats(rs);
  CHECK(mean == Approx(0.01).epsilon(0.15));
  (void)cv;
}
