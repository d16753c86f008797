// metrics.prom: the run's totals in Prometheus text exposition format 0.0.4,
// under vLLM v1's metric names and types (vllm/v1/metrics/loggers.py), so the
// simulation can be held against a vLLM Grafana dashboard.
//
// As prometheus_client does on the wire, a counter registered as
// "vllm:prefix_cache_queries" is exposed as "vllm:prefix_cache_queries_total",
// which is the name PromQL and dashboards use. Numbers are written the way
// prometheus_client writes them (Python float repr, "+Inf").
//
// A replay is one "scrape" at the end of the run: counters and histograms hold
// run totals, and vLLM's gauges hold what they mean, the state at that
// instant (the last series interval's end: usually an idle engine, every
// request finished). The run's time averages, what avg_over_time(...) over
// the same window reads in Grafana, are gauges of their own, named
// prefixsim:*_avg, so a dashboard never reads an average as an instant.
#include <cmath>

#include "reports/outputs.h"
#include "sim/base/json_out.h"

namespace prefixsim {

namespace {

struct PromWriter {
  std::string out;
  std::string labels;  // model_name="...",engine="0"

  void header(const std::string& name, const char* type, const std::string& help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void value(double v) {
    if (std::isinf(v))
      out += v > 0 ? "+Inf" : "-Inf";
    else if (std::isnan(v))
      out += "NaN";
    else
      append_double(out, v);
  }
  void sample(const std::string& name, double v, const std::string& extra_label = "") {
    out += name + "{" + labels + extra_label + "} ";
    value(v);
    out += '\n';
  }
  void counter(const std::string& base, const std::string& help, double v) {
    header(base + "_total", "counter", help);
    sample(base + "_total", v);
  }
  void gauge(const std::string& name, const std::string& help, double v) {
    header(name, "gauge", help);
    sample(name, v);
  }
  // A fleet's metric: one series per replica (label replica="i"), as a
  // data-parallel vLLM deployment exposes one per engine.
  void per_replica(const std::string& name, const char* type, const std::string& help, const std::vector<double>& v) {
    header(name, type, help);
    for (size_t i = 0; i < v.size(); ++i) sample(name, v[i], ",replica=\"" + std::to_string(i) + "\"");
  }
  void histogram(const std::string& name, const std::string& help, const Histogram& h) {
    header(name, "histogram", help);
    for (size_t i = 0; i <= h.bounds.size(); ++i) {
      std::string le = ",le=\"";
      if (i == h.bounds.size())
        le += "+Inf";
      else
        append_double(le, h.bounds[i]);
      le += "\"";
      sample(name + "_bucket", static_cast<double>(h.cumulative(i)), le);
    }
    sample(name + "_count", static_cast<double>(h.count));
    sample(name + "_sum", h.sum);
  }
};

// Prometheus label values escape backslash, double quote and newline.
std::string label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string model_name(const nlohmann::json& scenario) {
  if (scenario.is_object()) {
    auto it = scenario.find("model");
    if (it != scenario.end()) {
      if (it->is_string()) return it->get<std::string>();
      if (it->is_object() && it->contains("name") && (*it)["name"].is_string()) return (*it)["name"].get<std::string>();
    }
  }
  return "prefixsim";
}

// KV tiers below the GPU: vLLM's external prefix cache counters (what its
// KV connector found), then one series per tier (label tier).
void append_tier_metrics(const RunReport& r, PromWriter& w) {
  if (r.tiers.empty()) return;
  const PrefixCacheReport& p = r.prefix_cache;
  // Engine mode counts every lookup as vLLM does; cache mode one per request.
  const bool timed = r.timed.has_value();
  w.counter("vllm:external_prefix_cache_queries",
            "External prefix cache queries (KV tiers below the GPU), in terms of number of queried tokens.",
            static_cast<double>(timed ? p.tier_lookups.queries : p.queried_tokens));
  w.counter("vllm:external_prefix_cache_hits",
            "External prefix cache hits (KV tiers below the GPU), in terms of number of loaded tokens.",
            static_cast<double>(timed ? p.tier_lookups.hits : p.tier_hit_tokens));
  auto per_tier = [&](const std::string& name, const char* type, const std::string& help, auto get) {
    w.header(name, type, help);
    for (const TierReport& t : r.tiers) w.sample(name, static_cast<double>(get(t)), ",tier=\"" + label_value(t.name) + "\"");
  };
  per_tier("prefixsim:kv_tier_hit_tokens_total", "counter", "Prompt tokens found in the tier and loaded.",
           [](const TierReport& t) { return t.hit_tokens; });
  per_tier("prefixsim:kv_tier_stored_blocks_total", "counter", "Blocks written to the tier.",
           [](const TierReport& t) { return t.stored_blocks; });
  per_tier("prefixsim:kv_tier_evicted_blocks_total", "counter", "Blocks the tier evicted.",
           [](const TierReport& t) { return t.evicted_blocks; });
  per_tier("prefixsim:kv_tier_read_bytes_total", "counter", "Bytes loaded from the tier.",
           [](const TierReport& t) { return t.bytes_read; });
  per_tier("prefixsim:kv_tier_written_bytes_total", "counter", "Bytes written to the tier.",
           [](const TierReport& t) { return t.bytes_written; });
}

// A fleet's metrics.prom: per-replica series of what each replica measured,
// and the fleet's latency histograms (collected over all its requests).
std::string render_fleet_metrics_prom(const RunReport& r, PromWriter& w) {
  const TimedResults& t = *r.timed;
  const size_t n = r.replicas.size();
  std::vector<double> queries(n), hits(n), prompt(n), preempt(n), usage(n), running(n), waiting(n);
  std::vector<double> usage_end(n), running_end(n), waiting_end(n);
  if (!r.series.empty())
    for (size_t i = 0; i < n && i < r.series.back().replicas.size(); ++i) {
      const ReplicaSample& e = r.series.back().replicas[i];
      usage_end[i] = e.kv_usage;
      running_end[i] = static_cast<double>(e.running);
      waiting_end[i] = static_cast<double>(e.waiting);
    }
  for (size_t i = 0; i < n; ++i) {
    const ReplicaReport& x = r.replicas[i];
    queries[i] = static_cast<double>(x.lookup_queries);
    hits[i] = static_cast<double>(x.lookup_hits);
    prompt[i] = static_cast<double>(x.prompt_tokens);
    preempt[i] = static_cast<double>(x.preemptions);
    usage[i] = x.kv_usage_mean;
  }
  for (const SeriesRow& s : r.series)
    for (size_t i = 0; i < n && i < s.replicas.size(); ++i) {
      running[i] += static_cast<double>(s.replicas[i].running);
      waiting[i] += static_cast<double>(s.replicas[i].waiting);
    }
  for (size_t i = 0; i < n && !r.series.empty(); ++i) {
    running[i] /= static_cast<double>(r.series.size());
    waiting[i] /= static_cast<double>(r.series.size());
  }
  w.per_replica("vllm:prefix_cache_queries_total", "counter",
                "Prefix cache queries, in terms of number of queried tokens (every lookup, as vLLM counts it).",
                queries);
  w.per_replica("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
                hits);
  w.per_replica("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", prompt);
  w.per_replica("vllm:num_preemptions_total", "counter", "Cumulative number of preemptions from the engine.",
                preempt);
  w.per_replica("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage (at the end of the run).",
                usage_end);
  w.per_replica("vllm:num_requests_running", "gauge",
                "Number of requests in model execution batches (at the end of the run).", running_end);
  w.per_replica("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed (at the end of the run).",
                waiting_end);
  w.per_replica("prefixsim:kv_cache_usage_perc_avg", "gauge",
                "KV-cache usage, time average over the replica's busy time.", usage);
  w.per_replica("prefixsim:num_requests_running_avg", "gauge",
                "Running requests, average over the run's series intervals.", running);
  w.per_replica("prefixsim:num_requests_waiting_avg", "gauge",
                "Waiting requests, average over the run's series intervals.", waiting);
  w.counter("vllm:generation_tokens", "Number of generation tokens processed (the whole fleet).",
            static_cast<double>(r.trace.output_tokens));
  w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds (the whole fleet).",
              t.ttft_s);
  w.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds (the whole fleet).",
              t.e2e_s);
  w.histogram("vllm:request_queue_time_seconds",
              "Histogram of time spent in WAITING phase for request (the whole fleet).", t.queue_s);
  w.histogram("vllm:time_per_output_token_seconds",
              "Histogram of time per output token in seconds (the whole fleet).", t.tpot_s);
  append_tier_metrics(r, w);
  return w.out;
}

}  // namespace

