#include "reports/compare_text.h"

#include "reports/run_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "prefixsim_config.h"

namespace prefixsim {
namespace compare_text_detail {  // named: the unity build joins this file with others that have their own helpers

using ojson = nlohmann::ordered_json;

const char* const kBeladyNote =
    "belady is the offline policy (evicts the block whose next use is farthest, known from a pre-pass over the "
    "trace). With blocks pinned by running requests and hits that need the whole prefix chain it is a strong "
    "heuristic, not a proven optimum: a policy may occasionally beat it.";

// GPU + KV tiers: what a planner sizing CPU memory reads.
double with_tiers(const CompareRow& r) { return hit_rate_with_tiers(r.hit_tokens, r.tier_hit_tokens, r.prompt_tokens); }

std::string pct(double x) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100.0 * x;
  return s.str();
}

// A double as JSON writes it: shortest round trip, NaN as null.
std::string json_number(double x) { return nlohmann::json(x).dump(); }

ojson gib_json(double gib) { return std::isinf(gib) ? ojson("inf") : ojson(gib); }

// An offloading size as given (2.5, 16, inf), in a stream of its own: the
// tables' streams carry the precision of the columns before it.
std::string gib_text(double gib) {
  std::ostringstream s;
  s << gib;
  return s.str();
}

ojson row_json(const CompareReport& rep, const CompareRow& r) {
  const CompareSize& k = rep.sizes[r.size];
  const double belady = rep.belady_hit_rate[r.size];
  ojson o;
  o["policy"] = rep.policy_names[r.policy];
  o["spec"] = rep.specs[r.policy];
  o["kv_blocks"] = k.kv_blocks;
  o["capacity_tokens"] = k.capacity_tokens;
  o["requests"] = r.requests;
  o["prompt_tokens"] = r.prompt_tokens;
  o["hit_tokens"] = r.hit_tokens;
  o["hit_rate"] = r.hit_rate;
  o["queried_blocks"] = r.queried_blocks;
  o["hit_blocks"] = r.hit_blocks;
  o["block_hit_rate"] = r.block_hit_rate;
  o["evictions"] = r.evictions;
  o["refused_requests"] = r.refused_requests;
  o["capacity_blocks"] = k.kv_blocks - 1;
  o["ghost_blocks"] = r.ghost_blocks;
  if (r.retention) {
    o["evicted_after_hit"] = r.evicted_after_hit;
    o["hits_on_recomputed"] = r.hits_on_recomputed;
  }
  if (!std::isnan(belady)) o["gap_to_belady"] = belady - r.hit_rate;
  if (rep.mode == "engine") {
    o["ttft_p50_ms"] = r.ttft_p50_ms;
    o["ttft_p99_ms"] = r.ttft_p99_ms;
  }
  if (rep.tiered) {
    o["kv_offloading_size_gib"] = gib_json(rep.offloading_gib[r.offload]);
    o["tier_hit_tokens"] = r.tier_hit_tokens;
    o["hit_rate_with_tiers"] = with_tiers(r);
  }
  if (rep.fleets) {
    o["router"] = rep.routers[r.router];
    o["replicas"] = rep.replicas[r.fleet];
    o["imbalance"] = std::isnan(r.imbalance) ? ojson(nullptr) : ojson(r.imbalance);
  }
  return o;
}

ojson hot_json(const CompareReport& rep) {
  ojson out = ojson::array();
  for (const CompareHotPrefix& h : rep.hot_prefixes)
    out.push_back({{"hash", h.hash},
                   {"blocks", h.blocks},
                   {"tokens", static_cast<int64_t>(h.blocks) * rep.block_size},
                   {"reuses", h.reuses},
                   {"tokens_saved", h.tokens_saved},
                   {"median_reuse_distance_blocks", h.median_distance},
                   {"reuse_distances_blocks", h.distances.size() <= 100 ? ojson(h.distances) : ojson()}});
  return out;
}

void csv_row(std::ostream& csv, const CompareReport& rep, const CompareRow& r) {
  const CompareSize& k = rep.sizes[r.size];
  const double belady = rep.belady_hit_rate[r.size];
  csv << rep.policy_names[r.policy] << ",\"" << rep.specs[r.policy] << "\"," << k.kv_blocks << ","
      << k.capacity_tokens << "," << json_number(r.hit_rate) << "," << json_number(r.block_hit_rate) << ","
      << r.hit_tokens << "," << r.prompt_tokens << "," << r.evictions << "," << r.refused_requests << ",";
  if (!std::isnan(belady)) csv << json_number(belady - r.hit_rate);
  csv << ",";
  if (rep.mode == "engine") csv << json_number(r.ttft_p50_ms) << "," << json_number(r.ttft_p99_ms);
  else csv << ",";
  if (rep.fleets) {
    csv << ",\"" << rep.routers[r.router] << "\"," << rep.replicas[r.fleet] << ",";
    if (!std::isnan(r.imbalance)) csv << json_number(r.imbalance);
  }
  if (rep.tiered) csv << "," << rep.offloading_gib[r.offload] << "," << json_number(with_tiers(r));
  csv << "\n";
}

void md_header(std::ostream& md, const CompareReport& rep) {
  md << "# prefixsim compare\n\n"
     << "Trace `" << rep.trace_path << "` (" << rep.trace_format << "): " << rep.requests << " requests, "
     << rep.prompt_tokens << " prompt tokens, " << rep.output_tokens << " output tokens. Block size "
     << rep.block_size << ", mode `" << rep.mode << "`: "
     << (rep.mode == "engine" ? "the discrete-event engine (vLLM scheduler, cost model of " + rep.model + " on " +
                                    rep.gpu + " at TP " + std::to_string(rep.tp) +
                                    "); hit rate counted at admission.\n\n"
                              : std::string("each request alone, in arrival order; hit rate = hit tokens / prompt "
                                            "tokens.\n\n"));
}

void md_size_row(std::ostream& md, const CompareReport& rep, const CompareRow& r) {
  const double belady = rep.belady_hit_rate[r.size];
  md << "| " << rep.specs[r.policy] << " | ";
  if (rep.fleets) {
    md << rep.routers[r.router] << " | " << rep.replicas[r.fleet] << " | ";
    if (std::isnan(r.imbalance)) md << "- | ";
    else md << std::fixed << std::setprecision(2) << r.imbalance << std::defaultfloat << " | ";
  }
  if (rep.tiered) md << gib_text(rep.offloading_gib[r.offload]) << " | " << pct(with_tiers(r)) << " | ";
  md << pct(r.hit_rate) << " | " << pct(r.block_hit_rate) << " | " << r.evictions << " | " << r.refused_requests
     << " |";
  if (!std::isnan(belady)) md << " " << pct(belady - r.hit_rate) << " |";
  if (rep.mode == "engine")
    md << " " << std::fixed << std::setprecision(1) << r.ttft_p50_ms << " | " << r.ttft_p99_ms << " |"
       << std::defaultfloat;
  md << "\n";
}

// One table per pool size: every run at that size.
void md_size_tables(std::ostream& md, const CompareReport& rep) {
  const bool engine = rep.mode == "engine";
  for (size_t z = 0; z < rep.sizes.size(); ++z) {
    const bool gap = !std::isnan(rep.belady_hit_rate[z]);
    md << "## " << rep.sizes[z].kv_blocks << " blocks (" << rep.sizes[z].capacity_tokens << " tokens)\n\n"
       << "| policy |" << (rep.fleets ? " router | replicas | imbalance |" : "")
       << (rep.tiered ? " CPU GiB | GPU + tiers hit rate % |" : "")
       << " hit rate % | block hit rate % | evictions | refused |" << (gap ? " gap to belady (points) |" : "")
       << (engine ? " TTFT p50 ms | TTFT p99 ms |" : "") << "\n| --- |" << (rep.fleets ? " --- | ---: | ---: |" : "")
       << (rep.tiered ? " ---: | ---: |" : "") << " ---: | ---: | ---: | ---: |" << (gap ? " ---: |" : "")
       << (engine ? " ---: | ---: |" : "") << "\n";
    for (const CompareRow& r : rep.rows)
      if (r.size == z) md_size_row(md, rep, r);
    md << "\n";
  }
}

// Hit rate against capacity: a line per (policy, router, fleet size,
// offloading size), a column per pool size.
void md_capacity_curve(std::ostream& md, const CompareReport& rep) {
  md << "## Hit rate (%) vs capacity\n\n| policy |";
  for (const CompareSize& k : rep.sizes) md << " " << k.capacity_tokens << " tok |";
  md << "\n| --- |";
  for (size_t z = 0; z < rep.sizes.size(); ++z) md << " ---: |";
  md << "\n";
  for (size_t p = 0; p < rep.specs.size(); ++p)
    for (size_t rt = 0; rt < rep.routers.size(); ++rt)
      for (size_t f = 0; f < rep.replicas.size(); ++f)
        for (size_t of = 0; of < rep.offloading_gib.size(); ++of) {
          md << "| " << rep.specs[p];
          if (rep.fleets) md << " · " << rep.routers[rt] << " x " << rep.replicas[f];
          if (rep.offloading) md << " · CPU " << gib_text(rep.offloading_gib[of]) << " GiB";
          md << " |";
          for (const CompareRow& r : rep.rows)
            if (r.policy == p && r.router == rt && r.fleet == f && r.offload == of)
              md << " " << pct(rep.tiered ? with_tiers(r) : r.hit_rate) << " |";
          md << "\n";
        }
}

void md_hot_prefixes(std::ostream& md, const CompareReport& rep) {
  const std::vector<CompareHotPrefix>& hot = rep.hot_prefixes;
  md << "\n## Hot prefixes: reuse distance against capacity and ghost list\n\n"
     << "Reuse distance: the distinct blocks touched from one use of a prefix to the next, its own included "
        "(median over its reuses). A pool with at least that many usable blocks keeps the prefix by recency "
        "alone (lru); a ghost list that reaches that far (capacity + ghost) at least recognises it when it "
        "returns (arc, 2q, s3fifo); beyond both, only frequency can keep it (lfu, lfu-da, gdsf, tinylfu's "
        "sketch, s3fifo's main queue).\n\n| # | prefix (last block) | tokens | reuses | median reuse distance "
        "(blocks) |\n| ---: | --- | ---: | ---: | ---: |\n";
  for (size_t h = 0; h < hot.size(); ++h)
    md << "| " << h + 1 << " | `" << hot[h].hash.substr(0, 12) << "` | "
       << static_cast<int64_t>(hot[h].blocks) * rep.block_size << " | " << hot[h].reuses << " | "
       << hot[h].median_distance << " |\n";
  md << "\n| policy | kv blocks | capacity | ghost | capacity + ghost | hot prefixes within capacity | within "
        "capacity + ghost |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const CompareRow& r : rep.rows) {
    const int64_t cap = rep.sizes[r.size].kv_blocks - 1;
    size_t within = 0, within_ghost = 0;
    for (const CompareHotPrefix& h : hot) {
      within += static_cast<int64_t>(h.median_distance) <= cap ? 1 : 0;
      within_ghost += static_cast<int64_t>(h.median_distance) <= cap + r.ghost_blocks ? 1 : 0;
    }
    md << "| " << rep.specs[r.policy] << " | " << rep.sizes[r.size].kv_blocks << " | " << cap << " | "
       << r.ghost_blocks << " | " << cap + r.ghost_blocks << " | " << within << " of " << hot.size() << " | "
       << within_ghost << " of " << hot.size() << " |\n";
  }
}

