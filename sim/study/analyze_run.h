// `prefixsim analyze`'s run: the analyzer's settings from the command's own
// options and the few a run shares (trace, format, block sizes, sort: the
// scenario table's), checked with the command's messages, then one
// streaming pass over the trace into analysis.json and analysis.md. In the
// library rather than in sim/cli so that the Python module (python/) runs
// the very same checks and pass. Here (a question about a trace, like the
// studies) rather than in sim/scenario: sim/scenario's eight files are one
// unit of CI's unity build, and a ninth would start a second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/kv/eviction_policy.h"
#include "sim/scenario/scenario.h"
#include "traces/analysis.h"
#include "traces/trace_reader.h"

namespace prefixsim {

// analyze's own options, at the command's defaults.
struct AnalyzeArgs {
  size_t top = 10;              // hottest prefixes listed
  double window_s = 60;         // working-set window
  // The reference pool of the literature check: Llama-70B INT4 on
  // one H100, 45 GB of KV pool. 0 skips the LRU replay.
  int64_t lru_kv_tokens = 137392;
  int64_t tier_gpu_tokens = 0;  // 0 skips the tier table
  uint64_t max_distinct_blocks = AnalysisOptions{}.max_distinct_blocks;
};

struct AnalyzeSettings {
  AnalysisOptions ao;
  TraceOptions to;
  int64_t lru_tokens = 0;
  std::unique_ptr<EvictionPolicy> lru;
};

// Checks the scenario (a UTF-8 trace path, the table's ranges) and `a`
// (InputError naming the flag, exit 2) and sets the analyzer and reader up.
AnalyzeSettings analyze_settings(const AnalyzeArgs& a, const Scenario& s);

struct AnalyzeRun {
  TraceAnalysis analysis;
  std::string json, markdown;  // analysis.json, analysis.md
  // Kept for PrefixAnalyzer::write_graphviz (the caller's --graphviz).
  std::unique_ptr<PrefixAnalyzer> analyzer;
};

// Streams the trace at `path` through the analyzer (st.lru moves into it).
AnalyzeRun run_analyze(const std::string& path, AnalyzeSettings& st);

// analysis.json and analysis.md: the files of analyze's --out.
const std::vector<std::string>& analyze_output_names();
// Writes them into out_dir and, when `graphviz` is not "", the hottest
// subtree as Graphviz DOT to that path: all appear together or none.
void write_analyze_outputs(const std::string& out_dir, const AnalyzeRun& run, const std::string& graphviz);

}  // namespace prefixsim
