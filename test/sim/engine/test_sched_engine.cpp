// One scheduler, two drivers: the time-driven engine and `sched`'s step
// script schedule the same tokens in the same order when arrivals fall on
// step boundaries. Each golden step script is replayed as a trace whose
// request arrives at (step - 1) x d, with an executor whose steps all take d
// and the goldens' fake model; every step the engine runs must be the
// golden's step of that index, with the same scheduled list.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "sim/engine/engine.h"
#include "sim/kv/kv_cache_manager.h"
#include "test/support.h"

using namespace prefixsim;
using nlohmann::json;

namespace {

constexpr TimeNs kD = 1'000'000;

class ConstantExecutor final : public Executor {
 public:
  TimeNs step_time(const Batch&) override { return kD; }
};

class VectorSource final : public RequestSource {
 public:
  explicit VectorSource(std::vector<Request> reqs) : reqs_(std::move(reqs)) {}
  bool next(Request& out) override {
    if (i_ == reqs_.size()) return false;
    out = std::move(reqs_[i_++]);
    return true;
  }
  std::string format() const override { return "golden-steps"; }
  std::string origin() const override { return "test"; }

 private:
  std::vector<Request> reqs_;
  size_t i_ = 0;
};

struct EngineStep {
  TimeNs start = 0;
  json scheduled = json::array();
};

class StepLog final : public EngineObserver {
 public:
  void on_step(const StepRecord& s) override {
    EngineStep e;
    e.start = s.start;
    for (const ScheduledEntry& x : s.plan->scheduled)
      e.scheduled.push_back(json::array({s.scheduler->request(x.slot).id, x.num_new_tokens}));
    steps.push_back(std::move(e));
  }
  std::vector<EngineStep> steps;
};

std::vector<json> lines_of(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(test::read_file(path));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("the engine and sched drive one scheduler: same tokens, same order, same stats on every golden case",
          "[sched][engine][golden]") {
  const auto cases = json::parse(test::read_file(test::data_path("golden/vllm-v1-scheduler/cases.json")));
  for (auto it = cases.begin(); it != cases.end(); ++it) {
    const std::string name = it.key();
    SECTION(name) {
      const auto script = lines_of(test::data_path("golden/vllm-v1-scheduler/" + name + ".steps.jsonl"));
      const auto expected = lines_of(test::data_path("golden/vllm-v1-scheduler/" + name + ".expected.jsonl"));
      const json& c = script.at(0);
      SchedulerConfig cfg;
      cfg.max_num_seqs = c["max_num_seqs"];
      cfg.max_num_batched_tokens = c["max_num_batched_tokens"];
      cfg.enable_chunked_prefill = c["enable_chunked_prefill"];
      cfg.long_prefill_token_threshold = c["long_prefill_token_threshold"];
      std::vector<Request> reqs;
      for (size_t step = 1; step < script.size(); ++step)
        for (const json& a : script[step]["arrive"]) {
          Request r;
          r.id = a["req"];
          r.arrival = static_cast<TimeNs>(step - 1) * kD;
          r.tokens = a["tokens"].get<std::vector<int32_t>>();
          r.prompt_len = static_cast<int64_t>(r.tokens.size());
          r.output_len = a["max_tokens"];
          reqs.push_back(std::move(r));
        }
      const size_t num_requests = reqs.size();

      BlockPool pool(c["num_blocks"].get<int32_t>(), true, make_policy("lru"));
      KvCacheManager kv(c["block_size"].get<int32_t>(), pool);
      ConstantExecutor exec;
      PromptSumTokens fake_model;
      Engine engine(cfg, kv, exec, &fake_model);
      StepLog log;
      engine.set_observer(&log);
      VectorSource src(std::move(reqs));
      const EngineResult r = engine.run(src);

      // The golden's steps that ran a batch, in order.
      std::vector<size_t> busy;
      for (size_t i = 0; i + 1 < expected.size(); ++i)
        if (!expected[i]["scheduled"].empty()) busy.push_back(i);
      REQUIRE(log.steps.size() == busy.size());
      for (size_t k = 0; k < busy.size(); ++k) {
        const json& want = expected[busy[k]];
        INFO(name << " engine step " << k + 1 << ", golden step " << want["step"]);
        CHECK(log.steps[k].start == (want["step"].get<TimeNs>() - 1) * kD);
        REQUIRE(log.steps[k].scheduled == want["scheduled"]);
      }
      const json& summary = expected.back();
      CHECK(r.arrived == num_requests);
      CHECK(r.finished == summary["finished"].get<uint64_t>());
      CHECK(r.preemptions == summary["preemptions"].get<uint64_t>());
      const json& pc = summary["prefix_cache"];
      CHECK(r.prefix_cache.requests == pc["requests"].get<uint64_t>());
      CHECK(r.prefix_cache.queries == pc["queries"].get<uint64_t>());
      CHECK(r.prefix_cache.hits == pc["hits"].get<uint64_t>());
      CHECK(r.prefix_cache.preempted_requests == pc["preempted_requests"].get<uint64_t>());
      CHECK(r.prefix_cache.preempted_queries == pc["preempted_queries"].get<uint64_t>());
      CHECK(r.prefix_cache.preempted_hits == pc["preempted_hits"].get<uint64_t>());
      CHECK(pool.num_free() == pool.num_usable());
    }
  }
}