void md_retention(std::ostream& md, const CompareReport& rep) {
  md << "\n## What each policy kept\n\n"
     << "Evictions that took a block hit since it was cached, and hits on content the pool had evicted and "
        "computed again. A policy that never evicts a once-hit block while never-hit ones are free (lfu without "
        "aging; sieve before its hand laps; tinylfu while its sketch ranks hit blocks above new ones) keeps "
        "contexts whose sessions ended; a policy that admits returning content to a protected queue (arc's T2, "
        "s3fifo's main, on a ghost hit) draws its hits from recomputed content.\n\n"
     << "| policy | kv blocks | evictions | of once-hit blocks % | hit blocks | on recomputed content % |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  auto share = [](uint64_t part, uint64_t whole) {
    return whole ? pct(static_cast<double>(part) / static_cast<double>(whole)) : std::string("-");
  };
  for (const CompareRow& r : rep.rows) {
    if (!r.retention) continue;
    md << "| " << rep.specs[r.policy] << " | " << rep.sizes[r.size].kv_blocks << " | " << r.evictions << " | "
       << share(r.evicted_after_hit, r.evictions) << " | " << r.hit_blocks << " | "
       << share(r.hits_on_recomputed, r.hit_blocks) << " |\n";
  }
}

}  // namespace compare_text_detail


