// Async scheduling (vLLM's AsyncScheduler + EngineCore.step_with_batch_queue
// with a queue of 2) on the scheduler goldens' step scripts and on hand-made
// cases: the same requests finish with the same tokens as the synchronous
// scheduler, a request's finish and free land one schedule() later, no
// step is scheduled past a request's last token, and placeholders stand in
// for tokens in flight (never more than one once an output is applied).
#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "sim/engine/engine.h"
#include "sim/engine/scheduler.h"
#include "sim/kv/kv_cache_manager.h"
#include "test/support.h"

using namespace prefixsim;
using nlohmann::json;

namespace {

struct Outcome {
  std::map<std::string, std::vector<int64_t>> finished_outputs;  // id -> [outputs at finish]
  std::map<std::string, size_t> finished_call;                   // id -> driver call that reported it
  std::map<std::string, size_t> first_admitted_call;
  size_t model_steps = 0;
  uint64_t preemptions = 0;
  int64_t final_free = -1, usable = -1;
  std::string invariant_error;
};

struct Script {
  SchedulerConfig cfg;
  int32_t num_blocks = 0, block_size = 0;
  std::vector<std::vector<Request>> arrivals;  // per step line
};

Script load_script(const std::string& name) {
  const std::string path = test::data_path("golden/vllm-v1-scheduler/" + name + ".steps.jsonl");
  const auto lines = test::parse_jsonl(test::read_file(path));
  Script s;
  const json& c = lines.at(0);
  s.cfg.max_num_seqs = c["max_num_seqs"];
  s.cfg.max_num_batched_tokens = c["max_num_batched_tokens"];
  s.cfg.enable_chunked_prefill = c["enable_chunked_prefill"];
  s.cfg.long_prefill_token_threshold = c["long_prefill_token_threshold"];
  s.num_blocks = c["num_blocks"];
  s.block_size = c["block_size"];
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<Request> step;
    for (const json& a : lines[i]["arrive"]) {
      Request r;
      r.id = a["req"];
      r.tokens = a["tokens"].get<std::vector<int32_t>>();
      r.prompt_len = static_cast<int64_t>(r.tokens.size());
      r.output_len = a["max_tokens"];
      step.push_back(std::move(r));
    }
    s.arrivals.push_back(std::move(step));
  }
  return s;
}

// Runs the script's arrivals, one driver call per step line and then empty
// calls until nothing is left. Sync: schedule, run, apply. Async: vLLM's
// step_with_batch_queue: schedule and queue; block on the oldest plan only
// when the queue is full (2) or nothing was scheduled.
Outcome drive(const Script& script, bool async) {
  SchedulerConfig cfg = script.cfg;
  cfg.async_scheduling = async;
  BlockPool pool(script.num_blocks, true, make_policy("lru"));
  KvCacheManager kv(script.block_size, pool);
  PromptSumTokens fake_model;
  Scheduler sched(cfg, kv, fake_model);
  Outcome o;
  o.usable = pool.num_usable();
  std::deque<StepPlan> queue;
  auto note_finished = [&](const StepPlan& plan, size_t call) {
    for (SlotId s : plan.finished) {
      const std::string& id = sched.request(s).id;
      o.finished_outputs[id].push_back(sched.num_outputs(s));
      o.finished_call[id] = call;
    }
    const std::string err = pool.check_invariants();
    if (!err.empty() && o.invariant_error.empty()) o.invariant_error = err;
  };
  const size_t max_calls = script.arrivals.size() * 4 + 100;
  for (size_t call = 0; call < max_calls; ++call) {
    if (call < script.arrivals.size())
      for (Request r : script.arrivals[call]) sched.add_request(std::move(r));
    else if (!sched.has_requests() && queue.empty())
      break;
    bool block = !queue.empty();
    if (sched.has_requests()) {
      const StepPlan& plan = sched.schedule();
      o.preemptions += plan.preempted.size();
      for (const Admission& a : plan.admitted) o.first_admitted_call.emplace(sched.request(a.slot).id, call);
      for (const ScheduledEntry& e : plan.scheduled) {
        // No request is scheduled past its last token, and at most this
        // step's and the previous step's tokens are in flight.
        INFO("call " << call << " request " << sched.request(e.slot).id);
        const int64_t pending = sched.num_placeholders(e.slot) - (async && e.samples ? 1 : 0);
        CHECK(sched.num_outputs(e.slot) + pending < std::max<int64_t>(sched.request(e.slot).output_len, 1));
        CHECK(sched.num_placeholders(e.slot) <= (async ? 2 : 0));
      }
      if (!plan.empty()) ++o.model_steps;
      if (!async || plan.empty()) {
        // Sync: the model ran the plan; async: nothing ran (only the stats
        // and the finished ids are reported).
        sched.update_from_output();
        note_finished(sched.plan(), call);
      } else {
        queue.emplace_back();
        sched.take_plan(queue.back());
        block = queue.size() == 2;  // vLLM blocks on the oldest only when the queue is full
      }
    }
    if (!block) continue;
    sched.update_from_output(queue.front());
    note_finished(queue.front(), call);
    queue.pop_front();
  }
  o.final_free = pool.num_free();
  return o;
}

}  // namespace

