// series.csv, summary.md and the terminal summary.
#include <cmath>
#include <cstdio>

#include "reports/outputs.h"
#include "sim/base/json_out.h"

namespace prefixsim {

namespace {

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pct(double v) { return std::isfinite(v) ? fmt("%.2f %%", v * 100.0) : "n/a"; }

void csv_double(std::string& out, double v) {
  if (std::isfinite(v)) append_double(out, v);  // NaN: empty cell
}

double interval_hit_rate(const SeriesRow& s) {
  return s.queried_tokens ? static_cast<double>(s.hit_tokens) / static_cast<double>(s.queried_tokens)
                          : kNotAvailable;
}

}  // namespace

std::string duration_text(double ms) {
  if (!std::isfinite(ms)) return "n/a";
  const double a = std::fabs(ms);
  if (a < 10'000) return fmt("%.2f ms", ms);
  if (a < 120'000) return fmt("%.1f s", ms / 1e3);
  if (a < 120 * 60'000.0) return fmt("%.1f min", ms / 60e3);
  return fmt("%.1f h", ms / 3600e3);
}

void LoadReport::derive(double last_finish_s) {
  offered_requests_per_s = requests > 1 && arrival_span_s > 0 ? static_cast<double>(requests - 1) / arrival_span_s : 0;
  served_requests_per_s = last_finish_s > 0 ? static_cast<double>(requests) / last_finish_s : 0;
  drain_ratio = arrival_span_s > 0 ? last_finish_s / arrival_span_s : 0;
  saturated = requests >= 20 && drain_ratio >= kSaturatedDrainRatio;
  replicas_needed =
      saturated ? static_cast<uint64_t>(std::ceil(drain_ratio * static_cast<double>(replicas))) : replicas;
}

std::string LoadReport::saturation_line() const {
  if (!saturated) return "";
  return "saturated: arrivals exceed service by " + fmt("%.1f", drain_ratio) + " x (offered " +
         fmt("%.3g", offered_requests_per_s) + " req/s, served " + fmt("%.3g", served_requests_per_s) +
         " req/s); about " + std::to_string(replicas_needed) + " replicas would be needed" +
         (replicas > 1 ? " (this fleet has " + std::to_string(replicas) + ")" : std::string());
}

namespace {

void latency_row(std::string& out, const char* name, const LatencySummary& s) {
  out += "| ";
  out += name;
  for (double v : {s.mean, s.p50, s.p90, s.p95, s.p99, s.max}) out += " | " + duration_text(v);
  out += " |\n";
}

std::string backend_check_line(const BackendReport& b) {
  if (!b.check) return "";
  const BackendReport::Check& c = *b.check;
  return "caching check: " + std::to_string(c.requests) + " requests recomputed without the cache, " +
         std::to_string(c.rows) + " hidden states compared, max relative error " + fmt("%.3g", c.max_rel_error) +
         " (tolerance " + fmt("%.3g", c.tolerance) + "): " + (c.failure.empty() ? "passed" : "FAILED: " + c.failure);
}

// summary.md's `## Real backend` (replay --backend).
std::string backend_section(const BackendReport& b) {
  std::string out = "\n## Real backend\n\nEvery step's batch ran on a random-weight " + b.shape + " (" +
                    std::to_string(b.layers) + " layers, hidden " + std::to_string(b.hidden) + ") on the " + b.kind +
                    ": " + std::to_string(b.steps) + " steps, " + std::to_string(b.tokens) +
                    " tokens; the clock came from the " + (b.measured_time ? "measured forward" : "cost model") + ".\n";
  if (b.check) out += "\n" + backend_check_line(b) + ".\n";
  if (b.tiers)
    out += "\nKV tiers mirrored: " + std::to_string(b.tiers->stores) + " blocks stored, " +
           std::to_string(b.tiers->loads) + " loaded back into GPU blocks, " + std::to_string(b.tiers->missing) +
           " loaded without KV.\n";
  if (b.shadow) {
    const BackendReport::Shadow& sh = *b.shadow;
    out += "\nModeled against measured step time over " + std::to_string(sh.steps) + " steps: MAPE " +
           fmt("%.1f %%", sh.mape) + ", bias " + fmt("%+.1f %%", sh.bias) + ", |error| p50 " +
           fmt("%.1f %%", sh.p50_abs_error) + " / p90 " + fmt("%.1f %%", sh.p90_abs_error) + "; summed " +
           fmt("%.1f ms", sh.modeled_ms) + " modeled, " + fmt("%.1f ms", sh.measured_ms) + " measured. TTFT p50 / p99: " +
           duration_text(sh.ttft_measured_p50) + " / " + duration_text(sh.ttft_measured_p99) + " on the measured clock, " +
           duration_text(sh.ttft_modeled_p50) + " / " + duration_text(sh.ttft_modeled_p99) +
           " when the cost model drives the same scenario.\n";
  }
  return out;
}
}  // namespace

std::string render_series_csv(const RunReport& r) {
  std::string out = r.series_axis == "request" ? "request" : "t_s";
  out +=
      ",hit_rate,queried_tokens,hit_tokens,kv_usage,waiting,running,preemptions,finished,"
      "prompt_tokens_per_s,output_tokens_per_s";
  // KV tiers: what they added, after the GPU's columns.
  const bool tiers = !r.tiers.empty();
  if (tiers) out += ",tier_hit_rate,tier_hit_tokens";
  // A fleet: each replica's state and hit rate, in columns after the fleet's.
  const size_t fleet = r.series.empty() ? 0 : r.series.front().replicas.size();
  for (size_t i = 0; i < fleet; ++i) {
    const std::string p = ",r" + std::to_string(i) + "_";
    out += p + "hit_rate" + p + "kv_usage" + p + "waiting" + p + "running";
  }
  out += '\n';
  for (const SeriesRow& s : r.series) {
    append_double(out, s.start);
    out += ',';
    csv_double(out, interval_hit_rate(s));
    for (uint64_t v : {s.queried_tokens, s.hit_tokens}) {
      out += ',';
      append_int(out, static_cast<int64_t>(v));
    }
    out += ',';
    csv_double(out, s.kv_usage);
    for (uint64_t v : {s.waiting, s.running, s.preemptions, s.finished}) {
      out += ',';
      append_int(out, static_cast<int64_t>(v));
    }
    out += ',';
    csv_double(out, s.prompt_tokens_per_s);
    out += ',';
    csv_double(out, s.output_tokens_per_s);
    if (tiers) {
      out += ',';
      csv_double(out, s.queried_tokens ? static_cast<double>(s.tier_hit_tokens) / static_cast<double>(s.queried_tokens)
                                       : kNotAvailable);
      out += ',';
      append_int(out, static_cast<int64_t>(s.tier_hit_tokens));
    }
    for (const ReplicaSample& x : s.replicas) {
      out += ',';
      csv_double(out, x.queried_tokens ? static_cast<double>(x.hit_tokens) / static_cast<double>(x.queried_tokens)
                                       : kNotAvailable);
      out += ',';
      csv_double(out, x.kv_usage);
      for (uint64_t v : {x.waiting, x.running}) {
        out += ',';
        append_int(out, static_cast<int64_t>(v));
      }
    }
    out += '\n';
  }
  return out;
}

namespace {
// What admission at the router did, in a line (latency figures are over served requests).
std::string admission_line(const AdmissionReport& a) {
  return "admission " + a.spec + ": " + std::to_string(a.refused_saturated + a.refused_queue_full) + " of " +
         std::to_string(a.offered) + " requests refused (" + pct(a.refusal_rate) + "; " +
         std::to_string(a.refused_queue_full) + " with the router queue full), " + std::to_string(a.held) +
         " held at the router (queue up to " + std::to_string(a.max_queue) + "); latencies are of those served";
}
// Disaggregated serving in a few lines: the pools, the TTFT's parts, the links.
std::string disagg_lines(const DisaggReport& d, const std::string& indent) {
  std::string out = indent + "disaggregated (" + d.design + "): ";
  for (size_t i = 0; i < d.pools.size(); ++i) {
    const PoolReport& p = d.pools[i];
    out += (i ? "; " : "") + p.name + " " + std::to_string(p.instances) + " x " + p.gpu + " TP " +
           std::to_string(p.tp) + " (busy " + pct(p.busy_share) + ", hit " + pct(p.hit_rate) + ", KV max " +
           pct(p.kv_usage_max) + ")";
  }
  out += "\n" + indent + "TTFT parts p50/p99: queue " + duration_text(d.queue_ms.p50) + "/" +
         duration_text(d.queue_ms.p99) + ", prefill " + duration_text(d.prefill_ms.p50) + "/" +
         duration_text(d.prefill_ms.p99) + ", transfer " + duration_text(d.transfer_ms.p50) + "/" +
         duration_text(d.transfer_ms.p99) + ", first decode " + duration_text(d.first_decode_ms.p50) + "/" +
         duration_text(d.first_decode_ms.p99) + "\n";
  out += indent + std::to_string(d.transfers) + " KV transfers, " + fmt("%.2f", static_cast<double>(d.transfer_bytes) / 1e9) +
         " GB (mean " + duration_text(d.transfer_ms_mean) + ", " + duration_text(d.line_ms_mean) +
         " at line rate" +
         (d.streamed_bytes ? ", " + fmt("%.2f", static_cast<double>(d.streamed_bytes) / 1e9) + " GB of it during the prefill"
                           : std::string()) +
         "); " + std::to_string(d.blocked) + " waited for their decode instance to schedule them (mean " +
         duration_text(d.blocked_ms_mean) + ": its step under way, or a full pool); " +
         std::to_string(d.local) + " requests prefilled on their decode instance\n";
  return out;
}
// A mixed fleet's groups, one line each.
std::string group_lines(const std::vector<PoolReport>& groups, const std::string& indent) {
  std::string out;
  for (const PoolReport& g : groups)
    out += indent + "group " + std::to_string(g.instances) + " x " + g.gpu + " TP " + std::to_string(g.tp) + " (" +
           std::to_string(g.num_blocks) + " KV blocks each): " + std::to_string(g.requests) + " requests, hit " +
           pct(g.hit_rate) + ", TTFT p50 " + duration_text(g.ttft_ms.p50) + ", p99 " + duration_text(g.ttft_ms.p99) +
           ", busy " + pct(g.busy_share) + ", KV max " + pct(g.kv_usage_max) + "\n";
  return out;
}
}  // namespace

std::string render_summary_md(const RunReport& r) {
  std::string out = "# prefixsim report\n\n";
  out += "- tool: " + r.tool_name + " " + r.tool_version + "\n";
  out += "- mode: " + r.mode + "\n";
  out += "- trace: " + (r.trace.path.empty() ? std::string("(built-in workload)") : r.trace.path) + " (" +
         r.trace.format + "), " + std::to_string(r.trace.requests) + " requests, " +
         std::to_string(r.trace.prompt_tokens) + " prompt tokens, " + std::to_string(r.trace.output_tokens) +
         " output tokens\n";
  if (r.admission) out += "- " + admission_line(*r.admission) + "\n";
  if (r.disagg) out += disagg_lines(*r.disagg, "- ");
  out += group_lines(r.groups, "- ");
  out += std::string("- KV cache") + (r.groups.empty() ? "" : " (the first group's)") +
         (r.replicas.empty() ? "" : " (per replica)") + ": " +
         std::to_string(r.kv_cache.num_blocks) + " blocks of " +
         std::to_string(r.kv_cache.block_size) + " tokens = " + std::to_string(r.kv_cache.capacity_tokens) +
         " tokens";
  if (r.kv_cache.bytes_per_block)
    out += " (" + fmt("%.2f", static_cast<double>(r.kv_cache.bytes_per_block * r.kv_cache.num_blocks) / 1e9) +
           " GB)";
  out += "\n\n## Prefix cache\n\n| metric | value |\n| --- | --- |\n";
  const PrefixCacheReport& p = r.prefix_cache;
  out += "| hit rate (tokens, at admission) | " + pct(p.hit_rate) + " |\n";
  out += "| block hit rate | " + pct(p.block_hit_rate) + " |\n";
  out += "| ideal hit rate (infinite cache) | " + pct(p.ideal_hit_rate) + " |\n";
  out += "| hit tokens / queried tokens | " + std::to_string(p.hit_tokens) + " / " +
         std::to_string(p.queried_tokens) + " |\n";
  out += "| evictions | " + std::to_string(p.evictions) + " |\n";
  const PrefixCacheLookups& l = p.lookups;
  out += "| lookups, vLLM-counted (requests / queries / hits) | " + std::to_string(l.requests) + " / " +
         std::to_string(l.queries) + " / " + std::to_string(l.hits) + " |\n";
  out += "| lookups after preemption (requests / queries / hits) | " + std::to_string(l.preempted_requests) +
         " / " + std::to_string(l.preempted_queries) + " / " + std::to_string(l.preempted_hits) + " |\n";
  if (!r.tiers.empty()) {
    out += "\n## KV tiers below the GPU\n\nGPU + tiers hit rate: " + pct(p.hit_rate_with_tiers) + " (" +
           std::to_string(p.tier_hit_tokens) + " prompt tokens loaded from the tiers).\n\n"
           "| tier | instances | store | policy | capacity (blocks each) | hit rate | stored | evicted | read | written "
           "|\n| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const TierReport& t : r.tiers)
      out += "| " + t.name + (t.shared ? " (shared)" : "") + " | " + std::to_string(t.instances) + " | " + t.store +
             " | " + t.policy + " | " + (t.capacity_blocks < 0 ? std::string("unbounded") : std::to_string(t.capacity_blocks)) +
             " | " + pct(p.queried_tokens ? static_cast<double>(t.hit_tokens) / static_cast<double>(p.queried_tokens)
                                          : kNotAvailable) +
             " | " + std::to_string(t.stored_blocks) + " | " + std::to_string(t.evicted_blocks) + " | " +
             fmt("%.1f GB", static_cast<double>(t.bytes_read) / 1e9) + " | " +
             fmt("%.1f GB", static_cast<double>(t.bytes_written) / 1e9) + " |\n";
  }
  for (const std::string& n : r.run.notes) out += "\nNote: " + n + ".\n";
  if (!r.timed) {
    out += "\nCache mode: requests replayed one at a time without simulated time, so there is no\n"
           "latency, throughput or engine section.\n";
    return out;
  }
  const TimedResults& t = *r.timed;
  // Which cost model produced the times, and how far to trust them (an added
  // line: engine-mode runs only, from the scenario's cost_model section).
  if (r.scenario.contains("cost_model") && r.scenario["cost_model"].contains("known_error")) {
    const nlohmann::json& c = r.scenario["cost_model"];
    const nlohmann::json& e = c["known_error"];
    out += "\nTimes from the " + c.value("source", std::string("?")) + " cost model: ";
    if (e.value("validated", false) && e.contains("metrics")) {
      // A step model: its error on observed real runs (sim/cost/step_model.h).
      const nlohmann::json& m = e["metrics"];
      auto med = [&](const char* k) {
        return m.contains(k) ? pct(m[k].value("median_abs_error", NAN)) : std::string("-");
      };
      out += "median |error| TTFT " + med("ttft_mean") + ", E2E " + med("e2e_mean") + ", TPOT " + med("tpot_mean") +
             " (means; " + e.value("basis", std::string()) + ").\n";
    } else if (e.value("validated", false))
      out += "held-out step MAPE " + pct(e.value("step_mape_held_out", NAN)) + " (max " +
             pct(e.value("step_max_ape_held_out", NAN)) + ") on the profile's measured steps.\n";
    else
      out += "unvalidated (datasheet peaks x assumed efficiencies; no measured error).\n";
  }
  if (!t.load.saturation_line().empty()) out += "\n**" + t.load.saturation_line() + ".**\n";
  out += "\n## Latency\n\n| metric | mean | p50 | p90 | p95 | p99 | max |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  latency_row(out, "TTFT", t.latency_ms.ttft);
  latency_row(out, "queue", t.latency_ms.queue);
  if (t.latency_ms.has_load) {  // TTFT = queue + load + prefill, per request
    latency_row(out, "load from tiers", t.latency_ms.load);
    latency_row(out, "prefill", t.latency_ms.prefill);
  }
  latency_row(out, "end to end", t.latency_ms.e2e);
  latency_row(out, "TPOT", t.latency_ms.tpot);
  out += "\n## Throughput and engine\n\n| metric | value |\n| --- | --- |\n";
  out += "| simulated duration | " + fmt("%.3f s", t.duration_s) + " |\n";
  out += "| requests/s | " + fmt("%.2f", t.throughput.requests_per_s) + " |\n";
  out += "| offered load (requests/s, first to last arrival) | " + fmt("%.2f", t.load.offered_requests_per_s) +
         (t.load.time_scale != 1 ? " (trace gaps x " + fmt("%g", t.load.time_scale) + ")" : std::string()) + " |\n";
  out += "| drain ratio (last finish / last arrival, from the first) | " + fmt("%.2f", t.load.drain_ratio) + " |\n";
  out += "| prompt tokens/s | " + fmt("%.1f", t.throughput.prompt_tokens_per_s) + " |\n";
  out += "| output tokens/s | " + fmt("%.1f", t.throughput.output_tokens_per_s) + " |\n";
  out += "| engine steps | " + std::to_string(t.engine.steps) + " |\n";
  out += "| preemptions | " + std::to_string(t.engine.preemptions) + " |\n";
  out += "| KV usage mean / max | " + pct(t.engine.kv_usage_mean) + " / " + pct(t.engine.kv_usage_max) + " |\n";
  if (!r.replicas.empty()) {
    out += "\n## Replicas\n\n" + std::to_string(r.replicas.size()) + " replicas behind the " +
           r.scenario.value("router", std::string("?")) + " router; load imbalance (max / mean): requests " +
           fmt("%.2f", r.imbalance.requests) + ", prompt tokens " + fmt("%.2f", r.imbalance.prompt_tokens) + ".\n\n";
    out += "| replica | requests | hit rate | TTFT p50 | TTFT p99 | KV usage mean / max | preemptions |\n"
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (size_t i = 0; i < r.replicas.size(); ++i) {
      const ReplicaReport& x = r.replicas[i];
      out += "| " + std::to_string(i) + " | " + std::to_string(x.requests) + " | " + pct(x.hit_rate) + " | " +
             duration_text(x.ttft_ms.p50) + " | " + duration_text(x.ttft_ms.p99) + " | " + pct(x.kv_usage_mean) +
             " / " + pct(x.kv_usage_max) + " | " + std::to_string(x.preemptions) + " |\n";
    }
  }
  if (r.backend) out += backend_section(*r.backend);
  return out;
}

std::string render_terminal_summary(const RunReport& r) {
  std::string out = "mode " + r.mode + ": " + std::to_string(r.trace.requests) + " requests, KV " +
                    std::to_string(r.kv_cache.num_blocks) + " blocks x " + std::to_string(r.kv_cache.block_size) +
                    " tokens\n";
  if (!r.replicas.empty())
    out += "  fleet of " + std::to_string(r.replicas.size()) + " replicas (KV per replica), router " +
           r.scenario.value("router", std::string("?")) + ", load imbalance (max/mean requests) " +
           fmt("%.2f", r.imbalance.requests) + "\n";
  out += "  prefix-cache hit rate " + pct(r.prefix_cache.hit_rate) + " (block " + pct(r.prefix_cache.block_hit_rate) +
         "), " + std::to_string(r.prefix_cache.evictions) + " evictions";
  // Against what an unbounded cache would hit: the gap is what the pool's
  // size and the policy cost.
  if (std::isfinite(r.prefix_cache.ideal_hit_rate) && std::isfinite(r.prefix_cache.hit_rate))
    out += "; an unbounded cache would hit " + pct(r.prefix_cache.ideal_hit_rate);
  out += "\n";
  if (!r.tiers.empty()) out += "  with KV tiers below the GPU: hit rate " + pct(r.prefix_cache.hit_rate_with_tiers) + "\n";
  if (r.timed) {
    const TimedResults& t = *r.timed;
    out += "  TTFT p50 " + duration_text(t.latency_ms.ttft.p50) + ", p99 " + duration_text(t.latency_ms.ttft.p99) +
           "; e2e p99 " + duration_text(t.latency_ms.e2e.p99) + "; " +
           fmt("%.1f", t.throughput.output_tokens_per_s) + " output tokens/s; " +
           std::to_string(t.engine.preemptions) + " preemptions\n";
    if (!t.load.saturation_line().empty()) out += "  " + t.load.saturation_line() + "\n";
  }
  if (r.admission) out += "  " + admission_line(*r.admission) + "\n";
  if (r.disagg) out += disagg_lines(*r.disagg, "  ");
  out += group_lines(r.groups, "  ");
  if (r.backend) {
    const BackendReport& b = *r.backend;
    out += "  backend " + b.kind + " (" + b.shape + "): " + std::to_string(b.steps) + " steps, " +
           std::to_string(b.tokens) + " tokens executed\n";
    if (b.check) out += "  " + backend_check_line(b) + "\n";
    if (b.shadow)
      out += "  shadow: modeled vs measured step time, MAPE " + fmt("%.1f %%", b.shadow->mape) + ", bias " +
             fmt("%+.1f %%", b.shadow->bias) + " over " + std::to_string(b.shadow->steps) + " steps\n";
  }
  for (const std::string& n : r.run.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace prefixsim
