#include "sim/fleet/disagg.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "sim/base/error.h"
#include "sim/base/spec_params.h"
#include "sim/fleet/engine_view.h"

namespace prefixsim {

DisaggConfig parse_disagg(const std::string& spec) {
  const ParsedSpec ps = parse_spec(spec, "--disagg");
  DisaggConfig c;
  c.design = ps.name;
  if (ps.name == "dynamo") {
    c.decode_at_arrival = true;
  } else if (ps.name == "mooncake") {
    c.first_token_on_prefill = true;
    c.decode_at_arrival = true;
    c.layerwise = true;
  } else if (ps.name != "vllm-nixl") {
    throw InputError("--disagg: unknown design '" + ps.name + "' (vllm-nixl, dynamo, mooncake)");
  }
  SpecParams p("--disagg " + ps.name, ps.params);
  const std::string first = p.get_string("first_token", c.first_token_on_prefill ? "prefill" : "decode");
  if (first != "prefill" && first != "decode")
    throw InputError("--disagg " + ps.name + ": first_token must be prefill or decode, got '" + first + "'");
  c.first_token_on_prefill = first == "prefill";
  const std::string pick = p.get_string("decode_pick", c.decode_at_arrival ? "arrival" : "after");
  if (pick != "arrival" && pick != "after")
    throw InputError("--disagg " + ps.name + ": decode_pick must be arrival or after, got '" + pick + "'");
  c.decode_at_arrival = pick == "arrival";
  c.local_prefill = p.get_int("local_prefill", c.local_prefill);
  if (c.local_prefill < -1 || c.local_prefill > (int64_t{1} << 40))
    throw InputError("--disagg " + ps.name + ": local_prefill must be -1 (off) or a token count in [0, 2^40]");
  // Deciding on a local prefill needs the decode instance's cache at arrival.
  if (c.local_prefill >= 0) c.decode_at_arrival = true;
  const std::string overlap = p.get_string("overlap", c.layerwise ? "layerwise" : "none");
  if (overlap != "layerwise" && overlap != "none")
    throw InputError("--disagg " + ps.name + ": overlap must be layerwise or none, got '" + overlap + "'");
  c.layerwise = overlap == "layerwise";
  if (c.layerwise && !c.decode_at_arrival)
    throw InputError("--disagg " + ps.name +
                     ": overlap=layerwise needs decode_pick=arrival (the prefill streams to a decode instance it knows)");
  p.reject_unused();
  return c;
}

std::string disagg_text(const DisaggConfig& c) {
  return c.design + ":first_token=" + (c.first_token_on_prefill ? "prefill" : "decode") +
         ",decode_pick=" + (c.decode_at_arrival ? "arrival" : "after") +
         ",local_prefill=" + std::to_string(c.local_prefill) + (c.layerwise ? ",overlap=layerwise" : "");
}

namespace {

// The coordinator's events (the driver's extension kinds) run between a
// step's end and the next step's start at one instant, as arrivals do.
constexpr int32_t kPrio = 1;
constexpr uint32_t kHandoff = DriverExtension::kExtensionKindBase;  // payload: ticket
constexpr uint32_t kThrough = kHandoff + 3;                         // payload: generation
constexpr uint32_t kRead = kHandoff + 6;                            // payload: ticket
constexpr uint32_t kNone = UINT32_MAX;

// The decode pool as its router sees it: a decode instance picked at
// arrival counts the legs promised to it as waiting there, as a router that
// counts its own dispatches does (without them every arrival of a burst
// would pick the same instance, whose load has not moved yet).
class PromisedView final : public FleetView {
 public:
  PromisedView(const EngineFleetView& pool, std::span<const uint32_t> promised) : pool_(pool), promised_(promised) {}
  uint32_t size() const override { return pool_.size(); }
  size_t load(uint32_t i) const override { return pool_.load(i) + promised_[i]; }
  size_t waiting(uint32_t i) const override { return pool_.waiting(i) + promised_[i]; }
  size_t running(uint32_t i) const override { return pool_.running(i); }
  double kv_usage(uint32_t i) const override { return pool_.kv_usage(i); }
  int64_t queued_prompt_tokens(uint32_t i) const override { return pool_.queued_prompt_tokens(i); }
  int64_t active_blocks(uint32_t i) const override { return pool_.active_blocks(i); }
  int64_t capacity_blocks(uint32_t i) const override { return pool_.capacity_blocks(i); }
  size_t cached_prefix_blocks(uint32_t i, std::span<const BlockHash> p) const override {
    return pool_.cached_prefix_blocks(i, p);
  }
  void cached_prefix_blocks_all(std::span<const BlockHash> p, std::span<size_t> out) const override {
    pool_.cached_prefix_blocks_all(p, out);
  }
  TimeNs now() const override { return pool_.now(); }