std::string render_metrics_prom(const RunReport& r) {
  PromWriter w;
  w.labels = "model_name=\"" + label_value(model_name(r.scenario)) + "\",engine=\"0\"";
  if (!r.replicas.empty() && r.timed) return render_fleet_metrics_prom(r, w);
  const PrefixCacheLookups& l = r.prefix_cache.lookups;
  w.counter("vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens (every lookup, as vLLM counts it).",
            static_cast<double>(l.queries));
  w.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            static_cast<double>(l.hits));
  w.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", static_cast<double>(r.trace.prompt_tokens));
  if (!r.timed) {  // cache mode: no time, so nothing else was measured
    append_tier_metrics(r, w);
    return w.out;
  }

  const TimedResults& t = *r.timed;
  w.counter("vllm:generation_tokens", "Number of generation tokens processed.",
            static_cast<double>(r.trace.output_tokens));
  w.counter("vllm:num_preemptions", "Cumulative number of preemptions from the engine.",
            static_cast<double>(t.engine.preemptions));
  double running = 0, waiting = 0;
  for (const SeriesRow& s : r.series) {
    running += static_cast<double>(s.running);
    waiting += static_cast<double>(s.waiting);
  }
  if (!r.series.empty()) {
    running /= static_cast<double>(r.series.size());
    waiting /= static_cast<double>(r.series.size());
  }
  const SeriesRow end = r.series.empty() ? SeriesRow{} : r.series.back();
  w.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage (at the end of the run).",
          end.kv_usage);
  w.gauge("vllm:num_requests_running", "Number of requests in model execution batches (at the end of the run).",
          static_cast<double>(end.running));
  w.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed (at the end of the run).",
          static_cast<double>(end.waiting));
  w.gauge("prefixsim:kv_cache_usage_perc_avg", "KV-cache usage, time average over the engine's busy time.",
          t.engine.kv_usage_mean);
  w.gauge("prefixsim:num_requests_running_avg", "Running requests, average over the run's series intervals.",
          running);
  w.gauge("prefixsim:num_requests_waiting_avg", "Waiting requests, average over the run's series intervals.",
          waiting);
  w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", t.ttft_s);
  w.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", t.e2e_s);
  w.histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", t.queue_s);
  w.histogram("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", t.tpot_s);
  append_tier_metrics(r, w);
  return w.out;
}

}  // namespace prefixsim