nlohmann::ordered_json compare_to_json(const CompareReport& r) {
  using namespace compare_text_detail;
  nlohmann::ordered_json j;
  j["schema"] = "prefixsim.compare/1";
  j["tool"] = {{"name", "prefixsim"}, {"version", PREFIXSIM_VERSION}};
  j["mode"] = r.mode;
  j["trace"] = {{"path", r.trace_path},
                {"format", r.trace_format},
                {"requests", r.requests},
                {"prompt_tokens", r.prompt_tokens},
                {"output_tokens", r.output_tokens}};
  j["block_size"] = r.block_size;
  if (r.mode == "engine") j["cost_model"] = r.cost_model;
  j["policies"] = r.specs;
  if (r.fleets) {
    j["routers"] = r.routers;
    j["replicas"] = r.replicas;
  }
  if (r.offloading) {
    nlohmann::ordered_json gibs = nlohmann::ordered_json::array();
    for (double g : r.offloading_gib) gibs.push_back(gib_json(g));
    j["kv_offloading_sizes_gib"] = gibs;
  }
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  for (const CompareSize& k : r.sizes)
    sizes.push_back({{"kv_blocks", k.kv_blocks}, {"capacity_tokens", k.capacity_tokens},
                     {"bytes_per_block", k.bytes_per_block}, {"source", k.source}});
  j["sizes"] = sizes;
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const CompareRow& row : r.rows) results.push_back(row_json(r, row));
  j["results"] = results;
  j["hot_prefixes"] = hot_json(r);
  if (r.offline_policy) j["notes"] = {kBeladyNote};
  return j;
}