TEST_CASE("async scheduling on every golden step script: the same requests finish with the same outputs",
          "[sched][async][golden]") {
  const auto cases = json::parse(test::read_file(test::data_path("golden/vllm-v1-scheduler/cases.json")));
  for (auto it = cases.begin(); it != cases.end(); ++it) {
    const std::string name = it.key();
    SECTION(name) {
      const Script script = load_script(name);
      const Outcome sync = drive(script, false);
      const Outcome async = drive(script, true);
      CHECK(sync.invariant_error.empty());
      CHECK(async.invariant_error.empty());
      // The synchronous driver is the golden's own count.
      CHECK(sync.finished_outputs.size() == it.value()["summary"]["finished"].get<size_t>());
      CHECK(sync.preemptions == it.value()["summary"]["preemptions"].get<uint64_t>());
      // Same requests, each finished once, with max_tokens outputs.
      REQUIRE(async.finished_outputs.size() == sync.finished_outputs.size());
      for (const auto& [id, outs] : async.finished_outputs) {
        INFO(name << " request " << id);
        REQUIRE(outs.size() == 1);
        CHECK(outs == sync.finished_outputs.at(id));
      }
      // Every block is back in the pool.
      CHECK(async.final_free == async.usable);
      CHECK(sync.final_free == sync.usable);
      // Without preemption (no recompute) a finish is never reported before
      // the synchronous loop reports it: outputs land a schedule() later.
      if (sync.preemptions == 0 && async.preemptions == 0)
        for (const auto& [id, call] : async.finished_call) {
          INFO(name << " request " << id);
          CHECK(call >= sync.finished_call.at(id));
        }
    }
  }
}

TEST_CASE("async scheduling: a finish frees its request's seat one schedule() later (max_num_seqs 1)",
          "[sched][async]") {
  // A (4 tokens, 2 outputs) and B (4 tokens, 1 output) arrive together; only
  // one may run. Sync: A:4, A:1 (A finishes and is freed), then B is
  // admitted at the third call. Async: the second call already schedules A's
  // second decode on a placeholder; the third finds A's last token in
  // flight (no step is scheduled for it) and B still kept out by A; A's
  // finish is applied at the end of that call, so B is admitted at the fourth.
  Script s;
  s.cfg.max_num_seqs = 1;
  s.cfg.max_num_batched_tokens = 16;
  s.num_blocks = 9;
  s.block_size = 4;
  Request a, b;
  a.id = "A", a.tokens = {1, 2, 3, 4}, a.prompt_len = 4, a.output_len = 2;
  b.id = "B", b.tokens = {5, 6, 7, 8}, b.prompt_len = 4, b.output_len = 1;
  s.arrivals = {{a, b}};
  const Outcome sync = drive(s, false), async = drive(s, true);
  CHECK(sync.first_admitted_call.at("B") == 2);
  CHECK(async.first_admitted_call.at("B") == 3);
  CHECK(sync.finished_call.at("A") == 1);
  CHECK(async.finished_call.at("A") == 2);
  CHECK(sync.model_steps == 3);
  CHECK(async.model_steps == 3);  // no step past A's last token
}

TEST_CASE("async scheduling: placeholders stand for tokens in flight and block hashes wait for the token",
          "[sched][async]") {
  SchedulerConfig cfg;
  cfg.max_num_seqs = 4;
  cfg.max_num_batched_tokens = 64;
  cfg.async_scheduling = true;
  BlockPool pool(17, true, make_policy("lru"));
  KvCacheManager kv(4, pool);
  PromptSumTokens fake_model;
  Scheduler sched(cfg, kv, fake_model);
  Request r;
  r.id = "R", r.tokens = {1, 2, 3, 4, 5, 6, 7}, r.prompt_len = 7, r.output_len = 3;
  const SlotId s = sched.add_request(std::move(r));
  StepPlan k1, k2;
  sched.schedule();  // the whole prompt: samples its first token
  sched.take_plan(k1);
  CHECK(sched.num_placeholders(s) == 1);
  CHECK(sched.num_computed(s) == 7);
  const StepPlan& p2 = sched.schedule();  // the first token's decode, before the token is known
  REQUIRE(p2.scheduled.size() == 1);
  CHECK(p2.scheduled[0].num_new_tokens == 1);
  CHECK(p2.scheduled[0].num_computed_before == 7);
  CHECK(sched.num_placeholders(s) == 2);
  CHECK(sched.num_tokens(s) == 7);
  sched.take_plan(k2);
  // Block 1 (tokens 4..7) holds the unknown first output: not hashed yet.
  CHECK(sched.kv_seq(s).num_cached == 1);
  sched.update_from_output(k1);
  CHECK(sched.num_outputs(s) == 1);
  CHECK(sched.num_tokens(s) == 8);
  CHECK(sched.num_placeholders(s) == 1);
  // c - placeholders = 8 - 1 = 7 known computed tokens: block 1 not yet full of them.
  CHECK(sched.kv_seq(s).num_cached == 1);
  const StepPlan& p3 = sched.schedule();  // the third (last) token's step
  REQUIRE(p3.scheduled.size() == 1);
  StepPlan k3;
  sched.take_plan(k3);
  sched.update_from_output(k2);
  CHECK(sched.num_outputs(s) == 2);
  CHECK(sched.kv_seq(s).num_cached == 2);  // tokens 0..7 known and computed
  // The last token is in flight: nothing more is scheduled for R.
  CHECK(sched.schedule().empty());
  sched.update_from_output();
  sched.update_from_output(k3);
  REQUIRE(k3.finished.size() == 1);
  CHECK(sched.num_placeholders(s) == 0);
  CHECK(pool.num_free() == pool.num_usable());
}

