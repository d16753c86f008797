#include "sim/study/analyze_run.h"

#include "policies/registry.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/json_out.h"

namespace prefixsim {

AnalyzeSettings analyze_settings(const AnalyzeArgs& a, const Scenario& s) {
  if (!valid_utf8(s.trace)) throw InputError("analyze: TRACE: must be valid UTF-8 (it goes into analysis.json)");
  validate(s);  // the table's ranges; its messages name the flag
  AnalyzeSettings st;
  AnalysisOptions& ao = st.ao;
  TraceOptions& to = st.to;
  ao.block_size = s.block_size;
  ao.top_k = a.top;
  ao.window_s = a.window_s;
  if (!(ao.window_s > 0)) throw InputError("analyze: --window must be positive");
  const int64_t lru_tokens = st.lru_tokens = a.lru_kv_tokens;
  if (lru_tokens < 0) throw InputError("analyze: --lru-kv-tokens must be >= 0");
  if (lru_tokens > 0) {
    ao.lru_num_blocks = lru_tokens / ao.block_size + 1;  // + the null block
    st.lru = make_policy("lru");
  }
  const int64_t tier_gpu_tokens = a.tier_gpu_tokens;
  if (tier_gpu_tokens < 0 || tier_gpu_tokens > (int64_t{1} << 40))
    throw InputError("analyze: --tier-gpu-tokens must be in [0, 2^40]");
  ao.tier_gpu_blocks = tier_gpu_tokens / ao.block_size;
  if (tier_gpu_tokens > 0 && ao.tier_gpu_blocks == 0)
    throw InputError("analyze: --tier-gpu-tokens must hold at least one block");
  ao.max_distinct_blocks = a.max_distinct_blocks;
  if (ao.max_distinct_blocks < 1 || ao.max_distinct_blocks > (uint64_t{1} << 32) - 2)
    throw InputError("analyze: --max-distinct-blocks must be in [1, 2^32 - 2] (block ids are 32-bit)");
  to.format = s.format;
  to.trace_block_size = s.trace_block_size;
  to.sort = s.sort;
  return st;
}

AnalyzeRun run_analyze(const std::string& path, AnalyzeSettings& st) {
  auto src = open_trace(path, st.to);
  AnalyzeRun run;
  run.analyzer = std::make_unique<PrefixAnalyzer>(st.ao, std::move(st.lru));
  Request r;
  while (src->next(r)) run.analyzer->add(r);
  run.analysis = run.analyzer->finish();
  run.json = analysis_json(run.analysis, path, src->format());
  run.markdown = analysis_markdown(run.analysis, path, src->format());
  return run;
}

const std::vector<std::string>& analyze_output_names() {
  static const std::vector<std::string> names = {"analysis.json", "analysis.md"};
  return names;
}

void write_analyze_outputs(const std::string& out_dir, const AnalyzeRun& run, const std::string& graphviz) {
  OutputSet outputs(out_dir, "--out");  // the (three) files appear together or not at all
  outputs.add("analysis.json", run.json);
  outputs.add("analysis.md", run.markdown);
  std::unique_ptr<AtomicFile> graph;
  if (!graphviz.empty()) {
    graph = std::make_unique<AtomicFile>(graphviz, "--graphviz");
    run.analyzer->write_graphviz(graph->stream());
    outputs.add_external(*graph);
  }
  outputs.commit();
}

}  // namespace prefixsim