std::string render_compare_json(const CompareReport& r) { return compare_to_json(r).dump(2) + "\n"; }

std::string render_compare_csv(const CompareReport& r) {
  using namespace compare_text_detail;
  std::ostringstream csv;
  csv << "policy,spec,kv_blocks,capacity_tokens,hit_rate,block_hit_rate,hit_tokens,prompt_tokens,evictions,"
         "refused_requests,gap_to_belady,ttft_p50_ms,ttft_p99_ms"
      << (r.fleets ? ",router,replicas,imbalance" : "")
      << (r.tiered ? ",kv_offloading_size_gib,hit_rate_with_tiers\n" : "\n");
  for (const CompareRow& row : r.rows) csv_row(csv, r, row);
  return csv.str();
}

std::string render_compare_md(const CompareReport& r) {
  using namespace compare_text_detail;
  std::ostringstream md;
  md_header(md, r);
  md_size_tables(md, r);
  md_capacity_curve(md, r);
  if (!r.hot_prefixes.empty()) md_hot_prefixes(md, r);
  if (std::any_of(r.rows.begin(), r.rows.end(), [](const CompareRow& row) { return row.retention; }))
    md_retention(md, r);
  uint64_t refused = 0;
  for (const CompareRow& row : r.rows) refused += row.refused_requests;
  if (refused)
    md << "\nSome requests need more blocks than a pool holds; they can never run and are left out of that "
          "pool's figures (column `refused`).\n";
  if (r.offline_policy) md << "\nNote: " << kBeladyNote << "\n";
  return md.str();
}

std::string render_compare_summary(const CompareReport& r, const std::string& out_dir) {
  using namespace compare_text_detail;
  std::ostringstream s;
  s << "compare: " << r.rows.size() << " runs (" << r.specs.size() << " policies x " << r.sizes.size() << " sizes"
    << (r.fleets ? " x " + std::to_string(r.routers.size()) + " routers x " + std::to_string(r.replicas.size()) +
                       " fleet sizes"
                 : std::string())
    << ") of " << r.requests << " requests; wrote " << out_dir << "/compare.{json,csv,md,html}\n";
  return s.str();
}

}  // namespace prefixsim
