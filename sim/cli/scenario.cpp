#include "sim/cli/scenario.h"

#include <yaml-cpp/yaml.h>

#include <type_traits>
#include <utility>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/json_out.h"
#include "workloads/config_node.h"

namespace prefixsim::cli {
namespace {

class YamlReader {
 public:
  explicit YamlReader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const YAML::Node& n, const std::string& key, const std::string& msg) const {
    throw InputError(path_, n.Mark().line + 1, key + ": " + msg);
  }
  template <typename T>
  T get(const YAML::Node& n, const std::string& key, const char* what) const {
    T v{};
    try {
      v = n.as<T>();
    } catch (const YAML::Exception&) {
      fail(n, key, std::string("expected ") + what);
    }
    if constexpr (std::is_same_v<T, std::string>)
      if (!valid_utf8(v)) fail(n, key, "must be valid UTF-8 (it goes into report.json)");
    return v;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void apply_scheduler(const YamlReader& y, const YAML::Node& node, Scenario& s) {
  if (!node.IsMap()) y.fail(node, "scheduler", "expected a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "max_num_seqs") s.max_num_seqs = y.get<int64_t>(v, key, "an integer");
    else if (key == "max_num_batched_tokens") s.max_num_batched_tokens = y.get<int64_t>(v, key, "an integer");
    else if (key == "enable_chunked_prefill") s.enable_chunked_prefill = y.get<bool>(v, key, "true or false");
    else if (key == "long_prefill_token_threshold") s.long_prefill_token_threshold = y.get<int64_t>(v, key, "an integer");
    else y.fail(kv.first, "scheduler." + key, "unknown key");
  }
}

}  // namespace

void load_scenario_yaml(const std::string& path, Scenario& s) {
  // Read with the input bounds, parsed strictly (one document, no key twice).
  const YAML::Node root = workloads::load_yaml_strict(read_whole_file(path, "scenario"), path);
  const YamlReader y(path);
  if (!root.IsMap()) throw InputError(path, 1, "a scenario is a mapping of keys to values");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "trace") {
      s.trace = y.get<std::string>(v, key, "a path");
      if (s.trace.empty()) y.fail(v, key, "an empty path (leave the key out to replay the workload)");
    }
    else if (key == "workload") s.workload = y.get<std::string>(v, key, "a preset name or YAML path"), s.workload_given = true;
    else if (key == "requests") s.requests = y.get<int64_t>(v, key, "an integer");
    else if (key == "rate") s.rate = y.get<double>(v, key, "a number");
    else if (key == "seed") s.seed = y.get<uint64_t>(v, key, "a non-negative integer");
    else if (key == "format") s.format = y.get<std::string>(v, key, "a format name");
    else if (key == "trace_block_size") s.trace_block_size = y.get<int32_t>(v, key, "an integer");
    else if (key == "conversation_rate") s.conversation_rate = y.get<double>(v, key, "a number");
    else if (key == "sort") s.sort = y.get<bool>(v, key, "true or false");
    else if (key == "mode") s.mode = y.get<std::string>(v, key, "engine or cache");
    else if (key == "policy") s.policy = y.get<std::string>(v, key, "a policy spec");
    else if (key == "block_size") s.block_size = y.get<int32_t>(v, key, "an integer");
    else if (key == "model") s.model = y.get<std::string>(v, key, "a model name");
    else if (key == "gpu") s.gpu = y.get<std::string>(v, key, "a GPU name");
    else if (key == "gpu_mem_util") s.gpu_mem_util = y.get<double>(v, key, "a number");
    else if (key == "tp") s.tp = y.get<int>(v, key, "an integer");
    else if (key == "kv_blocks") s.kv_blocks = y.get<int64_t>(v, key, "an integer");
    else if (key == "kv_tokens") s.kv_tokens = y.get<int64_t>(v, key, "an integer");
    else if (key == "kv_gb") s.kv_gb = y.get<double>(v, key, "a number");
    else if (key == "profile") s.profile = y.get<std::string>(v, key, "a path or builtin");
    else if (key == "kv_cache_dtype") {
      s.kv_cache_dtype = y.get<std::string>(v, key, "auto or fp8");
      if (s.kv_cache_dtype != "auto" && s.kv_cache_dtype != "fp8") y.fail(v, key, "must be auto or fp8");
    }
    else if (key == "model_file") s.model_file = y.get<std::string>(v, key, "a path");
    else if (key == "gpu_file") s.gpu_file = y.get<std::string>(v, key, "a path");
    else if (key == "scheduler") apply_scheduler(y, v, s);
    else if (key == "series_interval_s") s.series_interval_s = y.get<double>(v, key, "a number");
    else if (key == "out") s.out = y.get<std::string>(v, key, "a directory");
    else if (key == "check_invariants") s.check_invariants = y.get<bool>(v, key, "true or false");
    else y.fail(kv.first, key, "unknown key");
  }
}

