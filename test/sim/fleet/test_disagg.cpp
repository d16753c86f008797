// Disaggregated prefill and decode on real replicas (a linear step price:
// 2 ms + 2 us per new token), against hand-computed timelines: a transfer
// alone and two sharing a link; back-pressure when the decode pool is full;
// with P = D = 1 and an infinitely fast link, the aggregated replica's
// arithmetic (plus the recomputed last prompt token when the decode
// instance gives the first token); conservation, every pool's invariants
// after every step and no block lost across a transfer; and repeatability.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "sim/base/error.h"
#include "sim/engine/vector_source.h"
#include "sim/fleet/disagg.h"
#include "sim/fleet/fleet.h"
#include "test/sim/fleet/linear_replica.h"
#include "sim/kv/block_pool.h"
#include "sim/kv/kv_cache_manager.h"

using namespace prefixsim;

namespace test_disagg {

constexpr TimeNs kUs = 1'000;
constexpr TimeNs kMs = 1'000'000;
constexpr int64_t kMB = 1'000'000;

using Instance = fleet_test::LinearReplica;

// Checks every pool after each step; keeps each request's record by id.
class Records final : public EngineObserver {
 public:
  explicit Records(std::vector<const BlockPool*> pools) : pools_(std::move(pools)) {}
  void on_step(const StepRecord& s) override {
    const std::string broken = pools_.at(s.replica)->check_invariants();
    if (!broken.empty()) FAIL("instance " << s.replica << " step " << s.index << ": " << broken);
  }
  void on_request_finished(const RequestRecord& r) override {
    RequestRecord copy = r;
    copy.request = nullptr;
    by_id[r.request->id] = copy;
    order.push_back(r.request->id + "@" + std::to_string(r.replica) + ":" + std::to_string(r.first_token) + "/" +
                    std::to_string(r.finish));
  }
  void on_request_refused(const Request&, const std::string&) override { ++refused; }
  std::map<std::string, RequestRecord> by_id;
  std::vector<std::string> order;
  uint64_t refused = 0;

