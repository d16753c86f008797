// `prefixsim compare`: the researcher's bench. One trace, parsed and hashed
// once, replayed under every (policy, pool size) pair on the very same block
// manager, the pairs spread over threads; compare.json, compare.csv and
// compare.md side by side, with each policy's gap to the offline belady.
//
// Modes: `cache` (each request alone, no time) replays the prepared hashes;
// `engine` runs every pair through the discrete-event engine (the replay
// scheduler and cost model) and adds TTFT p50/p99. Engine mode keeps the
// parsed requests in memory (the prepared hashes are not enough to schedule
// them), and refuses belady, whose future is indexed by request while the
// engine looks requests up again after refusals and preemptions.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "policies/registry.h"
#include "prefixsim_config.h"
#include "sim/base/atomic_file.h"
#include "sim/base/parallel_for.h"
#include "sim/base/progress_line.h"
#include "sim/engine/cache_replay.h"
#include "sim/cost/catalog.h"
#include "sim/cli/commands.h"
#include "sim/scenario/offline_future.h"
#include "sim/cli/options.h"
#include "sim/scenario/point_run.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_run.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/engine/prefix_reuse.h"
#include "reports/latency.h"
#include "reports/outputs.h"
#include "sim/base/error.h"
#include "sim/base/json_out.h"
#include "sim/engine/vector_source.h"
#include "sim/fleet/fleet.h"
#include "sim/cost/kv_sizing.h"
#include "sim/cost/shipped_profiles.h"
#include "traces/trace_reader.h"

namespace prefixsim::cli {
namespace {

// "lru,s3fifo:small=0.2,promote=2,lfu" -> {"lru", "s3fifo:small=0.2,promote=2", "lfu"}:
// an item with '=' but no ':' continues the previous spec's parameters
// (--policies, --routers).
std::vector<std::string> split_specs(const std::string& flag, const std::string& list) {
  std::vector<std::string> out;
  if (!list.empty() && list.back() == ',') throw InputError(flag + ": empty entry in '" + list + "'");
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw InputError(flag + ": empty entry in '" + list + "'");
    const bool continues = item.find('=') != std::string::npos && item.find(':') == std::string::npos;
    if (continues) {
      if (out.empty()) throw InputError(flag + ": '" + item + "' is a parameter with nothing before it");
      out.back() += "," + item;
    } else {
      out.push_back(item);
    }
  }
  if (out.empty()) throw InputError(flag + ": nothing given");
  return out;
}

template <typename T>
std::vector<T> split_numbers(const std::string& flag, const std::string& list) {
  std::vector<T> out;
  // getline drops a trailing empty item: "50," is a list with an empty entry.
  if (list.empty() || list.back() == ',' || list.front() == ',')
    throw InputError(flag + ": empty entry in '" + list + "'");
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw InputError(flag + ": empty entry in '" + list + "'");
    std::istringstream v(item);
    T x{};
    if (!(v >> x) || !v.eof() || !(x > 0)) throw InputError(flag + ": '" + item + "' is not a positive number");
    out.push_back(x);
  }
  if (out.empty()) throw InputError(flag + ": no size given");
  return out;
}

// How many of the hottest prefixes compare explains (prefix_reuse.h).
constexpr size_t kHotPrefixes = 5;

struct Pair {
  size_t policy = 0;  // index into the spec list
  size_t size = 0;    // index into the pool sizes
  size_t router = 0;  // index into the routers (engine mode; one "round-robin" otherwise)
  size_t fleet = 0;   // index into the fleet sizes (replicas)
  size_t offload = 0; // index into the CPU offloading sizes
};

// --kv-offloading-size's list: GiB per replica, 0 for none, inf unbounded.
std::vector<double> offload_list(const std::string& list) {
  std::vector<double> out;
  std::string_view rest = list;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    double v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || !(v >= 0))
      throw InputError("--kv-offloading-size: '" + item + "' is not a size in GiB (0: none, inf: unbounded)");
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

// GPU + KV tiers: what a planner sizing CPU memory reads.
double with_tiers(const CacheReplayResult& r) {
  return r.prompt_tokens ? static_cast<double>(r.hit_tokens + r.tier_hit_tokens) / static_cast<double>(r.prompt_tokens)
                         : NAN;
}

