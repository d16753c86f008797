// One test per rule of the vLLM v1 scheduler specification
// (test/data/golden/vllm-v1-scheduler/README.md, "§n" = its sections), each on
// the smallest scenario that shows it. The numbers come from the README's
// worked examples where one fits.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "policies/lru.h"
#include "sim/kv/kv_cache_manager.h"
#include "sim/engine/scheduler.h"

using namespace prefixsim;

namespace {

using Named = std::vector<std::pair<std::string, int64_t>>;
using Ids = std::vector<std::string>;

// LRU that also records the lookup counter handed to on_request().
class RecordingLru final : public EvictionPolicy {
 public:
  explicit RecordingLru(std::vector<uint64_t>* seen) : seen_(seen) {}
  std::string name() const override { return "recording-lru"; }
  void reset(const BlockPool& p, int32_t n) override { lru_.reset(p, n); }
  void on_hit(BlockId b, bool was_free) override { lru_.on_hit(b, was_free); }
  BlockId pop_free() override { return lru_.pop_free(); }
  void on_free(BlockId b) override { lru_.on_free(b); }
  void on_request(uint64_t seq) override { seen_->push_back(seq); }
  bool is_free(BlockId b) const override { return lru_.is_free(b); }
  int32_t num_free() const override { return lru_.num_free(); }
  size_t bytes() const override { return lru_.bytes(); }

 private:
  LruPolicy lru_;
  std::vector<uint64_t>* seen_;
};

struct StepView {
  Named scheduled, admitted;
  Ids preempted, finished;
  PrefixCacheStats stats;
  int32_t num_free = 0;
};

class Sim {
 public:
  Sim(int32_t num_blocks, int32_t block_size, SchedulerConfig cfg)
      : pool(num_blocks, true, std::make_unique<RecordingLru>(&on_request_seen)),
        kv(block_size, pool),
        sched(cfg, kv, fake) {}

  // `hashed`: the prompt's chain comes hashed upstream (as a prefix-aware
  // router hands it on).
  SlotId add(const std::string& id, std::vector<int32_t> tokens, int64_t max_tokens, bool hashed = false) {
    Request r;
    r.id = id;
    r.prompt_len = static_cast<int64_t>(tokens.size());
    r.tokens = std::move(tokens);
    r.output_len = max_tokens;
    if (hashed) r.ensure_prompt_chain(kv.block_size());
    return sched.add_request(std::move(r));
  }

  StepView step() {
    StepView v;
    if (!sched.has_requests()) {
      v.num_free = pool.num_free();
      return v;
    }
    const StepPlan& p = sched.schedule();
    sched.update_from_output();
    for (const auto& e : p.scheduled) v.scheduled.emplace_back(name(e.slot), e.num_new_tokens);
    for (const auto& a : p.admitted) v.admitted.emplace_back(name(a.slot), a.hit_tokens);
    for (SlotId s : p.preempted) v.preempted.push_back(name(s));
    for (SlotId s : p.finished) v.finished.push_back(name(s));
    v.stats = p.prefix_stats;
    v.num_free = pool.num_free();
    REQUIRE(pool.check_invariants().empty());
    return v;
  }

  std::string name(SlotId s) const { return sched.request(s).id; }