void validate(const Scenario& s) {
  auto bad = [](const std::string& flag, const std::string& msg) { throw InputError(flag + ": " + msg); };
  const std::pair<const char*, const std::string*> strings[] = {
      {"--trace", &s.trace}, {"--workload", &s.workload}, {"--format", &s.format}, {"--mode", &s.mode},
      {"--policy", &s.policy}, {"--model", &s.model}, {"--gpu", &s.gpu}, {"--profile", &s.profile},
      {"--out", &s.out}};
  for (const auto& [flag, str] : strings)
    if (!valid_utf8(*str)) bad(flag, "must be valid UTF-8 (it goes into report.json)");
  if (s.kv_cache_dtype != "auto" && s.kv_cache_dtype != "fp8")
    bad("--kv-cache-dtype", "must be auto or fp8, not '" + s.kv_cache_dtype + "'");
  if (s.mode != "engine" && s.mode != "cache") bad("--mode", "must be engine or cache, not '" + s.mode + "'");
  if (s.block_size < 1 || s.block_size > 4096) bad("--block-size", "must be in [1, 4096]");
  if (s.trace_block_size < 0 || s.trace_block_size > (1 << 20)) bad("--trace-block-size", "must be in [1, 2^20]");
  if (s.requests && (*s.requests < 1 || *s.requests > (int64_t{1} << 40))) bad("--requests", "must be positive");
  if (s.rate && !(*s.rate > 0 && *s.rate < 1e9)) bad("--rate", "must be a positive number of requests per second");
  if (!(s.conversation_rate > 0 && s.conversation_rate < 1e9)) bad("--conversation-rate", "must be positive");
  if (!(s.gpu_mem_util > 0 && s.gpu_mem_util <= 1)) bad("--gpu-mem-util", "must be in (0, 1]");
  if (s.tp < 1 || s.tp > 64) bad("--tp", "must be in [1, 64]");
  const int sizes = (s.kv_blocks ? 1 : 0) + (s.kv_tokens ? 1 : 0) + (s.kv_gb ? 1 : 0);
  if (sizes > 1) bad("--kv-blocks/--kv-tokens/--kv-gb", "give at most one of them");
  if (s.max_num_seqs < 1 || s.max_num_seqs > 1 << 20) bad("--max-num-seqs", "must be in [1, 2^20]");
  if (s.max_num_batched_tokens < 1 || s.max_num_batched_tokens > int64_t{1} << 30)
    bad("--max-num-batched-tokens", "must be in [1, 2^30]");
  if (s.max_num_batched_tokens < s.max_num_seqs)
    bad("--max-num-batched-tokens", "must be at least --max-num-seqs (vLLM's config rule)");
  if (s.long_prefill_token_threshold < 0) bad("--long-prefill-token-threshold", "must be >= 0");
  if (!(s.series_interval_s > 0 && s.series_interval_s < 1e9)) bad("--series-interval", "must be positive");
}

nlohmann::json to_json(const Scenario& s) {
  nlohmann::json j;
  j["trace"] = s.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.trace);
  j["workload"] = s.trace.empty() ? nlohmann::json(s.workload) : nlohmann::json(nullptr);
  j["requests"] = s.requests ? nlohmann::json(*s.requests) : nlohmann::json(nullptr);
  j["rate"] = s.rate ? nlohmann::json(*s.rate) : nlohmann::json(nullptr);
  j["seed"] = s.seed;
  j["format"] = s.format;
  j["trace_block_size"] = s.trace_block_size;
  j["conversation_rate"] = s.conversation_rate;
  j["sort"] = s.sort;
  j["mode"] = s.mode;
  j["policy"] = s.policy;
  j["block_size"] = s.block_size;
  j["model"] = s.model;
  j["gpu"] = s.gpu;
  j["gpu_mem_util"] = s.gpu_mem_util;
  j["tp"] = s.tp;
  j["kv_blocks"] = s.kv_blocks ? nlohmann::json(*s.kv_blocks) : nlohmann::json(nullptr);
  j["kv_tokens"] = s.kv_tokens ? nlohmann::json(*s.kv_tokens) : nlohmann::json(nullptr);
  j["kv_gb"] = s.kv_gb ? nlohmann::json(*s.kv_gb) : nlohmann::json(nullptr);
  j["profile"] = s.profile.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.profile);
  j["scheduler"] = {{"max_num_seqs", s.max_num_seqs},
                    {"max_num_batched_tokens", s.max_num_batched_tokens},
                    {"enable_chunked_prefill", s.enable_chunked_prefill},
                    {"long_prefill_token_threshold", s.long_prefill_token_threshold}};
  j["series_interval_s"] = s.series_interval_s;
  // Added keys, present only when set, so earlier reports stay byte-identical.
  if (s.kv_cache_dtype != "auto") j["kv_cache_dtype"] = s.kv_cache_dtype;
  if (!s.model_file.empty()) j["model_file"] = s.model_file;
  if (!s.gpu_file.empty()) j["gpu_file"] = s.gpu_file;
  return j;
}

int kv_dtype_bytes(const Scenario& s) { return s.kv_cache_dtype == "fp8" ? 1 : 0; }

}  // namespace prefixsim::cli
