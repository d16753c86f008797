// prefixsim analyze: prefix reuse of a trace -> analysis.json + analysis.md.
#include <filesystem>
#include <iostream>

#include "policies/registry.h"
#include "sim/base/atomic_file.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"
#include "sim/base/json_out.h"
#include "sim/scenario/scenario.h"
#include "traces/analysis.h"
#include "traces/trace_reader.h"

namespace prefixsim::cli {

namespace {
// The reference pool of the literature check: Llama-70B INT4 on one
// H100, 45 GB of KV pool.
constexpr int64_t kDefaultLruKvTokens = 137392;

struct AnalyzeSettings {
  AnalysisOptions ao;
  TraceOptions to;
  int64_t lru_tokens = 0;
  std::unique_ptr<EvictionPolicy> lru;
};

// The flags as the analyzer's and the reader's options (exit 2 past a
// range). The ones a run shares (trace, its format, block sizes, sort, out)
// come from the scenario table, checked with its ranges.
AnalyzeSettings analyze_settings(const po::variables_map& vm, const Scenario& s) {
  AnalyzeSettings st;
  AnalysisOptions& ao = st.ao;
  TraceOptions& to = st.to;
  ao.block_size = s.block_size;
  ao.top_k = vm["top"].as<size_t>();
  ao.window_s = vm["window"].as<double>();
  if (!(ao.window_s > 0)) throw InputError("analyze: --window must be positive");
  const int64_t lru_tokens = st.lru_tokens = vm["lru-kv-tokens"].as<int64_t>();
  if (lru_tokens < 0) throw InputError("analyze: --lru-kv-tokens must be >= 0");
  if (lru_tokens > 0) {
    ao.lru_num_blocks = lru_tokens / ao.block_size + 1;  // + the null block
    st.lru = make_policy("lru");
  }
  const int64_t tier_gpu_tokens = vm["tier-gpu-tokens"].as<int64_t>();
  if (tier_gpu_tokens < 0 || tier_gpu_tokens > (int64_t{1} << 40))
    throw InputError("analyze: --tier-gpu-tokens must be in [0, 2^40]");
  ao.tier_gpu_blocks = tier_gpu_tokens / ao.block_size;
  if (tier_gpu_tokens > 0 && ao.tier_gpu_blocks == 0)
    throw InputError("analyze: --tier-gpu-tokens must hold at least one block");
  ao.max_distinct_blocks = vm["max-distinct-blocks"].as<uint64_t>();
  if (ao.max_distinct_blocks < 1 || ao.max_distinct_blocks > (uint64_t{1} << 32) - 2)
    throw InputError("analyze: --max-distinct-blocks must be in [1, 2^32 - 2] (block ids are 32-bit)");
  to.format = s.format;
  to.trace_block_size = s.trace_block_size;
  to.sort = s.sort;
  return st;
}

// Refused before the trace is read: outputs that are not regular files or are the trace.
void check_analyze_outputs(const po::variables_map& vm, const std::string& dir, const std::string& path) {
  check_output_dir(dir, "--out");
  for (const char* name : {"/analysis.json", "/analysis.md"}) {
    check_output_file(dir + name, "--out");
    check_not_an_input(dir + name, "--out", {path});
  }
  if (vm.count("graphviz")) {
    check_output_file(vm["graphviz"].as<std::string>(), "--graphviz");
    check_not_an_input(vm["graphviz"].as<std::string>(), "--graphviz", {path});
  }
}

// Reads the trace through the analyzer, writes analysis.json, analysis.md (and
// the Graphviz file) together, and prints the headline.
void analyze_and_write(const po::variables_map& vm, const std::string& dir, const std::string& path,
                       AnalyzeSettings& st) {
  auto src = open_trace(path, st.to);
  PrefixAnalyzer an(st.ao, std::move(st.lru));
  Request r;
  while (src->next(r)) an.add(r);
  const TraceAnalysis a = an.finish();
  // The three files appear together or not at all.
  OutputSet outputs(dir, "--out");
  outputs.add("analysis.json", analysis_json(a, path, src->format()));
  outputs.add("analysis.md", analysis_markdown(a, path, src->format()));
  std::unique_ptr<AtomicFile> graph;
  if (vm.count("graphviz")) {
    graph = std::make_unique<AtomicFile>(vm["graphviz"].as<std::string>(), "--graphviz");
    an.write_graphviz(graph->stream());
    outputs.add_external(*graph);
  }
  outputs.commit();
  std::cout << "requests " << a.requests << ", prompt tokens " << a.prompt_tokens << ", unique blocks "
            << a.unique_blocks << "\nideal hit rate " << 100.0 * a.ideal_hit_rate << " % (tokens), "
            << 100.0 * a.ideal_block_hit_rate << " % (blocks)\n";
  if (a.lru_check)
    std::cout << "vLLM LRU hit rate with " << st.lru_tokens << " tokens of cache: " << 100.0 * a.lru_check->hit_rate
              << " %\n";
  std::cout << "wrote " << dir << "/analysis.json and " << dir << "/analysis.md\n";
  if (a.requests_not_analyzed)
    std::cerr << "prefixsim analyze: warning: only the first " << a.requests << " requests were analyzed; the next "
              << "would pass --max-distinct-blocks " << st.ao.max_distinct_blocks << " (memory bound), so "
              << a.requests_not_analyzed << " requests are left out (analysis.json requests_not_analyzed)\n";
}

}  // namespace

int cmd_analyze(const Args& args) {
  po::options_description opts("options");
  add_scenario_options(opts, kForAnalyze);  // trace (or -), format, block sizes, sort, out
  opts.add_options()
      ("top", po::value<size_t>()->default_value(10), "how many hottest prefixes to list")
      ("window", po::value<double>()->default_value(60), "working-set window in seconds")
      ("lru-kv-tokens", po::value<int64_t>()->default_value(kDefaultLruKvTokens),
       "also replay through vLLM's LRU with this much KV cache (tokens); 0 skips it")
      ("tier-gpu-tokens", po::value<int64_t>()->default_value(0),
       "also tabulate the hit rate of a GPU pool of this many tokens over CPU tiers of growing size "
       "(write-through and write-back, from the LRU curve); 0 skips it")
      ("graphviz", po::value<std::string>(), "write the hottest prefix subtree as Graphviz DOT to FILE")
      ("max-distinct-blocks", po::value<uint64_t>()->default_value(AnalysisOptions{}.max_distinct_blocks),
       "memory bound: analyze the requests before the one that would pass this many distinct blocks (about "
       "300 bytes each; the default, 2^25, is about 10 GB) and say how many were left out");
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm,
                  "prefixsim analyze TRACE [--block-size B] [--trace-block-size T] [--format F] [--top K]\n"
                  "                 [--graphviz FILE] [--out DIR]",
                  "Measures a trace's prefix reuse with vLLM's block semantics: requests, tokens, unique\n"
                  "blocks, the ideal hit rate of an unbounded cache (tokens and blocks), reuse distances,\n"
                  "the working set per window, the hottest shared prefixes (prefix forest), and the LRU\n"
                  "cache size needed for 50/80/90/95 % hits. Writes analysis.json and analysis.md to --out."))
    return 0;
  if (!vm.count("trace")) throw InputError("analyze: missing the trace argument (usage: prefixsim analyze TRACE)");
  Scenario s;
  apply_scenario_flags(vm, kForAnalyze, s);
  if (!valid_utf8(s.trace)) throw InputError("analyze: TRACE: must be valid UTF-8 (it goes into analysis.json)");
  validate(s);  // the table's ranges; its messages name the flag
  AnalyzeSettings st = analyze_settings(vm, s);
  check_analyze_outputs(vm, s.out, s.trace);
  analyze_and_write(vm, s.out, s.trace, st);
  return 0;
}

}  // namespace prefixsim::cli
