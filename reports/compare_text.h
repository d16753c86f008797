// compare's documents in their text forms: compare.json (schema
// "prefixsim.compare/1"), compare.csv, compare.md and the line on the
// terminal, each a pure function of a CompareReport (same report,
// byte-identical text). compare.html is render_compare_html (outputs.h) of
// the json. The report is filled by run_compare (sim/study/compare_run.h);
// its types are plain figures so that reports/ needs no simulator room.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace prefixsim {

// One pool size of the capacity axis, as the pool sizing gave it.
struct CompareSize {
  int64_t kv_blocks = 0;  // the null block included
  int64_t capacity_tokens = 0;
  int64_t bytes_per_block = 0;
  std::string source;  // "--kv-blocks", "--kv-tokens" or "--kv-gb"
};

// One run: its place on each axis (indices into the report's lists) and its
// figures (the cache replay's; in engine mode counted at admission).
struct CompareRow {
  size_t policy = 0, size = 0, router = 0, fleet = 0, offload = 0;
  uint64_t requests = 0;
  int64_t prompt_tokens = 0, hit_tokens = 0, tier_hit_tokens = 0;
  double hit_rate = 0;
  uint64_t queried_blocks = 0, hit_blocks = 0;
  double block_hit_rate = 0;
  uint64_t evictions = 0, refused_requests = 0;
  int64_t ghost_blocks = 0;                   // the policy's ghost list at this pool size
  // Cache mode (RetentionProbe): evictions of a block hit since it was
  // cached, and hit blocks whose content had been evicted and computed again.
  bool retention = false;
  uint64_t evicted_after_hit = 0, hits_on_recomputed = 0;
  double ttft_p50_ms = NAN, ttft_p99_ms = NAN;  // engine mode
  double imbalance = NAN;                     // fleets: max / mean requests per replica
};

// One of the hottest shared prefixes and its reuse distances (blocks).
struct CompareHotPrefix {
  std::string hash;  // of its last block, hex
  uint32_t blocks = 0;
  uint64_t reuses = 0;
  int64_t tokens_saved = 0;
  std::vector<uint64_t> distances;
  uint64_t median_distance = 0;
};

struct CompareReport {
  std::string mode;  // "cache" or "engine"
  std::string trace_path, trace_format;
  uint64_t requests = 0;
  int64_t prompt_tokens = 0, output_tokens = 0;
  int32_t block_size = 0;
  // Engine mode: the cost model (its JSON) and what it models.
  nlohmann::ordered_json cost_model;
  std::string model, gpu;
  int32_t tp = 1;
  // The axes. Without fleets: one router (the scenario's) and one replica;
  // without offloading: one size, 0.
  std::vector<std::string> specs, policy_names;
  std::vector<std::string> routers;
  std::vector<int64_t> replicas;
  std::vector<double> offloading_gib;  // inf: unbounded
  bool fleets = false, offloading = false;
  bool tiered = false;        // offloading or --kv-tier: hit rates with tiers reported
  bool offline_policy = false;  // belady (or another policy that reads the future) compared
  std::vector<CompareSize> sizes;
  std::vector<double> belady_hit_rate;  // per size; NaN where belady is not among the policies
  // Size-major, then policy, router, fleet size and offloading size.
  std::vector<CompareRow> rows;
  std::vector<CompareHotPrefix> hot_prefixes;
};

// compare.json as a document, and as its file's text (2-space indent).
nlohmann::ordered_json compare_to_json(const CompareReport& r);
std::string render_compare_json(const CompareReport& r);
// compare.csv: one line per run.
std::string render_compare_csv(const CompareReport& r);
// compare.md: a table per pool size, hit rate against capacity, hot prefixes.
std::string render_compare_md(const CompareReport& r);
// The line printed after a run that wrote the four files into out_dir.
std::string render_compare_summary(const CompareReport& r, const std::string& out_dir);

}  // namespace prefixsim