 private:
  std::vector<const BlockPool*> pools_;
};

struct Setup {
  uint32_t prefill = 1, decode = 1;
  int32_t prefill_blocks = 200, decode_blocks = 200;
  std::string spec = "vllm-nixl";
  KvLinkConfig link{};
  int64_t bytes_per_block = kMB;
  std::string prefill_router = "round-robin", decode_router = "round-robin";
  int32_t layers = 1;  // the model's, for overlap=layerwise
  AdmissionConfig admission;
};

struct Outcome {
  DisaggResult result;
  std::map<std::string, RequestRecord> records;
  std::vector<std::string> order;
  std::vector<int32_t> free_blocks, usable_blocks;
  uint64_t refused = 0;
};

Outcome run(const std::vector<Request>& reqs, const Setup& s) {
  EventLoop loop;
  std::vector<std::unique_ptr<Instance>> inst;
  std::vector<Engine*> engines;
  std::vector<const BlockPool*> pools;
  for (uint32_t i = 0; i < s.prefill + s.decode; ++i) {
    inst.push_back(std::make_unique<Instance>(i < s.prefill ? s.prefill_blocks : s.decode_blocks, &loop, i));
    engines.push_back(&inst.back()->engine);
    pools.push_back(&inst.back()->pool);
  }
  Records rec(pools);
  RouterContext pc, dc;
  pc.replicas = s.prefill;
  dc.replicas = s.decode;
  auto pr = make_router(s.prefill_router, pc);
  auto dr = make_router(s.decode_router, dc);
  VectorSource src{std::span<const Request>(reqs)};
  Outcome out;
  DisaggConfig cfg = parse_disagg(s.spec);
  cfg.layers = s.layers;
  cfg.admission = s.admission;
  out.result = run_disagg(loop, src, engines, s.prefill, *pr, *dr, 16, cfg, s.link, s.bytes_per_block, &rec);
  out.records = rec.by_id;
  out.order = rec.order;
  out.refused = rec.refused;
  for (const auto& i : inst) {
    out.free_blocks.push_back(i->pool.num_free());
    out.usable_blocks.push_back(i->pool.num_usable());
  }
  return out;
}

Request request(const std::string& id, TimeNs at, int prompt, int outputs, int base = 1) {
  Request r;
  r.id = id;
  r.arrival = at;
  for (int i = 0; i < prompt; ++i) r.tokens.push_back(base + i);
  r.prompt_len = prompt;
  r.output_len = outputs;
  return r;
}

// Conversations sharing a system prompt; each turn extends its history.
std::vector<Request> multi_turn(int sessions, int turns, TimeNs gap) {
  std::vector<Request> out;
  TimeNs t = 0;
  for (int k = 0; k < turns; ++k)
    for (int s = 0; s < sessions; ++s) {
      Request r;
      r.id = "s" + std::to_string(s) + "-t" + std::to_string(k);
      r.session = "s" + std::to_string(s);
      r.arrival = t;
      for (int i = 0; i < 64; ++i) r.tokens.push_back(i + 1);
      for (int j = 0; j <= k; ++j)
        for (int i = 0; i < 48; ++i) r.tokens.push_back(100'000 * (s + 1) + 1'000 * j + i);
      r.prompt_len = static_cast<int64_t>(r.tokens.size());
      r.output_len = 6 + (s * 7 + k * 3) % 20;
      out.push_back(std::move(r));
      t += gap;
    }
  return out;
}


TEST_CASE("one request's KV crosses the link in bytes over bandwidth plus latency", "[disagg]") {
  // Prefill: 100 tokens in one step, 2.2 ms. The decode instance holds none
  // of it: 7 blocks of 1 MB at 1 GB/s = 7 ms, + 0.1 ms; then it recomputes
  // the last prompt token (2.002 ms) and samples the first output; 4 more
  // decode steps of 2.002 ms.
  Setup s;
  s.link = {1e9, 0, 100 * kUs};
  const Outcome o = run({request("a", 0, 100, 5)}, s);
  const RequestRecord& r = o.records.at("a");
  CHECK(r.prefill_done == 2'200 * kUs);
  CHECK(r.transfer_start == 2'200 * kUs);
  CHECK(r.transfer_done == 9'300 * kUs);
  CHECK(r.first_token == 11'302 * kUs);
  CHECK(r.finish == 11'302 * kUs + 4 * 2'002 * kUs);
  CHECK(r.output_tokens == 5);
  CHECK(r.replica == 1);
  CHECK(o.result.stats.transfers == 1);
  CHECK(o.result.stats.transfer_blocks == 7);
  CHECK(o.result.stats.transfer_bytes == 7 * kMB);
  CHECK(o.result.stats.transfer_time == 7'100 * kUs);
  CHECK(o.result.stats.line_time == 7'100 * kUs);
  CHECK(o.result.links.at(0).bytes == 7 * kMB);  // instance 0's tx
  CHECK(o.result.links.at(3).bytes == 7 * kMB);  // instance 1's rx
}

TEST_CASE("layer-wise, the KV the link carries during the prefill is across by its end, all but the last layer's at most",
          "[disagg]") {
  // As above: a 2.2 ms prefill, 7 MB to move. At 1 GB/s the link carries
  // 2.2 MB during the prefill (4 layers: up to 5.25 MB may go): 4.8 MB are
  // left, 4.8 ms + 0.1 ms after the prefill.
  Setup s;
  s.spec = "vllm-nixl:decode_pick=arrival,overlap=layerwise";
  s.layers = 4;
  s.link = {1e9, 0, 100 * kUs};
  const Outcome slow = run({request("a", 0, 100, 5)}, s);
  const RequestRecord& a = slow.records.at("a");
  CHECK(a.prefill_done == 2'200 * kUs);
  CHECK(a.transfer_done == 7'100 * kUs);
  CHECK(a.first_token == 9'102 * kUs);
  CHECK(slow.result.stats.transfer_bytes == 7 * kMB);
  CHECK(slow.result.stats.streamed_bytes == 2'200'000);
  CHECK(slow.result.links.at(0).bytes == 4'800'000);  // the links carried the rest
  CHECK(slow.result.stats.line_time == 7'100 * kUs);   // the whole transfer alone, as without overlap
  // At 10 GB/s the link could carry it all during the prefill, but the
  // last of 2 layers exists only at its end: 3.5 MB after, 0.35 + 0.1 ms.
  s.layers = 2;
  s.link = {10e9, 0, 100 * kUs};
  const Outcome fast = run({request("a", 0, 100, 5)}, s);
  CHECK(fast.records.at("a").transfer_done == 2'650 * kUs);
  CHECK(fast.result.stats.streamed_bytes == 3'500'000);
  // Without overlap the same link takes 0.7 + 0.1 ms after the prefill.
  s.spec = "vllm-nixl:decode_pick=arrival";
  CHECK(run({request("a", 0, 100, 5)}, s).records.at("a").transfer_done == 3'000 * kUs);
}

TEST_CASE("admission refuses or holds arrivals while no prefill instance has room", "[disagg][admission]") {
  // Three prompts at once on one prefill instance: the first makes it wait
  // one request, which is past waiting=0; the others are refused (queue 0)
  // or held and sent on as it schedules (queue 2).
  Setup s;
  s.admission.enabled = true;
  s.admission.waiting = 0;
  s.admission.kv = 1.0;
  const std::vector<Request> three = {request("a", 0, 100, 2, 1), request("b", 0, 100, 2, 5'000),
                                      request("c", 0, 100, 2, 9'000)};
  const Outcome shed = run(three, s);
  CHECK(shed.records.size() == 1);
  CHECK(shed.records.count("a"));
  CHECK(shed.result.fleet.admission.refused_saturated == 2);
  CHECK(shed.result.stats.split == 1);
  s.admission.queue = 2;
  const Outcome held = run(three, s);
  CHECK(held.records.size() == 3);
  CHECK(held.result.fleet.admission.refused() == 0);
  CHECK(held.result.fleet.admission.held == 2);
  CHECK(held.records.at("b").arrival == 0);  // latency counts from the arrival, not the release
  CHECK(held.records.at("b").first_scheduled > 0);
}

TEST_CASE("two transfers leaving one prefill instance at once share its NIC", "[disagg]") {
  // Both prompts in one prefill step (200 tokens: 2.4 ms); 7 MB each over
  // one 1 GB/s NIC: 14 ms for both, + 0.1 ms; one decode step of 2 tokens.
  Setup s;
  s.link = {1e9, 0, 100 * kUs};
  const Outcome o = run({request("a", 0, 100, 2, 1), request("b", 0, 100, 2, 5'000)}, s);
  for (const char* id : {"a", "b"}) {
    INFO(id);
    const RequestRecord& r = o.records.at(id);
    CHECK(r.transfer_start == 2'400 * kUs);
    CHECK(r.transfer_done == 16'500 * kUs);
    CHECK(r.first_token == 18'504 * kUs);
  }
  CHECK(o.result.stats.line_time == 2 * 7'100 * kUs);
  CHECK(o.result.stats.transfer_time == 2 * 14'100 * kUs);
  CHECK(o.result.links.at(0).max_concurrent == 2);
}

TEST_CASE("a full decode pool holds back the transfer until a decode leg frees its blocks", "[disagg]") {
  // The decode pool has 10 blocks: one request's 7 fit, a second's do not
  // until the first finishes; its KV waits on the prefill instance meanwhile.
  Setup s;
  s.decode_blocks = 10;
  const Outcome o = run({request("a", 0, 100, 3, 1), request("b", 0, 100, 3, 5'000)}, s);
  const RequestRecord& a = o.records.at("a");
  const RequestRecord& b = o.records.at("b");
  CHECK(a.transfer_start == a.prefill_done);
  CHECK(b.transfer_start == a.finish);
  CHECK(b.first_token > a.finish);
  CHECK(o.result.stats.blocked == 1);
  CHECK(o.result.stats.blocked_time == a.finish - b.prefill_done);
  CHECK(o.free_blocks == o.usable_blocks);
}

TEST_CASE("with P = D = 1 and an infinitely fast link the split keeps the aggregated replica's arithmetic",
          "[disagg]") {
  const std::vector<Request> one{request("a", 0, 100, 5)};
  // Aggregated: prefill 2.2 ms gives the first token, 4 decode steps follow.
  Instance agg(200, nullptr, 0);
  Records want({&agg.pool});
  agg.engine.set_observer(&want);
  VectorSource src{std::span<const Request>(one)};
  agg.engine.run(src);
  const RequestRecord& w = want.by_id.at("a");
  REQUIRE(w.first_token == 2'200 * kUs);
  REQUIRE(w.finish == 2'200 * kUs + 4 * 2'002 * kUs);

  Setup s;  // link {0, 0, 0}: infinitely fast, no latency
  SECTION("first token from the prefill instance: the same TTFT and E2E") {
    s.spec = "mooncake";
    const Outcome o = run(one, s);
    const RequestRecord& r = o.records.at("a");
    CHECK(r.first_token == w.first_token);
    CHECK(r.finish == w.finish);
    CHECK(r.output_tokens == 5);
    CHECK(r.max_itl == 2'002 * kUs);
  }
  SECTION("first token from the decode instance: one more step, the recomputed last prompt token") {
    const Outcome o = run(one, s);
    const RequestRecord& r = o.records.at("a");
    CHECK(r.first_token == w.first_token + 2'002 * kUs);
    CHECK(r.finish == w.finish + 2'002 * kUs);
    CHECK(r.transfer_done == r.prefill_done);
  }
}

TEST_CASE("a P:D fleet conserves requests per pool, keeps every pool's invariants and loses no block",
          "[disagg]") {
  const auto reqs = multi_turn(10, 5, 700 * kUs);
  for (const char* spec : {"vllm-nixl", "dynamo", "mooncake", "vllm-nixl:local_prefill=100"}) {
    INFO(spec);
    Setup s;
    s.prefill = 2;
    s.decode = 3;
    s.decode_blocks = 60;
    s.spec = spec;
    s.link = {2e9, 4e9, 20 * kUs};
    s.prefill_router = "prefix";
    s.decode_router = "prefix";
    const Outcome o = run(reqs, s);
    const FleetResult& f = o.result.fleet;
    for (const EngineResult& e : f.replicas) CHECK(e.finished + e.refused == e.arrived);
    CHECK(o.records.size() + o.refused == reqs.size());
    CHECK(o.free_blocks == o.usable_blocks);
    const DisaggStats& st = o.result.stats;
    CHECK(st.split + st.local + st.prefill_only == reqs.size());
    CHECK(st.transfers + st.prefill_only == st.split + st.prefill_only);
    uint64_t prefill_arrived = 0;
    for (uint32_t i = 0; i < s.prefill; ++i) prefill_arrived += f.replicas[i].arrived;
    CHECK(prefill_arrived == st.split + st.prefill_only);
    INFO("split " << st.split << " local " << st.local << " transfers " << st.transfers);
    if (std::string(spec).find("local_prefill") != std::string::npos) CHECK(st.local > 0);
    else CHECK(st.local == 0);
    for (const auto& [id, r] : o.records) {
      INFO(id);
      CHECK(r.first_token >= r.arrival);
      CHECK(r.finish >= r.first_token);
    }
  }
}

TEST_CASE("a disaggregated run repeats itself exactly", "[disagg]") {
  const auto reqs = multi_turn(8, 4, 500 * kUs);
  Setup s;
  s.prefill = 2;
  s.decode = 2;
  s.link = {1e9, 0, 10 * kUs};
  const Outcome a = run(reqs, s), b = run(reqs, s);
  CHECK(a.order == b.order);
  CHECK(a.result.fleet.total.event_fingerprint == b.result.fleet.total.event_fingerprint);
}

TEST_CASE("the decode instance's own prefix cache shrinks what crosses the link", "[disagg]") {
  // The second turn extends the first: its decode instance (the only one)
  // holds the first turn's prompt and outputs, so only the new blocks move.
  Setup s;
  std::vector<Request> two{request("t1", 0, 160, 4)};
  Request t2 = request("t2", 100 * kMs, 320, 4);
  two.push_back(t2);
  const Outcome o = run(two, s);
  CHECK(o.result.stats.transfers == 2);
  CHECK(o.result.stats.decode_hit_blocks == 10);  // t1's 160 prompt tokens
  CHECK(o.result.stats.transfer_blocks == 10 + 10);
}

TEST_CASE("a request object reused by its source never carries an earlier request's leg", "[disagg]") {
  // A trace reader fills one Request again and again (clear(), then its
  // fields); a locally prefilled request must not inherit the split one's.
  class Reusing final : public RequestSource {
   public:
    explicit Reusing(std::vector<Request> reqs) : reqs_(std::move(reqs)) {}
    bool next(Request& out) override {
      if (i_ == reqs_.size()) return false;
      out.clear();
      const Request& r = reqs_[i_++];
      out.id = r.id;
      out.arrival = r.arrival;
      out.tokens = r.tokens;
      out.prompt_len = r.prompt_len;
      out.output_len = r.output_len;
      return true;
    }
    std::string format() const override { return "reusing"; }
    std::string origin() const override { return "reusing"; }

   private:
    std::vector<Request> reqs_;
    size_t i_ = 0;
  };
  Request leg;
  leg.leg = Request::Leg::kPrefill;
  leg.ticket = 7;
  leg.clear();
  CHECK(leg.leg == Request::Leg::kWhole);
  CHECK(leg.ticket == 0);
  // Long prompts go split, short ones local, alternating.
  std::vector<Request> reqs;
  for (int i = 0; i < 12; ++i) reqs.push_back(request("r" + std::to_string(i), i * 3 * kMs, i % 2 ? 20 : 300, 3, i * 1000));
  EventLoop loop;
  std::vector<std::unique_ptr<Instance>> inst;
  std::vector<Engine*> engines;
  for (uint32_t i = 0; i < 2; ++i) {
    inst.push_back(std::make_unique<Instance>(200, &loop, i));
    engines.push_back(&inst.back()->engine);
  }
  RouterContext one;
  auto pr = make_router("round-robin", one), dr = make_router("round-robin", one);
  Reusing src(reqs);
  const DisaggResult d = run_disagg(loop, src, engines, 1, *pr, *dr, 16, parse_disagg("vllm-nixl:local_prefill=64"),
                                    {1e9, 0, 0}, kMB, nullptr);
  CHECK(d.stats.local == 6);
  CHECK(d.stats.split == 6);
  CHECK(d.fleet.total.finished == 18);
}

TEST_CASE("disaggregation specs: the named designs, their parameters, and bad ones named", "[disagg]") {
  CHECK(disagg_text(parse_disagg("vllm-nixl")) == "vllm-nixl:first_token=decode,decode_pick=after,local_prefill=-1");
  CHECK(disagg_text(parse_disagg("mooncake")) ==
        "mooncake:first_token=prefill,decode_pick=arrival,local_prefill=-1,overlap=layerwise");
  CHECK(disagg_text(parse_disagg("mooncake:overlap=none")) ==
        "mooncake:first_token=prefill,decode_pick=arrival,local_prefill=-1");
  CHECK_THROWS_WITH(parse_disagg("vllm-nixl:overlap=layerwise"), Catch::Contains("needs decode_pick=arrival"));
  CHECK_THROWS_WITH(parse_disagg("dynamo:overlap=sideways"), Catch::Contains("overlap must be layerwise or none"));
  CHECK(disagg_text(parse_disagg("dynamo:local_prefill=512")) ==
        "dynamo:first_token=decode,decode_pick=arrival,local_prefill=512");
  CHECK_THROWS_WITH(parse_disagg("splitwise"), Catch::Contains("unknown design 'splitwise'"));
  CHECK_THROWS_WITH(parse_disagg("vllm-nixl:first_token=middle"), Catch::Contains("first_token"));
  CHECK_THROWS_WITH(parse_disagg("vllm-nixl:decode_pick=later"), Catch::Contains("decode_pick"));
  CHECK_THROWS_AS(parse_disagg("vllm-nixl:speed=2"), InputError);
  CHECK_THROWS_AS(parse_disagg("vllm-nixl:local_prefill=-5"), InputError);
}

}  // namespace test_disagg
