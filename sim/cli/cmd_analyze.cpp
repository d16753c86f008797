// prefixsim analyze: prefix reuse of a trace -> analysis.json + analysis.md.
#include <filesystem>
#include <iostream>

#include "sim/base/atomic_file.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"
#include "sim/scenario/scenario.h"
#include "sim/study/analyze_run.h"

namespace prefixsim::cli {

namespace {

// Refused before the trace is read: outputs that are not regular files or are the trace.
void check_analyze_outputs(const po::variables_map& vm, const std::string& dir, const std::string& path) {
  check_output_set(dir, analyze_output_names(), "--out", {path});
  if (vm.count("graphviz")) {
    check_output_file(vm["graphviz"].as<std::string>(), "--graphviz");
    check_not_an_input(vm["graphviz"].as<std::string>(), "--graphviz", {path});
  }
}

// Reads the trace through the analyzer, writes analysis.json, analysis.md (and
// the Graphviz file) together, and prints the headline.
void analyze_and_write(const po::variables_map& vm, const std::string& dir, const std::string& path,
                       AnalyzeSettings& st) {
  const AnalyzeRun run = run_analyze(path, st);
  const TraceAnalysis& a = run.analysis;
  write_analyze_outputs(dir, run, vm.count("graphviz") ? vm["graphviz"].as<std::string>() : "");
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
      ("top", po::value<size_t>()->default_value(AnalyzeArgs{}.top), "how many hottest prefixes to list")
      ("window", po::value<double>()->default_value(AnalyzeArgs{}.window_s), "working-set window in seconds")
      ("lru-kv-tokens", po::value<int64_t>()->default_value(AnalyzeArgs{}.lru_kv_tokens),
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
  AnalyzeArgs a;
  a.top = vm["top"].as<size_t>();
  a.window_s = vm["window"].as<double>();
  a.lru_kv_tokens = vm["lru-kv-tokens"].as<int64_t>();
  a.tier_gpu_tokens = vm["tier-gpu-tokens"].as<int64_t>();
  a.max_distinct_blocks = vm["max-distinct-blocks"].as<uint64_t>();
  AnalyzeSettings st = analyze_settings(a, s);  // the scenario table's ranges too; messages name the flag
  check_analyze_outputs(vm, s.out, s.trace);
  analyze_and_write(vm, s.out, s.trace, st);
  return 0;
}

}  // namespace prefixsim::cli