 private:
  const EngineFleetView& pool_;
  std::span<const uint32_t> promised_;
};

class Coordinator final : public DriverExtension, public RemoteKvListener, public EngineObserver {
 public:
  Coordinator(EventLoop& loop, std::span<Engine* const> engines, uint32_t num_prefill, Router& prefill_router,
              Router& decode_router, int32_t block_size, const DisaggConfig& cfg, const KvLinkConfig& links,
              int64_t bytes_per_block, std::vector<double> nics, EngineObserver* next)
      : loop_(loop),
        engines_(engines),
        P_(num_prefill),
        prefill_router_(prefill_router),
        decode_router_(decode_router),
        block_size_(block_size),
        cfg_(cfg),
        bytes_per_block_(bytes_per_block),
        next_(next),
        links_(static_cast<uint32_t>(engines.size()), links, std::move(nics)),
        prefill_view_(engines.subspan(0, num_prefill), loop, {}, false),
        decode_view_(engines.subspan(num_prefill), loop, {}, false),
        promised_(engines.size() - num_prefill, 0),
        promised_view_(decode_view_, promised_) {}

  DisaggStats stats;
  const KvLinks& links() const { return links_; }

  // No prefill instance has room (admission.h's saturation, read live).
  bool prefill_saturated(const AdmissionConfig& a) const { return fleet_saturated(prefill_view_, a); }

  // An arrival: the prefill leg to a prefill instance, or the whole request
  // to its decode instance (conditional disaggregation).
  uint32_t route(Request& r) {
    r.leg = Request::Leg::kWhole;  // a reused request object may carry an earlier one's
    ++stats.routed;
    const uint32_t d = cfg_.decode_at_arrival ? pick(decode_router_, promised_view_, r) : kNone;
    if (cfg_.local_prefill >= 0) {
      const auto blocks = r.ensure_prompt_chain(block_size_).hashes();
      const int64_t cached = static_cast<int64_t>(decode_view_.truly_cached(d, blocks)) * block_size_;
      if (r.prompt_len - cached <= cfg_.local_prefill) {
        ++stats.local;
        return P_ + d;
      }
    }
    const uint32_t t = new_ticket();
    Ticket& k = tickets_[t];
    k.arrival = loop_.now();
    k.output_len = r.output_len;
    k.decode = d;
    if (d != kNone) ++promised_[d];
    k.prefill = pick(prefill_router_, prefill_view_, r);
    r.leg = Request::Leg::kPrefill;
    r.ticket = t;
    r.output_len = 1;  // the proxy's max_tokens 1
    return k.prefill;
  }

  void on_step(const StepRecord& s) override {
    if (next_) next_->on_step(s);
  }

  void on_request_refused(const Request& r, const std::string& why) override {
    if (r.leg == Request::Leg::kPrefill && tickets_[r.ticket].decode != kNone) --promised_[tickets_[r.ticket].decode];
    if (r.leg == Request::Leg::kDecode) engines_[tickets_[r.ticket].prefill]->release_held(r.ticket);
    if (r.leg != Request::Leg::kWhole) free_ticket(r.ticket);
    if (next_) next_->on_request_refused(r, why);
  }

  void on_request_finished(const RequestRecord& rec) override {
    const Request& r = *rec.request;
    if (r.leg == Request::Leg::kWhole) {
      if (next_) next_->on_request_finished(rec);
    } else if (r.leg == Request::Leg::kPrefill) {
      Ticket& k = tickets_[r.ticket];
      k.prefill_rec = rec;
      k.request = r;  // the decode leg's, sent once the proxy has the response
      k.request.output_len = k.output_len;
      k.prefill_rec.request = &k.request;
      loop_.schedule(rec.finish, kPrio, kHandoff, r.ticket);
    } else {
      finish_split(rec);
    }
  }

