// report.json. nlohmann::ordered_json keeps our key order (the contract's
// order), and its number output is the shortest round-trip form, so identical
// reports give identical bytes. The scenario is user data: its keys come out
// sorted (nlohmann::json's std::map), which is deterministic too.
#include "reports/outputs.h"

#include <cmath>

namespace prefixsim {

namespace {
using ojson = nlohmann::ordered_json;

ojson summary_json(const LatencySummary& s) {
  return ojson{{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p95", s.p95},
               {"p99", s.p99},   {"max", s.max}, {"count", s.count}};
}

ojson ratio(uint64_t num, uint64_t den) {
  if (den == 0) return nullptr;
  return static_cast<double>(num) / static_cast<double>(den);
}

ojson backend_step_json(const BackendStepReport& s) {
  return ojson{{"replica", s.replica},         {"step", s.step},
               {"seqs", s.seqs},               {"new_tokens", s.new_tokens},
               {"context_tokens", s.context_tokens}, {"modeled_ms", s.modeled_ms},
               {"measured_ms", s.measured_ms}};
}

ojson pool_json(const PoolReport& p) {
  return ojson{{"name", p.name},
               {"instances", p.instances},
               {"gpu", p.gpu},
               {"tp", p.tp},
               {"num_blocks", p.num_blocks},
               {"arrived", p.arrived},
               {"finished", p.finished},
               {"refused", p.refused},
               {"steps", p.steps},
               {"preemptions", p.preemptions},
               {"hit_rate", std::isfinite(p.hit_rate) ? ojson(p.hit_rate) : ojson(nullptr)},
               {"busy_share", p.busy_share},
               {"kv_usage_mean", p.kv_usage_mean},
               {"kv_usage_max", p.kv_usage_max}};
}

// A mixed fleet's group: a pool with its requests' tokens and TTFT.
ojson group_json(const PoolReport& p) {
  ojson g = pool_json(p);
  g["requests"] = p.requests;
  g["prompt_tokens"] = p.prompt_tokens;
  g["hit_tokens"] = p.hit_tokens;
  g["ttft_ms"] = summary_json(p.ttft_ms);
  return g;
}

ojson disagg_json(const DisaggReport& d) {
  ojson pools = ojson::array();
  for (const PoolReport& p : d.pools) pools.push_back(pool_json(p));
  ojson links = ojson::array();
  for (const DisaggLinkReport& l : d.links)
    links.push_back(ojson{{"name", l.name},
                          {"transfers", l.transfers},
                          {"bytes", l.bytes},
                          {"busy_share", l.busy_share},
                          {"max_concurrent", l.max_concurrent}});
  return ojson{{"design", d.design},
               {"link_gb_s_per_gpu", d.link_gbps_per_gpu},
               {"fabric_gb_s", d.fabric_gbps},
               {"latency_us", d.latency_us},
               {"pools", pools},
               {"requests", ojson{{"split", d.split}, {"local", d.local}, {"prefill_only", d.prefill_only}}},
               {"transfers", ojson{{"count", d.transfers},
                                   {"blocks", d.transfer_blocks},
                                   {"bytes", d.transfer_bytes},
                                   {"streamed_during_prefill_bytes", d.streamed_bytes},
                                   {"decode_hit_blocks", d.decode_hit_blocks},
                                   {"mean_ms", d.transfer_ms_mean},
                                   {"line_rate_mean_ms", d.line_ms_mean},
                                   {"blocked", d.blocked},
                                   {"blocked_mean_ms", d.blocked_ms_mean}}},
               {"ttft_parts_ms", ojson{{"queue", summary_json(d.queue_ms)},
                                       {"prefill", summary_json(d.prefill_ms)},
                                       {"transfer", summary_json(d.transfer_ms)},
                                       {"first_decode", summary_json(d.first_decode_ms)}}},
               {"links", links}};
}

ojson backend_json(const BackendReport& b) {
  ojson j{{"kind", b.kind},
          {"shape", ojson{{"name", b.shape},
                          {"layers", b.layers},
                          {"hidden", b.hidden},
                          {"heads", b.heads},
                          {"kv_heads", b.kv_heads},
                          {"head_dim", b.head_dim},
                          {"intermediate", b.intermediate}}},
          {"seed", b.seed},
          {"time", b.measured_time ? "measured" : "modeled"},
          {"steps", b.steps},
          {"tokens", b.tokens},
          {"measured_ms", b.measured_ms}};
  if (b.check) {
    const BackendReport::Check& c = *b.check;
    j["check"] = ojson{{"asked", c.asked},
                       {"requests", c.requests},
                       {"rows", c.rows},
                       {"tolerance", c.tolerance},
                       {"max_rel_error", c.max_rel_error},
                       {"passed", c.failure.empty()},
                       {"failure", c.failure.empty() ? ojson(nullptr) : ojson(c.failure)}};
  }
  if (b.tiers)
    j["tiers"] = ojson{{"stores", b.tiers->stores}, {"loads", b.tiers->loads}, {"missing", b.tiers->missing}};
  if (b.shadow) {
    const BackendReport::Shadow& s = *b.shadow;
    ojson worst = ojson::array();
    for (const BackendStepReport& w : s.worst) worst.push_back(backend_step_json(w));
    j["shadow"] = ojson{{"steps", s.steps},
                        {"mape_pct", s.mape},
                        {"bias_pct", s.bias},
                        {"abs_error_pct", ojson{{"p50", s.p50_abs_error}, {"p90", s.p90_abs_error}}},
                        {"modeled_ms", s.modeled_ms},
                        {"measured_ms", s.measured_ms},
                        {"ttft_ms", ojson{{"measured", ojson{{"p50", s.ttft_measured_p50}, {"p99", s.ttft_measured_p99}}},
                                          {"modeled", ojson{{"p50", s.ttft_modeled_p50}, {"p99", s.ttft_modeled_p99}}}}},
                        {"worst_steps", worst}};
  }
  return j;
}
}  // namespace

nlohmann::ordered_json report_to_json(const RunReport& r) {
  ojson j;
  j["schema"] = kReportSchema;
  j["tool"] = ojson{{"name", r.tool_name}, {"version", r.tool_version}};
  j["mode"] = r.mode;
  j["scenario"] = ojson::parse(r.scenario.dump());
  j["trace"] = ojson{{"path", r.trace.path},
                     {"format", r.trace.format},
                     {"requests", r.trace.requests},
                     {"prompt_tokens", r.trace.prompt_tokens},
                     {"output_tokens", r.trace.output_tokens},
                     {"checksum", r.trace.checksum.empty() ? ojson(nullptr) : ojson(r.trace.checksum)}};
  j["kv_cache"] = ojson{{"block_size", r.kv_cache.block_size},
                        {"num_blocks", r.kv_cache.num_blocks},
                        {"bytes_per_block", r.kv_cache.bytes_per_block},
                        {"capacity_tokens", r.kv_cache.capacity_tokens}};
  const PrefixCacheReport& p = r.prefix_cache;
  const PrefixCacheLookups& l = p.lookups;
  j["prefix_cache"] = ojson{{"queried_tokens", p.queried_tokens},
                            {"hit_tokens", p.hit_tokens},
                            {"hit_rate", p.hit_rate},
                            {"block_hit_rate", p.block_hit_rate},
                            {"ideal_hit_rate", p.ideal_hit_rate},
                            {"evictions", p.evictions},
                            {"lookups", ojson{{"requests", l.requests},
                                              {"queries", l.queries},
                                              {"hits", l.hits},
                                              {"hit_rate", ratio(l.hits, l.queries)},
                                              {"preempted_requests", l.preempted_requests},
                                              {"preempted_queries", l.preempted_queries},
                                              {"preempted_hits", l.preempted_hits}}}};
  if (!r.tiers.empty()) {  // added keys only: runs without tiers keep their bytes
    ojson& pc = j["prefix_cache"];
    pc["tier_hit_tokens"] = p.tier_hit_tokens;
    pc["hit_rate_with_tiers"] = p.hit_rate_with_tiers;
    if (r.timed) {
      const PrefixCacheLookups& e = p.tier_lookups;
      pc["tier_lookups"] = ojson{{"requests", e.requests}, {"queries", e.queries}, {"hits", e.hits},
                                 {"hit_rate", ratio(e.hits, e.queries)}};
    }
  }
  if (r.timed) {
    const TimedResults& t = *r.timed;
    j["latency_ms"] = ojson{{"ttft", summary_json(t.latency_ms.ttft)},
                            {"queue", summary_json(t.latency_ms.queue)},
                            {"e2e", summary_json(t.latency_ms.e2e)},
                            {"tpot", summary_json(t.latency_ms.tpot)}};
    if (t.latency_ms.has_load) {
      j["latency_ms"]["load"] = summary_json(t.latency_ms.load);
      j["latency_ms"]["prefill"] = summary_json(t.latency_ms.prefill);
    }
    j["throughput"] = ojson{{"requests_per_s", t.throughput.requests_per_s},
                            {"prompt_tokens_per_s", t.throughput.prompt_tokens_per_s},
                            {"output_tokens_per_s", t.throughput.output_tokens_per_s},
                            {"duration_s", t.duration_s}};
    const LoadReport& ld = t.load;
    j["load"] = ojson{{"requests", ld.requests},
                      {"arrival_span_s", ld.arrival_span_s},
                      {"offered_requests_per_s", ld.offered_requests_per_s},
                      {"served_requests_per_s", ld.served_requests_per_s},
                      {"drain_ratio", ld.drain_ratio},
                      {"time_scale", ld.time_scale},
                      {"saturated", ld.saturated},
                      {"replicas_needed", ld.replicas_needed}};
    j["engine"] = ojson{{"steps", t.engine.steps},
                        {"preemptions", t.engine.preemptions},
                        {"kv_usage", ojson{{"mean", t.engine.kv_usage_mean}, {"max", t.engine.kv_usage_max}}}};
    ojson buckets = ojson::array();
    for (size_t i = 0; i < t.ttft_s.bounds.size(); ++i)
      buckets.push_back(ojson{{"le", t.ttft_s.bounds[i]}, {"count", t.ttft_s.cumulative(i)}});
    buckets.push_back(ojson{{"le", "+Inf"}, {"count", t.ttft_s.cumulative(t.ttft_s.bounds.size())}});
    j["ttft_histogram_s"] = ojson{{"buckets", buckets}, {"sum", t.ttft_s.sum}, {"count", t.ttft_s.count}};
    ojson cdf = ojson::array();
    for (const CdfPoint& c : t.ttft_cdf_ms) cdf.push_back(ojson::array({c.value, c.fraction}));
    j["ttft_cdf_ms"] = cdf;
  } else {
    j["latency_ms"] = nullptr;
    j["throughput"] = nullptr;
    j["load"] = nullptr;
    j["engine"] = nullptr;
  }
  if (!r.replicas.empty()) {  // a fleet
    ojson reps = ojson::array();
    for (size_t i = 0; i < r.replicas.size(); ++i) {
      const ReplicaReport& x = r.replicas[i];
      reps.push_back(ojson{{"replica", i},
                           {"requests", x.requests},
                           {"refused_requests", x.refused},
                           {"prompt_tokens", x.prompt_tokens},
                           {"hit_tokens", x.hit_tokens},
                           {"hit_rate", x.hit_rate},
                           {"ttft_ms", ojson{{"p50", x.ttft_ms.p50}, {"p99", x.ttft_ms.p99}}},
                           {"kv_usage", ojson{{"mean", x.kv_usage_mean}, {"max", x.kv_usage_max}}},
                           {"steps", x.steps},
                           {"preemptions", x.preemptions},
                           {"evictions", x.evictions}});
    }
    j["fleet"] = ojson{{"replicas", r.replicas.size()},
                       {"imbalance", ojson{{"requests", r.imbalance.requests},
                                           {"prompt_tokens", r.imbalance.prompt_tokens}}}};
    if (!r.groups.empty()) {
      ojson groups = ojson::array();
      for (const PoolReport& g : r.groups) groups.push_back(group_json(g));
      j["fleet"]["groups"] = groups;
    }
    if (r.router_view) {
      const RouterViewReport& v = *r.router_view;
      ojson view{{"decisions", v.decisions}};
      if (v.kv_lag_ms > 0) {
        view["kv_lag_ms"] = v.kv_lag_ms;
        view["mispredicted"] = v.mispredicted;
        view["predicted_blocks"] = v.predicted_blocks;
        view["actual_blocks"] = v.actual_blocks;
        view["oracle_blocks"] = v.oracle_blocks;
      }
      if (v.scrape_ms > 0) {
        view["scrape_ms"] = v.scrape_ms;
        view["stale_load_decisions"] = v.stale_load;
        view["believed_load"] = v.believed_load;
        view["actual_load"] = v.actual_load;
      }
      j["fleet"]["router_view"] = view;
    }
    j["replicas"] = reps;
  }
  if (!r.tiers.empty()) {
    ojson tiers = ojson::array();
    for (const TierReport& t : r.tiers)
      tiers.push_back(ojson{{"name", t.name},
                            {"shared", t.shared},
                            {"instances", t.instances},
                            {"store", t.store},
                            {"policy", t.policy},
                            {"size_gib", t.size_gib},
                            {"capacity_blocks", t.capacity_blocks < 0 ? ojson(nullptr) : ojson(t.capacity_blocks)},
                            {"capacity_tokens", t.capacity_tokens < 0 ? ojson(nullptr) : ojson(t.capacity_tokens)},
                            {"read_gb_s", t.read_gb_s},
                            {"write_gb_s", t.write_gb_s},
                            {"latency_us", t.latency_us},
                            {"hit_tokens", t.hit_tokens},
                            {"hit_rate", ratio(t.hit_tokens, p.queried_tokens)},
                            {"stored_blocks", t.stored_blocks},
                            {"evicted_blocks", t.evicted_blocks},
                            {"bytes_read", t.bytes_read},
                            {"bytes_written", t.bytes_written},
                            {"max_occupancy_blocks", t.max_occupancy_blocks}});
    j["tiers"] = tiers;
  }
  if (r.backend) j["backend"] = backend_json(*r.backend);
  if (r.admission) {
    const AdmissionReport& a = *r.admission;
    j["admission"] = ojson{{"spec", a.spec},
                           {"offered_requests", a.offered},
                           {"held_requests", a.held},
                           {"max_queue", a.max_queue},
                           {"refused_saturated", a.refused_saturated},
                           {"refused_queue_full", a.refused_queue_full},
                           {"refusal_rate", a.refusal_rate}};
  }
  if (r.disagg) j["disagg"] = disagg_json(*r.disagg);
  j["run"] = ojson{{"refused_requests", r.run.refused_requests},
                   {"warmup_requests", r.run.warmup_requests ? ojson(*r.run.warmup_requests) : ojson(nullptr)},
                   {"event_fingerprint", r.run.event_fingerprint ? ojson(*r.run.event_fingerprint) : ojson(nullptr)},
                   {"notes", r.run.notes}};
  return j;
}

std::string render_report_json(const RunReport& r) { return report_to_json(r).dump(2) + "\n"; }

}  // namespace prefixsim
