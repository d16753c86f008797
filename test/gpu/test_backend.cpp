// The real backend mode's check (gpu/backend.h) on hand-made steps: a
// correct prefix hit passes bit-exactly, and each way a block manager can
// hand a request KV it did not compute -- a block shared between different
// prompts, a page swapped under a running request, a slot written into the
// wrong block -- fails it, naming the request and the step.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "gpu/backend.h"
#include "gpu/model_shape.h"
#include "policies/registry.h"
#include "sim/cost/calibration_samples.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/kv_tier.h"
#include "sim/engine/request.h"

using namespace prefixsim;
using namespace prefixsim::gpu;

namespace test_backend {

// Prices every step at 1 ms; counts the calls.
class FixedExecutor final : public Executor {
 public:
  TimeNs step_time(const Batch&) override {
    ++calls;
    return 1'000'000;
  }
  int calls = 0;
};

Request prompt(const std::string& id, std::vector<int32_t> tokens, int64_t outputs = 4) {
  Request r;
  r.id = id;
  r.prompt_len = static_cast<int64_t>(tokens.size());
  r.tokens = std::move(tokens);
  r.output_len = outputs;
  return r;
}

std::vector<int32_t> iota_tokens(int n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

struct Step {
  const Request* r;
  int64_t computed, fresh;
  std::vector<BlockId> table;
};

// Runs the steps in order through one replica's backend executor (a pool of
// 16 blocks of 16 tokens), then the check.
// One replica's backend over a pool of 16 blocks of 16 tokens.
struct Rig {
  explicit Rig(int64_t check = 8) : pool(16, true, make_policy("lru")) {
    BackendConfig cfg;
    cfg.shape = *find_model_shape("tiny");
    cfg.check_requests = check;
    backend = std::make_unique<Backend>(cfg, make_cpu_runner);
    exec = backend->wrap(modeled, pool, 16, 0);
  }
  void step(const std::vector<Step>& seqs) {
    Batch b;
    for (const Step& s : seqs) {
      b.seqs.push_back({s.fresh, s.computed, s.table});
      b.origins.push_back({s.r, tokens.prepare(*s.r)});
    }
    CHECK(exec->step_time(b) == 1'000'000);  // the CPU backend keeps the modeled time
  }
  BlockPool pool;
  FixedExecutor modeled;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Executor> exec;
  RequestOutputTokens tokens;
};

BackendCheckResult run(const std::vector<std::vector<Step>>& steps, int64_t check = 8) {
  Rig rig(check);
  for (const auto& step : steps) rig.step(step);
  CHECK(rig.modeled.calls == static_cast<int>(steps.size()));
  return rig.backend->check();
}

TEST_CASE("A prefix hit on blocks another request computed passes the backend check bit-exactly", "[gpu][backend]") {
  // A: 40 tokens in blocks 1, 2, 3. B: A's first 32 tokens (blocks 1, 2 hit)
  // and 8 of its own in block 4, then two decode steps.
  std::vector<int32_t> tb = iota_tokens(32, 100);
  for (int i = 0; i < 8; ++i) tb.push_back(900 + i);
  const Request a = prompt("A", iota_tokens(40, 100)), b = prompt("B", tb);
  const BackendCheckResult r =
      run({{{&a, 0, 40, {1, 2, 3}}}, {{&b, 32, 8, {1, 2, 4}}}, {{&b, 40, 1, {1, 2, 4}}}, {{&b, 41, 1, {1, 2, 4}}}});
  CHECK(r.failure.empty());
  CHECK(r.requests == 2);
  CHECK(r.rows == 4);
  CHECK(r.max_rel_error == 0.0);
}

TEST_CASE("A block shared between prompts that differ fails the backend check, naming the request and step",
          "[gpu][backend]") {
  // C's first 16 tokens differ from A's, but C is handed A's block 1 as a hit.
  std::vector<int32_t> tc = iota_tokens(40, 100);
  tc[3] = 7;
  const Request a = prompt("A", iota_tokens(40, 100)), c = prompt("C", tc);
  const BackendCheckResult r = run({{{&a, 0, 40, {1, 2, 3}}}, {{&c, 16, 24, {1, 5, 6}}}});
  REQUIRE_FALSE(r.failure.empty());
  CHECK(r.failure.find("request C") != std::string::npos);
  CHECK(r.failure.find("step 2") != std::string::npos);
  CHECK(r.max_rel_error > 1e-2);
}

TEST_CASE("A page swapped under a running request fails the backend check", "[gpu][backend]") {
  // D's prefill fills blocks 1, 2 (20 tokens); its decode step reads block 7
  // in place of block 1 (never written: zeros).
  const Request d = prompt("D", iota_tokens(20, 5));
  const BackendCheckResult r = run({{{&d, 0, 20, {1, 2}}}, {{&d, 20, 1, {7, 2}}}});
  REQUIRE_FALSE(r.failure.empty());
  CHECK(r.failure.find("position 20") != std::string::npos);
}

TEST_CASE("KV written into a block the next step does not read fails the backend check", "[gpu][backend]") {
  // E's second chunk writes positions 16..31 into block 3, but its next step
  // reads them from block 2: the slot mapping and the block table disagree.
  const Request e = prompt("E", iota_tokens(32, 50));
  const BackendCheckResult r =
      run({{{&e, 0, 16, {1, 2}}}, {{&e, 16, 16, {1, 3}}}, {{&e, 32, 1, {1, 2, 4}}}});
  REQUIRE_FALSE(r.failure.empty());
  CHECK(r.failure.find("request E") != std::string::npos);
  CHECK(r.failure.find("step 3") != std::string::npos);
}

TEST_CASE("The backend check samples the N requests with the smallest keys, whatever the order they run in",
          "[gpu][backend]") {
  std::vector<Request> reqs;
  for (int i = 0; i < 12; ++i) reqs.push_back(prompt("R" + std::to_string(i), iota_tokens(8, 1000 * i)));
  auto sampled = [&](bool reverse) {
    std::vector<std::vector<Step>> steps;
    for (int i = 0; i < 12; ++i) {
      const int k = reverse ? 11 - i : i;
      steps.push_back({{&reqs[static_cast<size_t>(k)], 0, 8, {static_cast<BlockId>(1 + k)}}});
    }
    return run(steps, 3);
  };
  const BackendCheckResult fwd = sampled(false), rev = sampled(true);
  CHECK(fwd.failure.empty());
  CHECK(fwd.requests == 3);
  CHECK(rev.requests == 3);
  CHECK(fwd.ids == rev.ids);
  // The three smallest keys are not simply the first three to run.
  CHECK(fwd.ids != std::vector<std::string>{"R0", "R1", "R2"});
}

TEST_CASE("A batch without sequence origins is refused by the backend", "[gpu][backend]") {
  Rig rig;
  Batch b;
  const std::vector<BlockId> t{1};
  b.seqs.push_back({4, 0, t});
  CHECK_THROWS_AS(rig.exec->step_time(b), InternalError);
}

// A tier of 8 blocks, under LRU.
std::unique_ptr<KvTier> small_tier(const std::string& name = "cpu") {
  KvTierConfig c;
  c.name = name;
  c.capacity_blocks = 8;
  c.bytes_per_block = 1;
  return std::make_unique<KvTier>(c, make_policy("lru"));
}

// `block` (which a step computed) cached under h in the pool,
// so the backend knows where h's KV is, then stored to `tier`.
void cache_and_store(Rig& rig, KvTier& tier, BlockId block, const BlockHash& h) {
  CachedBlockInfo info;
  info.hash = h;
  rig.pool.cache(block, info);
  rig.backend->on_tier_stored(tier, h, nullptr, 0);
}

TEST_CASE("A block stored to a KV tier and loaded into another GPU block carries its KV: the check passes",
          "[gpu][backend][tiers]") {
  Rig rig;
  rig.backend->listen_to_pools();
  const auto tier = small_tier();
  // A computes 20 tokens in two blocks; the first (its first 16 tokens) is
  // cached under H, which the GPU pool tells the backend, and stored to the tier.
  std::vector<BlockId> got;
  rig.pool.allocate(2, got);
  const Request a = prompt("A", iota_tokens(20, 300));
  rig.step({{&a, 0, 20, got}});
  const BlockHash h{0x1234, 0x5678};
  cache_and_store(rig, *tier, got[0], h);
  // B shares A's first 16 tokens: loaded from the tier into a fresh block,
  // then B computes the rest over it.
  const BlockId fresh = 9;
  rig.backend->on_tier_loaded(*tier, h, fresh, 0);
  std::vector<int32_t> tb = iota_tokens(16, 300);
  for (int i = 0; i < 10; ++i) tb.push_back(700 + i);
  const Request b = prompt("B", tb);
  rig.step({{&b, 16, 10, {fresh, 10}}});
  const BackendCheckResult r = rig.backend->check();
  CHECK(r.failure.empty());
  CHECK(r.requests == 2);
  CHECK(r.max_rel_error == 0.0);
  CHECK(rig.backend->stats().tier_loads == 1);
  CHECK(rig.backend->stats().tier_missing == 0);
}

TEST_CASE("A block loaded from a KV tier that was never given it fails the backend check", "[gpu][backend][tiers]") {
  Rig rig;
  rig.backend->listen_to_pools();
  const auto tier = small_tier("ssd");
  rig.backend->on_tier_loaded(*tier, BlockHash{1, 2}, 4, 0);
  const Request d = prompt("D", iota_tokens(24, 11));
  rig.step({{&d, 16, 8, {4, 5}}});
  const BackendCheckResult r = rig.backend->check();
  REQUIRE_FALSE(r.failure.empty());
  CHECK(r.failure.find("tier ssd") != std::string::npos);
  CHECK(r.failure.find("never given") != std::string::npos);
  CHECK(rig.backend->stats().tier_missing == 1);
}

TEST_CASE("A tier's eviction drops its copy: loading the block afterwards fails the check", "[gpu][backend][tiers]") {
  Rig rig;
  rig.backend->listen_to_pools();
  const auto tier = small_tier();
  std::vector<BlockId> got;
  rig.pool.allocate(1, got);
  const Request a = prompt("A", iota_tokens(16, 40));
  rig.step({{&a, 0, 16, got}});
  const BlockHash h{7, 7};
  cache_and_store(rig, *tier, got[0], h);
  rig.backend->on_tier_evicted(*tier, h);
  rig.backend->on_tier_loaded(*tier, h, 12, 0);
  CHECK(rig.backend->stats().tier_missing == 1);
  CHECK_FALSE(rig.backend->check().failure.empty());
}


// The CPU runner behind a face that says each forward took 2 ms + 0.5 ms per
// new token: a GPU runner's measured time, made up and exact.
class MeasuringRunner final : public ModelRunner {
 public:
  explicit MeasuringRunner(std::unique_ptr<ModelRunner> inner) : inner_(std::move(inner)) {}
  double forward(const PagedBatch& pb, const std::vector<uint64_t>& tags, uint64_t input_seed,
                 const std::vector<int64_t>& rows, std::vector<float>& out) override {
    inner_->forward(pb, tags, input_seed, rows, out);
    return 2.0 + 0.5 * static_cast<double>(pb.num_tokens());
  }
  void read_block(int64_t b, std::vector<float>& out) override { inner_->read_block(b, out); }
  void write_block(int64_t b, const std::vector<float>& in) override { inner_->write_block(b, in); }

 private:
  std::unique_ptr<ModelRunner> inner_;
};

// Prices a step at 0.3 ms of host time and 1 ms + 0.1 ms per new token on the device.
class SplitExecutor final : public Executor {
 public:
  TimeNs step_time(const Batch& b) override {
    const StepCost c = step_cost(b);
    return c.host + c.device;
  }
  StepCost step_cost(const Batch& b) override { return {300'000, 1'000'000 + 100'000 * b.total_new_tokens()}; }
};

// Replica `replica`'s backend with shadow on, over a MeasuringRunner and a
// pool of 16 blocks of 16 tokens, priced by a SplitExecutor.
struct MeasuredRig {
  static BackendConfig shadowed(BackendConfig cfg) {
    cfg.shadow = true;
    return cfg;
  }
  MeasuredRig(const BackendConfig& cfg, uint32_t replica)
      : pool(16, true, make_policy("lru")),
        backend(shadowed(cfg),
                [](const ModelShape& s, int64_t blocks, int32_t bs, uint64_t seed) -> std::unique_ptr<ModelRunner> {
                  return std::make_unique<MeasuringRunner>(make_cpu_runner(s, blocks, bs, seed));
                }),
        exec(backend.wrap(modeled, pool, 16, replica)) {}
  // Runs one step (once) and returns its cost.
  StepCost step(const std::vector<Step>& seqs) {
    Batch b;
    for (const Step& s : seqs) {
      b.seqs.push_back({s.fresh, s.computed, s.table});
      b.origins.push_back({s.r, tokens.prepare(*s.r)});
    }
    return exec->step_cost(b);
  }
  BlockPool pool;
  SplitExecutor modeled;
  Backend backend;
  std::unique_ptr<Executor> exec;
  RequestOutputTokens tokens;
};

TEST_CASE("With --shadow each step keeps the cost model's device time beside the measured one, and only the "
          "measured one drives the clock when asked",
          "[gpu][backend][shadow]") {
  for (const bool measured_clock : {true, false}) {
    INFO("measured clock: " << measured_clock);
    BackendConfig cfg;
    cfg.shape = *find_model_shape("tiny");
    cfg.measured_time = measured_clock;
    MeasuredRig rig(cfg, 3);
    const Backend& backend = rig.backend;
    const Request a = prompt("A", iota_tokens(20, 7));
    // A prefill of 20 tokens, then two decode steps.
    const std::vector<Step> steps = {{&a, 0, 20, {1, 2}}, {&a, 20, 1, {1, 2}}, {&a, 21, 1, {1, 2}}};
    for (const Step& s : steps) {
      const StepCost c = rig.step({s});
      CHECK(c.host == 300'000);
      const double n = static_cast<double>(s.fresh);
      CHECK(c.device == (measured_clock ? std::llround((2.0 + 0.5 * n) * 1e6) : 1'000'000 + 100'000 * s.fresh));
    }
    const std::vector<ShadowStep>& sh = backend.stats().shadow;
    REQUIRE(sh.size() == 3);
    for (size_t i = 0; i < sh.size(); ++i) {
      const double n = static_cast<double>(steps[i].fresh);
      CHECK(sh[i].replica == 3);
      CHECK(sh[i].step == i + 1);
      CHECK(sh[i].shape.seqs == 1);
      CHECK(sh[i].shape.new_tokens == steps[i].fresh);
      CHECK(sh[i].context_tokens() == steps[i].computed);
      CHECK(sh[i].modeled_ms == Approx(1.0 + 0.1 * n));
      CHECK(sh[i].measured_ms == Approx(2.0 + 0.5 * n));
    }
    CHECK(backend.stats().measured_ms == Approx(2.0 + 0.5 * 20 + 2 * 2.5));
  }
}

TEST_CASE("A shadowed run's measured steps read back as calibration samples: header, kinds, shapes and times",
          "[gpu][backend][shadow]") {
  BackendConfig cfg;
  cfg.kind = "gpu";
  cfg.shape = *find_model_shape("tiny");
  cfg.shape.name = "llama-3.1-8b";  // the tiny model's dimensions under a catalog shape's name: the CPU can run it
  cfg.measured_time = true;
  cfg.device = {"NVIDIA H200", "13.0", 132};
  MeasuredRig rig(cfg, 0);
  const Backend& backend = rig.backend;
  const Request a = prompt("A", iota_tokens(20, 7)), b = prompt("B", iota_tokens(12, 300));
  // A's prefill; A's decode; A's decode beside B's prefill (mixed); two decodes.
  const std::vector<std::vector<Step>> steps = {{{&a, 0, 20, {1, 2}}},
                                                {{&a, 20, 1, {1, 2}}},
                                                {{&a, 21, 1, {1, 2}}, {&b, 0, 12, {3}}},
                                                {{&a, 22, 1, {1, 2}}, {&b, 12, 1, {3}}}};
  for (const auto& step : steps) rig.step(step);
  const std::string text = backend.shadow_samples_text(16, "2026-12-04T09:00:00Z", "a test's four steps");
  const CalibrationSamples cs = parse_calibration_samples(text, "shadow.csv");
  CHECK(cs.gpu.name == "NVIDIA H200");
  CHECK(cs.gpu.sm_count == 132);
  CHECK(cs.gpu.cuda == "13.0");
  CHECK(cs.model == "llama-3.1-8b");
  CHECK(cs.tp == 1);
  CHECK(cs.block_size == 16);
  CHECK(cs.date == "2026-12-04T09:00:00Z");
  CHECK(cs.runner.find("prefixsim replay --backend gpu --shadow") != std::string::npos);
  CHECK(cs.runner.find("a test's four steps") != std::string::npos);
  REQUIRE(cs.samples.size() == 4);
  const StepKind kinds[] = {StepKind::prefill, StepKind::decode, StepKind::mixed, StepKind::decode};
  const int64_t new_tokens[] = {20, 1, 13, 2};
  for (size_t i = 0; i < 4; ++i) {
    INFO("step " << i + 1);
    CHECK(cs.kinds[i] == kinds[i]);
    CHECK(cs.samples[i].shape.new_tokens == new_tokens[i]);
    CHECK(cs.samples[i].shape.seqs == static_cast<int64_t>(steps[i].size()));
    CHECK(cs.samples[i].shape.attn_units == Approx(backend.stats().shadow[i].shape.attn_units).margin(0.05));
    CHECK(cs.samples[i].shape.context_tokens == Approx(backend.stats().shadow[i].shape.context_tokens));
    CHECK(cs.samples[i].seconds == Approx((2.0 + 0.5 * static_cast<double>(new_tokens[i])) / 1000.0));
  }
  // The tiny shape is no catalog model's: its samples could calibrate nothing.
  cfg.shape = *find_model_shape("tiny");
  Backend tiny(cfg, make_cpu_runner);
  CHECK_THROWS_WITH(tiny.shadow_samples_text(16, "2026-12-04", "x"), Catch::Contains("no catalog model"));
}

}  // namespace test_backend