std::string pct(double x) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100.0 * x;
  return s.str();
}

}  // namespace

int cmd_compare(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("policies", po::value<std::string>()->default_value("all"),
       "comma-separated policies, name[:key=value,...] each, or 'all' (every registered policy)")
      ("kv-blocks", po::value<std::string>(), "pool sizes in blocks, null block included: N1,N2,...")
      ("kv-tokens", po::value<std::string>(), "pool capacities in tokens: T1,T2,... (rounded up to blocks)")
      ("kv-gb", po::value<std::string>(), "KV memory per GPU in GiB: G1,G2,... (with --model, --gpu, --tp)")
      ("mode", po::value<std::string>()->default_value("cache"),
       "cache (each request alone, no time) or engine (discrete-event engine: adds TTFT p50/p99)")
      ("routers", po::value<std::string>(),
       "engine mode: fleets behind each of these routers, name[:key=value,...] each (see replay --router)")
      ("replicas", po::value<std::string>(),
       "engine mode: fleet sizes N1,N2,...: every policy x size x router runs on a fleet of each (default 1)")
      ("kv-offloading-size", po::value<std::string>(),
       "CPU offloading sizes, GiB per replica: S1,S2,... (0: none, inf: unbounded; see replay "
       "--kv-offloading-size): every pair runs with each, reporting the GPU + CPU hit rate")
      ("threads", po::value<int>()->default_value(0), "worker threads (default: one per core)")
      ("quiet", "print nothing on success");
  // The settings replay takes too, from the same table: an engine pair is
  // the replay with the same flags.
  add_scenario_options(opts, kForCompare);
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm,
                  "prefixsim compare TRACE --policies lru,lfu,... --kv-blocks N1,N2,... [--mode cache] [--out DIR]",
                  "Replays one trace under every (policy, pool size) pair on the same vLLM-exact block\n"
                  "manager and writes compare.json, compare.csv and compare.md into --out: hit rate in\n"
                  "tokens and blocks, evictions, each policy's gap to the offline `belady`, and the\n"
                  "hit-rate-vs-capacity curve of each policy. The trace is parsed and hashed once; the\n"
                  "pairs run in parallel and the results do not depend on the thread count.\n"
                  "Cache mode: each request alone in arrival order (lookup, prompt + output allocated,\n"
                  "freed last block first); hit rate = hit tokens / prompt tokens. Engine mode: the\n"
                  "discrete-event engine of `replay` (vLLM scheduler, cost model of --model on --gpu:\n"
                  "the roofline, or --profile) per pair, adding TTFT p50/p99; hit rate counted at admission. Also writes\n"
                  "compare.html (curves and tables, self-contained).\n"
                  "Fleets (engine mode): --routers a,b --replicas n1,n2 run every pair on a fleet of each size\n"
                  "behind each router, adding the load imbalance (max / mean requests per replica)."))
    return 0;
  if (!vm.count("trace")) throw InputError("compare: missing the TRACE argument (see prefixsim compare --help)");
  const std::string mode = vm["mode"].as<std::string>();
  if (mode != "cache" && mode != "engine") throw InputError("--mode: '" + mode + "' is not a mode (cache or engine)");
  Scenario scen;
  apply_scenario_flags(vm, kForCompare, scen);
  if (!valid_utf8(scen.trace)) throw InputError("compare: TRACE: must be valid UTF-8 (it goes into compare.json)");
  scen.mode = mode;
  validate(scen);
  const int32_t block_size = scen.block_size;
  const int given = static_cast<int>(vm.count("kv-blocks")) + static_cast<int>(vm.count("kv-tokens")) +
                    static_cast<int>(vm.count("kv-gb"));
  if (given != 1) throw InputError("compare: give exactly one of --kv-blocks, --kv-tokens, --kv-gb");

  // Policies: validated before the trace is read.
  std::vector<std::string> specs;
  if (vm["policies"].as<std::string>() == "all") {
    for (const PolicyInfo& p : policy_registry()) specs.push_back(p.name);
  } else {
    specs = split_specs("--policies", vm["policies"].as<std::string>());
  }
  std::vector<std::string> names;
  bool need_future = false;
  for (const std::string& s : specs) {
    names.push_back(canonical_policy_name(s));
    need_future = need_future || needs_future(s);
  }
  {
    PolicyContext probe;
    probe.block_size = block_size;
    probe.future = no_future();
    for (const std::string& s : specs) make_policy(s, probe);
  }

  // Fleets: routers x replicas (engine mode), validated before the trace is read.
  const bool fleets = vm.count("routers") || vm.count("replicas");
  std::vector<std::string> routers = {scen.router};
  std::vector<int64_t> fleet_sizes = {1};
  if (fleets) {
    if (mode != "engine") throw InputError("--routers/--replicas: fleets run in engine mode (add --mode engine)");
    if (vm.count("routers")) routers = split_specs("--routers", vm["routers"].as<std::string>());
    if (vm.count("replicas")) fleet_sizes = split_numbers<int64_t>("--replicas", vm["replicas"].as<std::string>());
    for (int64_t n : fleet_sizes)
      if (n > 4096) throw InputError("--replicas: " + std::to_string(n) + " is more than 4096");
    for (const std::string& r : routers) make_router(r, RouterContext{});
  }

  // CPU offloading sizes (validated, with any --kv-tier, before the trace is read).
  const bool offloading = vm.count("kv-offloading-size") > 0;
  const std::vector<double> offloads =
      offloading ? offload_list(vm["kv-offloading-size"].as<std::string>()) : std::vector<double>{0};
  const bool tiered = offloading || !scen.kv_tiers.empty();

  // Pool sizes, through the same sizing as replay.
  if (mode != "engine" && !scen.profile.empty())
    throw InputError("--profile: only engine mode has a cost model (add --mode engine)");
  const ResolvedScenario resolved = resolve_scenario(scen);
  for (double o : offloads) {  // a bad tier is exit 2 now, not after the trace is read
    Scenario probe = scen;
    if (offloading) probe.kv_offloading_size = o;
    scenario_tiers(probe, *resolved.model);
  }
  std::vector<KvSizing> sizes;
  auto size_one = [&](auto set) {
    KvSizingInput in = kv_sizing_input(scen, resolved);
    set(in);
    sizes.push_back(size_kv_pool(in));
  };
  if (vm.count("kv-blocks"))
    for (int64_t n : split_numbers<int64_t>("--kv-blocks", vm["kv-blocks"].as<std::string>()))
      size_one([n](KvSizingInput& in) { in.kv_blocks = n; });
  if (vm.count("kv-tokens"))
    for (int64_t n : split_numbers<int64_t>("--kv-tokens", vm["kv-tokens"].as<std::string>()))
      size_one([n](KvSizingInput& in) { in.kv_tokens = n; });
  if (vm.count("kv-gb"))
    for (double g : split_numbers<double>("--kv-gb", vm["kv-gb"].as<std::string>()))
      size_one([g](KvSizingInput& in) { in.kv_gb = g; });
  for (const KvSizing& k : sizes)
    if (k.num_blocks < 2) throw InputError("compare: a pool needs at least 2 blocks (block 0 is the null block)");

  // The trace, parsed and hashed once.
  const std::string trace_path = scen.trace;
  {  // outputs checked before the (long) run
    const std::string& out_dir = scen.out;
    check_output_dir(out_dir, "--out");
    for (const char* name : {"/compare.json", "/compare.csv", "/compare.md", "/compare.html"}) {
      check_output_file(out_dir + name, "--out");
      check_not_an_input(out_dir + name, "--out", {trace_path});
    }
  }
  auto src = open_scenario_input(scen, resolved);
  const std::string format = src->format();
  std::vector<Request> requests;  // engine mode only
  PreparedTrace trace;
  PolicyContext ctx;
  ctx.block_size = block_size;
  if (mode == "engine") {
    if (need_future) refuse_future_in_engine_mode("--policies");
    Request r;
    while (src->next(r)) requests.push_back(r);
    trace = prepare_trace(std::span<const Request>(requests), block_size);
  } else {
    trace = prepass(*src, block_size, need_future, ctx);
  }
  src.reset();
  const PointInput input{&requests, &trace, format};
  if (trace.size() == 0) throw InputError(trace_path + ": the trace has no requests");

  // Every pair, over a pool of threads; each result lands in its own slot.
  std::vector<Pair> pairs;
  for (size_t z = 0; z < sizes.size(); ++z)
    for (size_t p = 0; p < specs.size(); ++p)
      for (size_t rt = 0; rt < routers.size(); ++rt)
        for (size_t f = 0; f < fleet_sizes.size(); ++f)
          for (size_t o = 0; o < offloads.size(); ++o) pairs.push_back({p, z, rt, f, o});
  // Each pair's scenario: the compare's, with its router, fleet size and offloading.
  auto pair_scenario = [&](const Pair& pr) {
    Scenario ps = scen;
    ps.router = routers[pr.router];
    ps.replicas = static_cast<int32_t>(fleet_sizes[pr.fleet]);
    if (offloading) ps.kv_offloading_size = offloads[pr.offload];
    return ps;
  };
  int threads = resolve_threads(vm);
  threads = std::min<int>(threads, static_cast<int>(pairs.size()));
  std::vector<PointResult> results(pairs.size());
  // Bigger pools replay slower: they go first.
  const auto order = heaviest_first(pairs.size(), [&](size_t i) {
    return sizes[pairs[i].size].num_blocks * fleet_sizes[pairs[i].fleet] + (offloads[pairs[i].offload] > 0 ? 1 : 0);
  });
  // Pairs done so far, on a terminal (a whole archive can take minutes).
  ProgressLine progress(!vm.count("quiet") && ::isatty(2));
  std::mutex progress_mu;
  size_t done = 0;
  parallel_for(order.size(), threads, [&](size_t k) {
    const size_t i = order[k];
    results[i] = run_point(input, pair_scenario(pairs[i]), resolved, specs[pairs[i].policy], ctx,
                           sizes[pairs[i].size].num_blocks);
    const std::lock_guard<std::mutex> lock(progress_mu);
    ++done;
    if (progress.due())
      progress.draw("compare: " + std::to_string(done) + " of " + std::to_string(pairs.size()) + " pairs done (last: " +
                    names[pairs[i].policy] + " at " + std::to_string(sizes[pairs[i].size].num_blocks) + " blocks)");
  });
  progress.clear();
  for (const PointResult& r : results)
    if (r.error) std::rethrow_exception(r.error);

  // The hot-prefix explanation: the hottest shared prefixes' reuse distances
  // against each pair's usable blocks and ghost list (prefix_reuse.h).
  const std::vector<PrefixReuse> hot = hot_prefix_reuse(trace, kHotPrefixes);
  std::vector<int64_t> ghosts(pairs.size(), 0);
  for (size_t i = 0; i < pairs.size(); ++i)  // a pool of the pair's size sizes the policy's ghost list
    ghosts[i] = BlockPool(static_cast<int32_t>(sizes[pairs[i].size].num_blocks), true,
                          make_policy(specs[pairs[i].policy], ctx))
                    .policy()
                    .ghost_capacity();

  // Belady's hit rate at each size, for the gaps.
  std::vector<double> belady(sizes.size(), NAN);
  for (size_t i = 0; i < pairs.size(); ++i)
    if (names[pairs[i].policy] == "belady") belady[pairs[i].size] = results[i].cache.hit_rate;

  const std::string belady_note =
      "belady is the offline policy (evicts the block whose next use is farthest, known from a pre-pass over the "
      "trace). With blocks pinned by running requests and hits that need the whole prefix chain it is a strong "
      "heuristic, not a proven optimum: a policy may occasionally beat it.";

  // compare.json
  nlohmann::ordered_json j;
  j["schema"] = "prefixsim.compare/1";
  j["tool"] = {{"name", "prefixsim"}, {"version", PREFIXSIM_VERSION}};
  j["mode"] = mode;
  j["trace"] = {{"path", trace_path},
                {"format", format},
                {"requests", trace.size()},
                {"prompt_tokens", trace.prompt_tokens},
                {"output_tokens", trace.output_tokens}};
  j["block_size"] = block_size;
  if (mode == "engine") j["cost_model"] = Replica(scen, resolved, 2, make_policy("lru", ctx)).exec.to_json();
  j["policies"] = specs;
  if (fleets) {
    j["routers"] = routers;
    j["replicas"] = fleet_sizes;
  }
  if (offloading) {
    nlohmann::ordered_json gibs = nlohmann::ordered_json::array();
    for (double g : offloads) gibs.push_back(std::isinf(g) ? nlohmann::ordered_json("inf") : nlohmann::ordered_json(g));
    j["kv_offloading_sizes_gib"] = gibs;
  }
  nlohmann::ordered_json jsizes = nlohmann::ordered_json::array();
  for (const KvSizing& k : sizes)
    jsizes.push_back({{"kv_blocks", k.num_blocks}, {"capacity_tokens", k.capacity_tokens},
                      {"bytes_per_block", k.bytes_per_block}, {"source", k.source}});
  j["sizes"] = jsizes;
  nlohmann::ordered_json jres = nlohmann::ordered_json::array();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const CacheReplayResult& r = results[i].cache;
    const KvSizing& k = sizes[pairs[i].size];
    nlohmann::ordered_json o;
    o["policy"] = names[pairs[i].policy];
    o["spec"] = specs[pairs[i].policy];
    o["kv_blocks"] = k.num_blocks;
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
    o["capacity_blocks"] = k.num_blocks - 1;
    o["ghost_blocks"] = ghosts[i];
    if (!std::isnan(belady[pairs[i].size])) o["gap_to_belady"] = belady[pairs[i].size] - r.hit_rate;
    if (mode == "engine") {
      o["ttft_p50_ms"] = results[i].ttft.p50;
      o["ttft_p99_ms"] = results[i].ttft.p99;
    }
    if (tiered) {
      const double gib = offloads[pairs[i].offload];
      o["kv_offloading_size_gib"] = std::isinf(gib) ? nlohmann::ordered_json("inf") : nlohmann::ordered_json(gib);
      o["tier_hit_tokens"] = r.tier_hit_tokens;
      o["hit_rate_with_tiers"] = with_tiers(r);
    }
    if (fleets) {
      o["router"] = routers[pairs[i].router];
      o["replicas"] = fleet_sizes[pairs[i].fleet];
      o["imbalance"] = std::isnan(results[i].imbalance) ? nlohmann::ordered_json(nullptr)
                                                        : nlohmann::ordered_json(results[i].imbalance);
    }
    jres.push_back(std::move(o));
  }
  j["results"] = jres;
  nlohmann::ordered_json jhot = nlohmann::ordered_json::array();
  for (const PrefixReuse& h : hot)
    jhot.push_back({{"hash", to_hex(h.last)},
                    {"blocks", h.blocks},
                    {"tokens", static_cast<int64_t>(h.blocks) * block_size},
                    {"reuses", h.reuses},
                    {"tokens_saved", h.tokens_saved},
                    {"median_reuse_distance_blocks", h.median_distance},
                    {"reuse_distances_blocks", h.distances.size() <= 100 ? nlohmann::ordered_json(h.distances)
                                                                          : nlohmann::ordered_json()}});
  j["hot_prefixes"] = jhot;
  if (need_future) j["notes"] = {belady_note};

  // compare.csv
  std::ostringstream csv;
  csv << "policy,spec,kv_blocks,capacity_tokens,hit_rate,block_hit_rate,hit_tokens,prompt_tokens,evictions,"
         "refused_requests,gap_to_belady,ttft_p50_ms,ttft_p99_ms"
      << (fleets ? ",router,replicas,imbalance" : "") << (tiered ? ",kv_offloading_size_gib,hit_rate_with_tiers\n" : "\n");
  for (size_t i = 0; i < pairs.size(); ++i) {
    const CacheReplayResult& r = results[i].cache;
    const KvSizing& k = sizes[pairs[i].size];
    nlohmann::json hr = r.hit_rate, bhr = r.block_hit_rate;  // shortest round-trip doubles
    csv << names[pairs[i].policy] << ",\"" << specs[pairs[i].policy] << "\"," << k.num_blocks << ","
        << k.capacity_tokens << "," << hr.dump() << "," << bhr.dump() << "," << r.hit_tokens << ","
        << r.prompt_tokens << "," << r.evictions << "," << r.refused_requests << ",";
    if (!std::isnan(belady[pairs[i].size])) csv << nlohmann::json(belady[pairs[i].size] - r.hit_rate).dump();
    csv << ",";
    if (mode == "engine") csv << nlohmann::json(results[i].ttft.p50).dump() << "," << nlohmann::json(results[i].ttft.p99).dump();
    else csv << ",";
    if (fleets) {
      csv << ",\"" << routers[pairs[i].router] << "\"," << fleet_sizes[pairs[i].fleet] << ",";
      if (!std::isnan(results[i].imbalance)) csv << nlohmann::json(results[i].imbalance).dump();
    }
    if (tiered) csv << "," << offloads[pairs[i].offload] << "," << nlohmann::json(with_tiers(r)).dump();
    csv << "\n";
  }

  // compare.md
  std::ostringstream md;
  md << "# prefixsim compare\n\n"
     << "Trace `" << trace_path << "` (" << format << "): " << trace.size() << " requests, " << trace.prompt_tokens
     << " prompt tokens, " << trace.output_tokens << " output tokens. Block size " << block_size << ", mode `"
     << mode << "`: "
     << (mode == "engine" ? "the discrete-event engine (vLLM scheduler, cost model of " + resolved.model->name +
                                " on " + resolved.gpu->name + " at TP " + std::to_string(scen.tp) +
                                "); hit rate counted at admission.\n\n"
                          : std::string("each request alone, in arrival order; hit rate = hit tokens / prompt tokens.\n\n"));
  for (size_t z = 0; z < sizes.size(); ++z) {
    md << "## " << sizes[z].num_blocks << " blocks (" << sizes[z].capacity_tokens << " tokens)\n\n"
       << "| policy |" << (fleets ? " router | replicas | imbalance |" : "")
       << (tiered ? " CPU GiB | GPU + tiers hit rate % |" : "")
       << " hit rate % | block hit rate % | evictions | refused |"
       << (std::isnan(belady[z]) ? "" : " gap to belady (points) |") << (mode == "engine" ? " TTFT p50 ms | TTFT p99 ms |" : "")
       << "\n| --- |" << (fleets ? " --- | ---: | ---: |" : "") << (tiered ? " ---: | ---: |" : "")
       << " ---: | ---: | ---: | ---: |"
       << (std::isnan(belady[z]) ? "" : " ---: |") << (mode == "engine" ? " ---: | ---: |" : "") << "\n";
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (pairs[i].size != z) continue;
      const CacheReplayResult& r = results[i].cache;
      md << "| " << specs[pairs[i].policy] << " | ";
      if (fleets) {
        md << routers[pairs[i].router] << " | " << fleet_sizes[pairs[i].fleet] << " | ";
        if (std::isnan(results[i].imbalance)) md << "- | ";
        else md << std::fixed << std::setprecision(2) << results[i].imbalance << std::defaultfloat << " | ";
      }
      if (tiered) md << offloads[pairs[i].offload] << " | " << pct(with_tiers(r)) << " | ";
      md << pct(r.hit_rate) << " | " << pct(r.block_hit_rate) << " | "
         << r.evictions << " | " << r.refused_requests << " |";
      if (!std::isnan(belady[z])) md << " " << pct(belady[z] - r.hit_rate) << " |";
      if (mode == "engine")
        md << " " << std::fixed << std::setprecision(1) << results[i].ttft.p50 << " | " << results[i].ttft.p99
           << " |" << std::defaultfloat;
      md << "\n";
    }
    md << "\n";
  }
  md << "## Hit rate (%) vs capacity\n\n| policy |";
  for (const KvSizing& k : sizes) md << " " << k.capacity_tokens << " tok |";
  md << "\n| --- |";
  for (size_t z = 0; z < sizes.size(); ++z) md << " ---: |";
  md << "\n";
  for (size_t p = 0; p < specs.size(); ++p)
    for (size_t rt = 0; rt < routers.size(); ++rt)
      for (size_t f = 0; f < fleet_sizes.size(); ++f)
        for (size_t of = 0; of < offloads.size(); ++of) {
          md << "| " << specs[p];
          if (fleets) md << " · " << routers[rt] << " x " << fleet_sizes[f];
          if (offloading) md << " · CPU " << offloads[of] << " GiB";
          md << " |";
          for (size_t i = 0; i < pairs.size(); ++i)
            if (pairs[i].policy == p && pairs[i].router == rt && pairs[i].fleet == f && pairs[i].offload == of)
              md << " " << pct(tiered ? with_tiers(results[i].cache) : results[i].cache.hit_rate) << " |";
          md << "\n";
        }
  if (!hot.empty()) {
    md << "\n## Hot prefixes: reuse distance against capacity and ghost list\n\n"
       << "Reuse distance: the distinct blocks touched from one use of a prefix to the next, its own included "
          "(median over its reuses). A pool with at least that many usable blocks keeps the prefix by recency "
          "alone (lru); a ghost list that reaches that far (capacity + ghost) at least recognises it when it "
          "returns (arc, 2q, s3fifo); beyond both, only frequency can keep it (lfu, lfu-da, gdsf, tinylfu's "
          "sketch, s3fifo's main queue).\n\n| # | prefix (last block) | tokens | reuses | median reuse distance "
          "(blocks) |\n| ---: | --- | ---: | ---: | ---: |\n";
    for (size_t h = 0; h < hot.size(); ++h)
      md << "| " << h + 1 << " | `" << to_hex(hot[h].last).substr(0, 12) << "` | "
         << static_cast<int64_t>(hot[h].blocks) * block_size << " | " << hot[h].reuses << " | "
         << hot[h].median_distance << " |\n";
    md << "\n| policy | kv blocks | capacity | ghost | capacity + ghost | hot prefixes within capacity | within "
          "capacity + ghost |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (size_t i = 0; i < pairs.size(); ++i) {
      const int64_t cap = sizes[pairs[i].size].num_blocks - 1;
      size_t within = 0, within_ghost = 0;
      for (const PrefixReuse& h : hot) {
        within += static_cast<int64_t>(h.median_distance) <= cap ? 1 : 0;
        within_ghost += static_cast<int64_t>(h.median_distance) <= cap + ghosts[i] ? 1 : 0;
      }
      md << "| " << specs[pairs[i].policy] << " | " << sizes[pairs[i].size].num_blocks << " | " << cap << " | "
         << ghosts[i] << " | " << cap + ghosts[i] << " | " << within << " of " << hot.size() << " | " << within_ghost
         << " of " << hot.size() << " |\n";
    }
  }
  uint64_t refused = 0;
  for (const PointResult& r : results) refused += r.cache.refused_requests;
  if (refused)
    md << "\nSome requests need more blocks than a pool holds; they can never run and are left out of that "
          "pool's figures (column `refused`).\n";
  if (need_future) md << "\nNote: " << belady_note << "\n";

  const std::string& out_dir = scen.out;
  OutputSet outputs(out_dir, "--out");  // the four files appear together or not at all
  outputs.add("compare.json", j.dump(2) + "\n");
  outputs.add("compare.csv", csv.str());
  outputs.add("compare.md", md.str());
  outputs.add("compare.html", render_compare_html(nlohmann::json::parse(j.dump())));
  outputs.commit();
  if (!vm.count("quiet"))
    std::cout << "compare: " << pairs.size() << " runs (" << specs.size() << " policies x " << sizes.size()
              << " sizes"
              << (fleets ? " x " + std::to_string(routers.size()) + " routers x " + std::to_string(fleet_sizes.size()) +
                               " fleet sizes"
                         : std::string())
              << ") of " << trace.size() << " requests; wrote " << out_dir << "/compare.{json,csv,md,html}\n";
  return 0;
}

}  // namespace prefixsim::cli