  std::vector<uint64_t> on_request_seen;
  BlockPool pool;
  KvCacheManager kv;
  PromptSumTokens fake;
  Scheduler sched;
};

std::vector<int32_t> seq(int32_t first, int32_t last) {
  std::vector<int32_t> v;
  for (int32_t t = first; t <= last; ++t) v.push_back(t);
  return v;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

SchedulerConfig config(int64_t S, int64_t T) {
  SchedulerConfig c;
  c.max_num_seqs = S;
  c.max_num_batched_tokens = T;
  return c;
}

// README example 1 (tiny_hand): N=11, B=4, S=4, T=12.
Sim tiny_hand() { return Sim(11, 4, config(4, 12)); }

// README example 2 (tiny_multi_preempt): N=9, B=4, S=8, T=32; all five
// requests are admitted in step 1 and fill the pool exactly.
struct MultiPreempt {
  Sim sim{9, 4, config(8, 32)};
  MultiPreempt() {
    sim.add("E", seq(1, 16), 3);
    sim.add("A", seq(21, 24), 4);
    sim.add("B", seq(31, 34), 3);
    sim.add("C", seq(41, 44), 2);
    sim.add("D", seq(51, 54), 2);
  }
};

}  // namespace

TEST_CASE("running requests are scheduled before waiting ones, in running order (§3.1, §3.4)", "[sched][rules]") {
  Sim s = tiny_hand();
  s.add("A", cat(seq(1, 8), {11, 12}), 6);
  s.add("B", cat(seq(1, 8), {21, 22, 23}), 3);
  s.step();
  s.add("C", seq(100, 113), 8);
  const StepView v = s.step();
  CHECK(v.scheduled == Named{{"A", 1}, {"B", 1}, {"C", 10}});
  CHECK(v.admitted == Named{{"C", 0}});
}

TEST_CASE("the token budget cuts a prompt into chunks with chunked prefill (§3.3 step 7)", "[sched][rules]") {
  Sim s = tiny_hand();
  s.add("A", cat(seq(1, 8), {11, 12}), 6);
  s.add("B", cat(seq(1, 8), {21, 22, 23}), 3);
  const StepView v = s.step();
  // A takes 10 of 12; B (11 tokens, 8 hit) gets the 2 left.
  CHECK(v.scheduled == Named{{"A", 10}, {"B", 2}});
  CHECK(v.num_free == 6);
}

TEST_CASE("blocks hashed at allocation are hit by a request admitted later in the same step (§5.3)",
          "[sched][rules]") {
  Sim s = tiny_hand();
  s.add("A", cat(seq(1, 8), {11, 12}), 6);
  s.add("B", cat(seq(1, 8), {21, 22, 23}), 3);
  const StepView v = s.step();
  CHECK(v.admitted == Named{{"A", 0}, {"B", 8}});
}

TEST_CASE("max_num_seqs stops admission before the prefix lookup, so nothing is counted (§3.3 step 1)",
          "[sched][rules]") {
  Sim s(64, 4, config(1, 100));
  s.add("X", seq(1, 4), 3);
  s.add("Y", seq(11, 14), 1);
  StepView v = s.step();
  CHECK(v.scheduled == Named{{"X", 4}});
  CHECK(v.stats.requests == 1);  // X only: Y was never looked up
  v = s.step();
  CHECK(v.scheduled == Named{{"X", 1}});
  CHECK(v.stats.requests == 0);
  v = s.step();  // X finishes (3 tokens); Y still waits: S was reached before the finish
  CHECK(v.finished == Ids{"X"});
  v = s.step();
  CHECK(v.admitted == Named{{"Y", 0}});
}

TEST_CASE("long_prefill_token_threshold caps running and waiting chunks before the budget (§9)",
          "[sched][rules]") {
  SchedulerConfig c = config(8, 100);
  c.long_prefill_token_threshold = 3;
  Sim s(64, 4, c);
  s.add("A", seq(1, 10), 1);
  s.add("B", seq(21, 25), 1);
  CHECK(s.step().scheduled == Named{{"A", 3}, {"B", 3}});
  const StepView v = s.step();
  CHECK(v.scheduled == Named{{"A", 3}, {"B", 2}});
  CHECK(v.finished == Ids{"B"});
  CHECK(s.step().scheduled == Named{{"A", 3}});
  const StepView last = s.step();
  CHECK(last.scheduled == Named{{"A", 1}});
  CHECK(last.finished == Ids{"A"});
}

TEST_CASE("without chunked prefill a waiting request over the remaining budget stops admission after its lookup (§9)",
          "[sched][rules]") {
  SchedulerConfig c = config(8, 8);
  c.enable_chunked_prefill = false;
  Sim s(64, 4, c);
  s.add("G", seq(1, 6), 3);
  s.add("H", seq(11, 16), 1);
  StepView v = s.step();
  CHECK(v.scheduled == Named{{"G", 6}});  // H needs 6 > 2 left: not chunked, stop
  CHECK(v.stats.requests == 2);           // ...but its lookup was counted
  v = s.step();
  CHECK(v.scheduled == Named{{"G", 1}, {"H", 6}});
}

TEST_CASE("whole-prompt admission refuses a prompt that does not fit even when its chunk would (§5.2)",
          "[sched][rules]") {
  // README example 3 (tiny_admission): N=11, B=4, S=3, T=8.
  for (bool reserve_full : {true, false}) {
    SchedulerConfig c = config(3, 8);
    c.full_sequence_must_fit = reserve_full;
    Sim s(11, 4, c);
    s.add("G", seq(1, 6), 12);
    CHECK(s.step().num_free == 8);
    s.add("F", seq(100, 133), 6);  // 34 tokens = 9 blocks > 8 free; a 7-token chunk needs 2
    s.add("H", {7, 8, 9}, 8);
    const StepView v = s.step();
    if (reserve_full) {
      CHECK(v.scheduled == Named{{"G", 1}});
      CHECK(v.stats.requests == 1);  // F was looked up; H behind it was not
    } else {
      // scheduler_reserve_full_isl=false: only the chunk has to fit.
      CHECK(v.scheduled == Named{{"G", 1}, {"F", 7}});
    }
  }
}

TEST_CASE("head-of-line blocking: a refused head keeps smaller requests behind it waiting (§3.3 step 9)",
          "[sched][rules]") {
  Sim s(11, 4, config(3, 8));
  s.add("G", seq(1, 6), 12);
  s.step();
  s.add("F", seq(100, 133), 6);
  s.add("H", {7, 8, 9}, 8);  // 1 block would fit, but FCFS never looks past the head
  for (int i = 0; i < 5; ++i) {
    const StepView v = s.step();
    CHECK(v.scheduled == Named{{"G", 1}});
    CHECK(v.admitted.empty());
  }
  CHECK(s.sched.num_waiting() == 2);
}

TEST_CASE("a prompt is hashed at its first lookup, so requests queued behind the head hold no hashes",
          "[sched][rules]") {
  Sim s(11, 4, config(3, 8));
  const SlotId g = s.add("G", seq(1, 6), 12);
  CHECK_FALSE(s.sched.hashed(g));
  s.step();
  CHECK(s.sched.hashed(g));
  CHECK(s.sched.kv_seq(g).blocks.size() == 2);
  const SlotId f = s.add("F", seq(100, 133), 6);
  const SlotId h = s.add("H", {7, 8, 9}, 8);
  s.step();  // F is looked up and refused; H is never looked up
  CHECK(s.sched.hashed(f));
  CHECK_FALSE(s.sched.hashed(h));
  CHECK(s.sched.num_waiting() == 2);
}

TEST_CASE("a prompt chain hashed upstream is kept for the first lookup behind a short queue and gives the same steps",
          "[sched][rules]") {
  // Prompts that end mid-block (the chain's partial tail is taken too), a
  // shared prefix (hits) and preemptions (README example 2's pool).
  const auto fill = [](Sim& s, bool hashed) {
    s.add("E", seq(1, 14), 3, hashed);
    s.add("A", cat(seq(1, 8), seq(21, 23)), 4, hashed);
    s.add("B", seq(31, 37), 3, hashed);
    s.add("C", cat(seq(1, 4), seq(41, 42)), 2, hashed);
    s.add("D", seq(51, 54), 2, hashed);
  };
  Sim plain{9, 4, config(8, 32)}, upstream{9, 4, config(8, 32)};
  fill(plain, false);
  fill(upstream, true);
  for (SlotId q = 0; q < 5; ++q) CHECK(upstream.sched.request(q).has_prompt_chain(4));  // kept until looked up
  for (int step = 0; step < 12; ++step) {
    INFO("step " << step);
    const StepView a = plain.step(), b = upstream.step();
    CHECK(a.scheduled == b.scheduled);
    CHECK(a.admitted == b.admitted);
    CHECK(a.preempted == b.preempted);
    CHECK(a.finished == b.finished);
    CHECK(a.stats.hits == b.stats.hits);
    CHECK(a.num_free == b.num_free);
  }
  // Behind a deep queue the chain is dropped: waiting requests hold no hashes.
  Sim deep{64, 4, config(1, 4)};
  for (int i = 0; i < 64; ++i) deep.add("w" + std::to_string(i), seq(1, 8), 1, true);
  const SlotId last = deep.add("last", seq(1, 8), 1, true);
  CHECK(deep.sched.request(0).has_prompt_chain(4));
  CHECK_FALSE(deep.sched.request(last).has_prompt_chain(4));
}

TEST_CASE("refused lookups are counted again every step; lookups of preempted requests are counted apart (§8)",
          "[sched][rules]") {
  SECTION("a refused head is looked up once per step") {
    Sim s(11, 4, config(3, 8));
    s.add("G", seq(1, 6), 12);
    s.step();
    s.add("F", seq(100, 133), 6);
    for (int i = 0; i < 3; ++i) {
      const StepView v = s.step();
      CHECK(v.stats.requests == 1);
      CHECK(v.stats.queries == 34);
      CHECK(v.stats.preempted_requests == 0);
    }
  }
  SECTION("a resumed request counts in preempted_*, with its outputs in the query") {
    MultiPreempt m;
    m.sim.step();
    m.sim.step();  // preempts D, C, B
    const StepView v = m.sim.step();
    // B (4 prompt + 1 output) hits its own cached block, then is refused.
    CHECK(v.stats.requests == 0);
    CHECK(v.stats.preempted_requests == 1);
    CHECK(v.stats.preempted_queries == 5);
    CHECK(v.stats.preempted_hits == 4);
    CHECK(v.admitted.empty());
  }
}

TEST_CASE("preemption takes the tail of running, and victims go to the head of waiting (§3.1, §3.2)",
          "[sched][rules]") {
  MultiPreempt m;
  CHECK(m.sim.step().num_free == 0);
  const StepView v = m.sim.step();
  CHECK(v.scheduled == Named{{"E", 1}, {"A", 1}});
  CHECK(v.preempted == Ids{"D", "C", "B"});
  CHECK(m.sim.sched.total_preemptions() == 3);
  m.sim.step();  // B refused
  const StepView resume = m.sim.step();
  // Prepended one by one: B (preempted last) is first, then C, then D.
  CHECK(resume.admitted == Named{{"B", 4}, {"C", 0}, {"D", 0}});
  CHECK(resume.scheduled == Named{{"A", 1}, {"B", 1}, {"C", 5}, {"D", 5}});
}

TEST_CASE("a request that is the tail of running preempts itself and ends phase 1 (§3.1)", "[sched][rules]") {
  MultiPreempt m;
  m.sim.step();
  const StepView v = m.sim.step();
  // B needs a block, the tail of running is B itself: it goes, last in the list.
  REQUIRE(!v.preempted.empty());
  CHECK(v.preempted.back() == "B");
  for (const auto& [id, n] : v.scheduled) CHECK(id != "B");
  CHECK(m.sim.sched.status(2) == SeqStatus::kPreempted);
}

TEST_CASE("no request is admitted in a step that preempted, even with budget left (§3.3, L545)",
          "[sched][rules]") {
  MultiPreempt m;
  m.sim.step();
  m.sim.add("X", {90, 91}, 1);  // arrives with budget to spare
  const StepView v = m.sim.step();
  CHECK(!v.preempted.empty());
  CHECK(v.admitted.empty());
  CHECK(v.stats.requests + v.stats.preempted_requests == 0);
}

TEST_CASE("a request samples its first token in the step that completes its prompt; partial chunks sample nothing (§6)",
          "[sched][rules]") {
  Sim s(64, 4, config(8, 4));
  const SlotId a = s.add("A", seq(1, 10), 2);
  std::vector<bool> samples;
  std::vector<int64_t> outputs;
  for (int i = 0; i < 4; ++i) {
    const StepPlan& p = s.sched.schedule();
    REQUIRE(p.scheduled.size() == 1);
    samples.push_back(p.scheduled[0].samples);
    s.sched.update_from_output();
    outputs.push_back(s.sched.num_outputs(a));
  }
  CHECK(samples == std::vector<bool>{false, false, true, true});  // chunks 4, 4, 2, then a decode
  CHECK(outputs == std::vector<int64_t>{0, 0, 1, 2});
}

TEST_CASE("finished requests free their blocks in update_from_output, last block first, in scheduled order (§7)",
          "[sched][rules]") {
  Sim s(5, 4, config(8, 64));  // 4 usable blocks
  s.add("A", seq(1, 8), 1);
  s.add("B", seq(11, 18), 1);
  const StepView v = s.step();
  CHECK(v.finished == Ids{"A", "B"});
  CHECK(v.num_free == 4);  // freed before the next schedule()
  // A held [1,2] and B [3,4]; the free queue is now 2,1,4,3.
  const SlotId c = s.add("C", seq(100, 115), 1);
  s.sched.schedule();
  CHECK(s.sched.kv_seq(c).blocks == std::vector<BlockId>{2, 1, 4, 3});
}

TEST_CASE("a block-aligned prompt that is fully cached recomputes its last block (§3.3 step 3)", "[sched][rules]") {
  Sim s(64, 4, config(8, 64));
  s.add("X", seq(1, 8), 1);
  s.step();
  s.add("Y", seq(1, 8), 1);
  const StepView v = s.step();
  CHECK(v.admitted == Named{{"Y", 4}});
  CHECK(v.scheduled == Named{{"Y", 4}});
}

TEST_CASE("output tokens extend the hash chain, so a later prompt can hit another request's outputs (§1)",
          "[sched][rules]") {
  Sim s(64, 4, config(8, 64));
  s.add("X", seq(1, 7), 3);
  while (s.sched.has_requests()) s.step();
  // The fake model's outputs of X: (sum + k) % 50000 + 1, sum(1..7) = 28.
  const std::vector<int32_t> follow_up = cat(seq(1, 7), {29, 30, 99});
  s.add("Y", follow_up, 1);
  const StepView v = s.step();
  CHECK(v.admitted == Named{{"Y", 8}});  // block 1 = 5,6,7 + X's first output
}

TEST_CASE("a resumed request's lookup covers its outputs and hits its own cached blocks (§3.3 step 3, §10.5)",
          "[sched][rules]") {
  Sim s = tiny_hand();
  s.add("A", cat(seq(1, 8), {11, 12}), 6);
  s.add("B", cat(seq(1, 8), {21, 22, 23}), 3);
  std::vector<StepView> steps;
  steps.push_back(s.step());
  s.add("C", seq(100, 113), 8);
  steps.push_back(s.step());
  steps.push_back(s.step());
  s.add("D", cat(seq(1, 8), {31}), 2);
  for (int i = 0; i < 4; ++i) steps.push_back(s.step());
  s.add("E", seq(200, 216), 3);
  for (int i = 0; i < 6; ++i) steps.push_back(s.step());
  CHECK(steps[9].preempted == Ids{"E"});                // step 10
  CHECK(steps[10].admitted == Named{{"E", 16}});        // step 11: 17 + 1 tokens, 4 own blocks hit
  CHECK(steps[10].stats.preempted_queries == 18);
  CHECK(steps[10].scheduled == Named{{"E", 2}});
  CHECK(steps[3].stats.requests == 1);                  // step 4: D refused, counted
  CHECK(steps[3].admitted.empty());
  CHECK(steps[4].admitted == Named{{"D", 8}});          // step 5: counted again, admitted
}

TEST_CASE("has_requests stays true for the one step after the last finish (§2)", "[sched][rules]") {
  Sim s(64, 4, config(8, 64));
  s.add("X", seq(1, 4), 1);
  CHECK(s.sched.has_requests());
  CHECK(s.step().finished == Ids{"X"});
  CHECK(s.sched.has_requests());  // finished_req_ids not yet reported
  CHECK(s.step().scheduled.empty());
  CHECK(!s.sched.has_requests());
  CHECK(s.sched.num_live() == 0);  // its state is released
}

TEST_CASE("the policy's on_request sees one increasing counter per lookup, refused ones included", "[sched][rules]") {
  Sim s(11, 4, config(3, 8));
  s.add("G", seq(1, 6), 3);
  s.step();
  s.add("F", seq(100, 133), 6);  // refused while G holds blocks
  while (s.sched.has_requests()) s.step();
  REQUIRE(s.on_request_seen.size() == s.sched.lookups());
  REQUIRE(s.on_request_seen.size() >= 3);
  for (size_t i = 0; i < s.on_request_seen.size(); ++i) CHECK(s.on_request_seen[i] == i);
}

TEST_CASE("the batch carries each request's new tokens, computed context and block table", "[sched][rules]") {
  Sim s = tiny_hand();
  s.add("A", cat(seq(1, 8), {11, 12}), 6);
  s.add("B", cat(seq(1, 8), {21, 22, 23}), 3);
  const StepPlan& p = s.sched.schedule();
  REQUIRE(p.batch.seqs.size() == 2);
  CHECK(p.batch.seqs[0].num_new_tokens == 10);
  CHECK(p.batch.seqs[0].num_computed_tokens == 0);
  CHECK(p.batch.seqs[0].block_table.size() == 3);
  CHECK(p.batch.seqs[1].num_new_tokens == 2);
  CHECK(p.batch.seqs[1].num_computed_tokens == 8);  // the same-step hit
  REQUIRE(p.batch.seqs[1].block_table.size() == 3);
  CHECK(p.batch.seqs[1].block_table[0] == p.batch.seqs[0].block_table[0]);  // shared prefix blocks
  CHECK(p.batch.seqs[1].block_table[1] == p.batch.seqs[0].block_table[1]);
  CHECK(p.batch.total_new_tokens() == 12);
  CHECK(p.prefill_tokens == 12);
  CHECK(p.decode_tokens == 0);
  s.sched.update_from_output();
  const StepPlan& q = s.sched.schedule();
  CHECK(q.decode_tokens == 1);   // A decodes
  CHECK(q.prefill_tokens == 1);  // B computes the last token of its prompt
}