  void remote_kv_wanted(uint32_t replica, SlotId slot, const Request& r, int64_t tokens) override {
    Ticket& k = tickets_[r.ticket];
    const TimeNs now = loop_.now();
    k.slot = slot;
    k.transfer_start = now;
    if (now > k.handoff) {
      ++stats.blocked;
      stats.blocked_time += now - k.handoff;
    }
    const uint64_t blocks = static_cast<uint64_t>((tokens + block_size_ - 1) / block_size_);
    const uint64_t bytes = blocks * static_cast<uint64_t>(bytes_per_block_);
    ++stats.transfers;
    stats.transfer_blocks += blocks;
    stats.transfer_bytes += bytes;
    stats.decode_hit_blocks += static_cast<uint64_t>((r.prompt_len + block_size_ - 1) / block_size_) - blocks;
    const TimeNs line = links_.line_time(k.prefill, replica, bytes);
    stats.line_time += line;
    const uint64_t streamed = streamed_during_prefill(k, bytes, line - links_.config().latency);
    stats.streamed_bytes += streamed;
    flows_[links_.start(k.prefill, replica, bytes - streamed, now)] = r.ticket;
    schedule_through();
  }

  void dispatch(const Event& ev) override {
    switch (ev.kind) {
      case kHandoff:
        return hand_off(static_cast<uint32_t>(ev.payload));
      case kThrough:
        if (ev.payload == generation_) on_through();
        return;
      case kRead:
        return on_read(static_cast<uint32_t>(ev.payload));
      default:
        throw InternalError("disagg: unknown event kind " + std::to_string(ev.kind));
    }
  }

  std::string unfinished() const override {
    if (live_ == 0 && links_.active() == 0) return {};
    return std::to_string(live_) + " disaggregated request(s) between their legs and " +
           std::to_string(links_.active()) + " transfer(s) on the links";
  }

 private:
  struct Ticket {
    TimeNs arrival = 0, handoff = 0, transfer_start = -1, transfer_done = -1;
    int64_t output_len = 0;
    uint32_t prefill = 0, decode = kNone;
    SlotId slot = 0;
    Request request;           // the decode leg, between the prefill's end and its hand-off
    RequestRecord prefill_rec;  // the prefill leg's record (request: &request)
  };

  uint32_t pick(Router& router, const FleetView& view, Request& r) {
    RouteQuery q;
    q.request = &r;
    q.block_size = block_size_;
    if (router.needs_prompt_blocks()) q.prompt_blocks = r.ensure_prompt_chain(block_size_).hashes();
    const uint32_t i = router.route(q, view);
    if (i >= view.size()) throw InternalError("disagg: a router chose instance " + std::to_string(i));
    return i;
  }

  uint32_t new_ticket() {
    ++live_;
    if (!free_.empty()) {
      const uint32_t t = free_.back();
      free_.pop_back();
      tickets_[t] = Ticket{};
      return t;
    }
    tickets_.emplace_back();
    return static_cast<uint32_t>(tickets_.size() - 1);
  }
  void free_ticket(uint32_t t) {
    tickets_[t].request = Request{};
    free_.push_back(t);
    --live_;
  }

  // Layer-wise (overlap=layerwise): what crossed while the prefill ran,
  // as the links alone would carry it over the prefill's span (`wire`: the
  // bytes' time on idle links, latency aside), at most all layers but the
  // last.
  uint64_t streamed_during_prefill(const Ticket& k, uint64_t bytes, TimeNs wire) const {
    const TimeNs span = k.prefill_rec.first_token - k.prefill_rec.first_scheduled;
    if (!cfg_.layerwise || span <= 0 || bytes == 0) return 0;
    const double all_but_last = static_cast<double>(bytes) * (cfg_.layers - 1) / std::max(cfg_.layers, 1);
    const double by_rate =
        wire > 0 ? static_cast<double>(bytes) * static_cast<double>(span) / static_cast<double>(wire) : all_but_last;
    return static_cast<uint64_t>(std::floor(std::min(all_but_last, by_rate)));
  }

  // The proxy has the prefill's response: the decode leg goes out.
  void hand_off(uint32_t t) {
    Ticket& k = tickets_[t];
    k.handoff = loop_.now();
    if (cfg_.first_token_on_prefill && k.output_len <= 1) {  // its one token is out: nothing to decode
      ++stats.prefill_only;
      if (k.decode != kNone) --promised_[k.decode];
      engines_[k.prefill]->release_held(t);
      RequestRecord rec = k.prefill_rec;
      rec.prefill_done = rec.first_token;
      if (next_) next_->on_request_finished(rec);
      free_ticket(t);
      return;
    }
    ++stats.split;
    if (k.decode == kNone) k.decode = pick(decode_router_, promised_view_, k.request);
    else --promised_[k.decode];
    Request leg = std::move(k.request);
    k.request = Request{};
    leg.leg = Request::Leg::kDecode;
    leg.arrival = k.handoff;
    if (cfg_.first_token_on_prefill) leg.output_len = k.output_len - 1;
    engines_[P_ + k.decode]->accept(std::move(leg));
  }