namespace {
// Every step: `host` on the engine core's CPU, then `device` on the GPU.
class SplitExecutor final : public Executor {
 public:
  SplitExecutor(TimeNs host, TimeNs device) : host_(host), device_(device) {}
  TimeNs step_time(const Batch&) override { return host_ + device_; }
  StepCost step_cost(const Batch&) override { return {host_, device_}; }
  TimeNs request_latency(int64_t prompt_tokens) const override { return latency_ > 0 ? latency_ + prompt_tokens : 0; }
  TimeNs latency_ = 0;

 private:
  TimeNs host_, device_;
};

class Records final : public EngineObserver {
 public:
  void on_request_finished(const RequestRecord& r) override { recs.push_back(r); }
  std::vector<RequestRecord> recs;
};

std::vector<RequestRecord> run_one(bool async, TimeNs host, TimeNs device, TimeNs latency, uint64_t* steps) {
  SchedulerConfig cfg;
  cfg.async_scheduling = async;
  BlockPool pool(65, true, make_policy("lru"));
  KvCacheManager kv(16, pool);
  SplitExecutor exec(host, device);
  exec.latency_ = latency;
  Engine engine(cfg, kv, exec);
  Records log;
  engine.set_observer(&log);
  Request r;
  r.id = "r";
  r.tokens = std::vector<int32_t>(100, 7);
  r.prompt_len = 100;
  r.output_len = 11;
  std::vector<Request> v{r};
  struct Src final : RequestSource {
    std::vector<Request> v;
    size_t i = 0;
    bool next(Request& out) override { return i < v.size() ? (out = v[i++], true) : false; }
    std::string format() const override { return "test"; }
    std::string origin() const override { return "test"; }
  } src;
  src.v = v;
  const EngineResult res = engine.run(src);
  *steps = res.steps;
  CHECK(pool.num_free() == pool.num_usable());
  return log.recs;
}
}  // namespace

TEST_CASE("async engine: the host part of a step overlaps the previous step's device time", "[engine][async]") {
  const TimeNs H = 300, D = 1000;
  uint64_t sync_steps = 0, async_steps = 0;
  const auto s = run_one(false, H, D, 0, &sync_steps);
  const auto a = run_one(true, H, D, 0, &async_steps);
  REQUIRE(s.size() == 1);
  REQUIRE(a.size() == 1);
  CHECK(sync_steps == 11);
  CHECK(async_steps == 11);  // no wasted step past the last token
  // The first step pays its host time in both loops.
  CHECK(s[0].ttft() == H + D);
  CHECK(a[0].ttft() == H + D);
  // Sync: every step H + D. Async: the device runs back to back.
  CHECK(s[0].tpot() == Approx(static_cast<double>(H + D)));
  CHECK(a[0].tpot() == Approx(static_cast<double>(D)));
  CHECK(a[0].e2e() == H + 11 * D);
  // A host part longer than the device's paces the loop instead.
  const auto slow = run_one(true, 2000, 500, 0, &async_steps);
  CHECK(slow[0].tpot() == Approx(2000.0));
}

TEST_CASE("engine: the request latency (tokenization, IPC, detokenization) adds to TTFT and e2e, not TPOT",
          "[engine][async]") {
  uint64_t steps = 0;
  for (bool async : {false, true}) {
    const auto base = run_one(async, 300, 1000, 0, &steps);
    const auto lat = run_one(async, 300, 1000, 5000, &steps);
    CHECK(lat[0].ttft() == base[0].ttft() + 5000 + 100);  // 100 prompt tokens at 1 ns each
    CHECK(lat[0].e2e() == base[0].e2e() + 5000 + 100);
    CHECK(lat[0].tpot() == Approx(base[0].tpot()));
  }
}