  void schedule_through() {
    const TimeNs at = links_.next_through();
    if (at == INT64_MAX) return;
    loop_.schedule(at, kPrio, kThrough, ++generation_);
  }

  void on_through() {
    links_.advance(loop_.now());
    through_.clear();
    links_.take_through(through_);
    for (uint32_t id : through_) {
      const auto it = flows_.find(id);
      const uint32_t t = it->second;
      flows_.erase(it);
      const TimeNs latency = links_.config().latency;
      if (latency > 0) loop_.schedule(loop_.now() + latency, kPrio, kRead, t);
      else on_read(t);
    }
    schedule_through();
  }

  // The decode instance has the KV: it admits the leg; the prefill
  // instance's blocks go back to its pool.
  void on_read(uint32_t t) {
    Ticket& k = tickets_[t];
    k.transfer_done = loop_.now();
    stats.transfer_time += k.transfer_done - k.transfer_start;
    engines_[P_ + k.decode]->remote_kv_ready(k.slot);
    engines_[k.prefill]->release_held(t);
  }

  void finish_split(const RequestRecord& rec) {
    const uint32_t t = rec.request->ticket;
    const Ticket& k = tickets_[t];
    const RequestRecord& p = k.prefill_rec;
    RequestRecord out = rec;
    out.arrival = k.arrival;
    out.first_scheduled = p.first_scheduled;
    out.load_start = -1;
    out.hit_tokens = p.hit_tokens;
    out.tier_hit_tokens = p.tier_hit_tokens;
    out.preemptions += p.preemptions;
    out.prefill_done = p.first_token;
    out.transfer_start = k.transfer_start;
    out.transfer_done = k.transfer_done;
    if (cfg_.first_token_on_prefill) {
      out.first_token = p.first_token;
      out.output_tokens += 1;
      out.max_itl = std::max(rec.max_itl, rec.first_token - p.first_token);
    }
    if (next_) next_->on_request_finished(out);
    free_ticket(t);
  }

  EventLoop& loop_;
  std::span<Engine* const> engines_;
  uint32_t P_;
  Router& prefill_router_;
  Router& decode_router_;
  int32_t block_size_;
  DisaggConfig cfg_;
  int64_t bytes_per_block_;
  EngineObserver* next_;
  KvLinks links_;
  EngineFleetView prefill_view_, decode_view_;
  std::vector<uint32_t> promised_;  // by decode instance: legs picked at arrival, not handed off yet
  PromisedView promised_view_;
  std::vector<Ticket> tickets_;  // by ticket; free ones listed in free_
  std::vector<uint32_t> free_;
  size_t live_ = 0;
  std::unordered_map<uint32_t, uint32_t> flows_;  // transfer id -> ticket
  std::vector<uint32_t> through_;
  uint64_t generation_ = 0;  // of the one live kThrough event
};

}  // namespace

DisaggResult run_disagg(EventLoop& loop, RequestSource& source, std::span<Engine* const> engines,
                        uint32_t num_prefill, Router& prefill_router, Router& decode_router, int32_t block_size,
                        const DisaggConfig& cfg, const KvLinkConfig& links, int64_t bytes_per_block,
                        EngineObserver* observer, std::vector<double> nics) {
  if (num_prefill == 0 || num_prefill >= engines.size())
    throw InternalError("disagg: both pools need at least one instance");
  Coordinator c(loop, engines, num_prefill, prefill_router, decode_router, block_size, cfg, links, bytes_per_block,
                std::move(nics), observer);
  for (Engine* e : engines) {
    e->set_observer(&c);
    e->set_remote_kv_listener(&c);
  }
  AdmissionGate gate;
  if (cfg.admission.enabled) {
    gate.queue = static_cast<size_t>(cfg.admission.queue);
    gate.saturated = [&] { return c.prefill_saturated(cfg.admission); };
  }
  DisaggResult out;
  out.fleet = drive_replicas(loop, source, engines, [&](Request& r) { return c.route(r); }, {},
                             cfg.admission.enabled ? &gate : nullptr, &c);
  for (Engine* e : engines) {
    e->set_observer(observer);
    e->set_remote_kv_listener(nullptr);
  }
  out.stats = c.stats;
  for (size_t k = 0; k < c.links().num_links(); ++k) out.links.push_back(c.links().link(k));
  return out;
}

}  // namespace prefixsim
