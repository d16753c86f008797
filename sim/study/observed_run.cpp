#include "sim/study/observed_run.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "reports/latency.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/text_fields.h"
#include "sim/base/yaml_doc.h"
#include "sim/cost/catalog.h"
#include "traces/byte_stream.h"
#include "traces/trace_reader.h"
#include "workloads/inference_perf.h"
#include "workloads/rng.h"

namespace prefixsim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Typed access to one JSON document's fields, errors naming file and field.
class Doc {
 public:
  Doc(const std::string& file, const std::string& text) : file_(file) {
    j_ = json::parse(text, nullptr, false);
    if (j_.is_discarded()) throw InputError(file + ": not valid JSON");
    if (!j_.is_object()) throw InputError(file + ": not a JSON object");
  }
  // A document already parsed (a YAML file as JSON values).
  Doc(const std::string& file, json j) : file_(file), j_(std::move(j)) {
    if (!j_.is_object()) throw InputError(file + ": not a mapping");
  }
  const json& root() const { return j_; }
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw InputError(file_ + ": field '" + field + "': " + msg);
  }
  // The node at a dotted path, or nullptr when absent or null.
  const json* find(const std::string& path) const {
    const json* at = &j_;
    size_t from = 0;
    while (from <= path.size()) {
      const size_t dot = path.find('.', from);
      const std::string key = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
      if (!at->is_object() || !at->contains(key) || (*at)[key].is_null()) return nullptr;
      at = &(*at)[key];
      if (dot == std::string::npos) break;
      from = dot + 1;
    }
    return at;
  }
  const json& need(const std::string& path) const {
    const json* v = find(path);
    if (!v) fail(path, "missing");
    return *v;
  }
  double num(const std::string& path, double lo, double hi) const {
    const json& v = need(path);
    if (!v.is_number()) fail(path, "must be a number");
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi)) fail(path, "must be in [" + fmt(lo) + ", " + fmt(hi) + "], got " + fmt(x));
    return x;
  }
  int64_t integer(const std::string& path, int64_t lo, int64_t hi) const {
    const json& v = need(path);
    if (!v.is_number() || v.get<double>() != std::floor(v.get<double>())) fail(path, "must be an integer");
    // Range first, on the double: casting one out of int64's range is undefined.
    const double d = v.get<double>();
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)))
      fail(path, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(d);
  }
  std::string str(const std::string& path) const {
    const json& v = need(path);
    if (!v.is_string()) fail(path, "must be a string");
    return v.get<std::string>();
  }
  // A measured summary {"mean", "p50", "p90", "p99"} (any may be null) in
  // ms, each in [0, 1e9]; a tool's own form gives its unit in ms (1000 for
  // seconds), its range in that unit and its key for the median.
  MeasuredStat stat(const std::string& path, bool need_mean, double ms_per_unit = 1, double hi = 1e9,
                    const char* p50_key = "p50") const {
    MeasuredStat s;
    const json* v = find(path);
    if (!v) {
      if (need_mean) fail(path + ".mean", "missing");
      return s;
    }
    auto one = [&](const char* key, double& out) {
      if (find(path + "." + key)) out = num(path + "." + key, 0, hi) * ms_per_unit;
    };
    one("mean", s.mean);
    one(p50_key, s.p50);
    one("p90", s.p90);
    one("p99", s.p99);
    if (need_mean && std::isnan(s.mean)) fail(path + ".mean", "missing");
    return s;
  }
  const std::string& file() const { return file_; }

 private:
  static std::string fmt(double x) {
    std::ostringstream o;
    o << x;
    return o.str();
  }
  std::string file_;
  json j_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string alnum_lower(const std::string& s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// vLLM-style defaults not every form records.
constexpr double kVllmGpuMemUtil = 0.9;
constexpr int32_t kVllmBlockSize = 16;

void set_server(const Doc& d, Scenario& s, const std::string& model_field, const std::string& hf_id,
                const std::string& gpu) {
  s.model = catalog_model_for(hf_id, d.file(), model_field);
  s.gpu = gpu;
  s.block_size = kVllmBlockSize;
  s.gpu_mem_util = kVllmGpuMemUtil;
}

// (E2E mean - TTFT mean) / (n - 1): vLLM's TPOT for fixed-length outputs.
void derive_tpot(ObservedRun& run, int64_t output_len) {
  if (output_len > 1 && !std::isnan(run.e2e.mean) && !std::isnan(run.ttft.mean))
    run.tpot.mean = (run.e2e.mean - run.ttft.mean) / static_cast<double>(output_len - 1);
}

// ---- BLIS run records --------------------------------------------------

// A run whose requests failed was past what the server could take.
void mark_failures(ObservedRun& run) {
  if (run.failed == 0) return;
  run.saturated = true;
  run.saturation = std::to_string(run.failed) + " of " + std::to_string(run.sent) + " requests failed";
}

// The server: model, GPU and vllm_args.
void read_blis_server(const Doc& d, ObservedRun& run) {
  Scenario& s = run.scenario;
  const json* pm = d.find("prefixsim_model");
  if (pm && !pm->is_string()) d.fail("prefixsim_model", "must be a string");
  set_server(d, s, "model", pm ? pm->get<std::string>() : run.model_id,
             d.find("prefixsim_gpu") ? find_gpu(d.str("prefixsim_gpu"), "prefixsim_gpu").name
                                     : catalog_gpu_for(d.str("gpu"), d.file(), "gpu"));
  s.tp = static_cast<int>(d.integer("vllm_args.tensor_parallel_size", 1, 64));
  if (d.find("tp") && d.integer("tp", 1, 64) != s.tp)
    d.fail("tp", "contradicts vllm_args.tensor_parallel_size");
  s.max_num_seqs = d.find("vllm_args.max_num_seqs") ? d.integer("vllm_args.max_num_seqs", 1, 1 << 20) : 256;
  s.max_num_batched_tokens = d.find("vllm_args.max_num_batched_tokens")
                                 ? d.integer("vllm_args.max_num_batched_tokens", 1, int64_t{1} << 30)
                                 : 8192;
  if (d.find("vllm_args.total_kv_blocks_gpu"))
    s.kv_blocks = d.integer("vllm_args.total_kv_blocks_gpu", 2, int64_t{1} << 40);
  else
    run.notes.push_back("KV pool sized as vLLM would (no logged block count)");
  if (d.find("vllm_args.block_size")) s.block_size = static_cast<int32_t>(d.integer("vllm_args.block_size", 1, 4096));
}

// inference-perf's shared_prefix data at `sp`, as this build of it generated
// the prompts (and as long as they measured).
SharedPrefixSpec read_blis_prompts(const Doc& d, const std::string& sp, ObservedRun& run) {
  SharedPrefixSpec spec;
  spec.system_prompt_len = d.integer(sp + ".system_prompt_len", 0, 1 << 20);
  spec.question_len = d.integer(sp + ".question_len", 0, 1 << 20);
  spec.output_len = d.integer(sp + ".output_len", 1, 1 << 24);
  spec.vocab = static_cast<int32_t>(std::min<int64_t>(find_model(run.scenario.model).vocab, 1 << 30));
  spec.seed = d.find("workload.blis_workload_spec.seed")
                  ? static_cast<uint64_t>(d.integer("workload.blis_workload_spec.seed", 0, int64_t{1} << 62))
                  : 0;
  const std::string parsed = "inference_perf_parsed_config.data.shared_prefix";
  if (d.find(parsed)) {
    spec.groups = d.integer(parsed + ".num_groups", 1, 1 << 20);
    spec.prompts_per_group = d.integer(parsed + ".num_prompts_per_group", 1, 1 << 20);
  } else {
    run.notes.push_back("prompts: 10 groups x 10, as this inference-perf build pre-generated them");
  }
  // The prompts as measured, when recorded (tokenizing random text yields a
  // few percent more tokens than asked for).
  if (d.find("measured.prompt_len.mean")) {
    const double mean = d.num("measured.prompt_len.mean", 1, 1 << 20);
    spec.question_len = std::max<int64_t>(0, std::llround(mean) - spec.system_prompt_len);
    run.notes.push_back("question length from the measured mean prompt length");
  }
  return spec;
}

// inference-perf's constant-rate load stages at `stages`.
std::vector<ConstantStage> read_blis_stages(const Doc& d, const std::string& stages) {
  const json& st = d.need(stages);
  if (!st.is_array() || st.empty()) d.fail(stages, "must be a non-empty list");
  std::vector<ConstantStage> load;
  for (size_t i = 0; i < st.size(); ++i) {
    const std::string at = stages + "." + std::to_string(i);
    if (!st[i].is_object()) d.fail(at, "must be an object");
    const auto field = [&](const char* k) {
      if (!st[i].contains(k) || !st[i][k].is_number()) d.fail(at + "." + k, "missing or not a number");
      const double x = st[i][k].get<double>();
      if (!(x > 0 && x < 1e7)) d.fail(at + "." + k, "must be positive");
      return x;
    };
    load.push_back({field("rate"), field("duration")});
  }
  return load;
}

ObservedRun read_blis(const Doc& d, const std::string& path) {
  ObservedRun run;
  run.path = path;
  run.form = "blis";
  run.id = d.find("id") ? d.str("id") : fs::path(path).stem().string();
  run.model_id = d.str("model");
  read_blis_server(d, run);
  // The workload: BLIS's spec, or the raw inference-perf profile.
  std::string sp = "workload.blis_workload_spec.inference_perf.shared_prefix";
  std::string stages = "workload.blis_workload_spec.inference_perf.stages";
  if (!d.find(sp)) {
    sp = "workload.profile.data.shared_prefix";
    stages = "workload.profile.load.stages";
  }
  if (!d.find(sp)) d.fail("workload", "no inference-perf shared_prefix data (blis_workload_spec or profile)");
  const SharedPrefixSpec spec = read_blis_prompts(d, sp, run);
  run.requests = shared_prefix_requests(spec, read_blis_stages(d, stages));

  run.ttft = d.stat("measured.ttft_ms", true);
  run.e2e = d.stat("measured.e2e_ms", true);
  derive_tpot(run, spec.output_len);
  if (d.find("measured.throughput_rps")) run.throughput_rps = d.num("measured.throughput_rps", 0, 1e9);
  run.sent = d.find("measured.num_sent") ? d.integer("measured.num_sent", 0, int64_t{1} << 40)
                                         : static_cast<int64_t>(run.requests.size());
  run.failed = d.find("measured.num_failures") ? d.integer("measured.num_failures", 0, int64_t{1} << 40) : 0;
  mark_failures(run);
  run.client_side = true;
  return run;
}

// ---- LLMServingSim captures --------------------------------------------

std::vector<json> json_lines(const std::string& path) {
  LineReader lines(open_byte_stream(path), 0);
  std::vector<json> out;
  std::string_view line;
  while (lines.next(line)) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw InputError(path + ":" + std::to_string(lines.line_number()) + ": not a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

// A number of a JSON line within [lo, hi] (so that casting it is defined).
double line_num(const json& j, const char* key, const std::string& path, size_t line, double lo = -1e18,
                double hi = 1e18) {
  if (!j.contains(key) || !j[key].is_number())
    throw InputError(path + ":" + std::to_string(line) + ": field '" + key + "': missing or not a number");
  const double x = j[key].get<double>();
  if (!(x >= lo && x <= hi))
    throw InputError(path + ":" + std::to_string(line) + ": field '" + key + "': out of range");
  return x;
}

// Prompt and output lengths a replay can hold (2^24 tokens each).
constexpr double kMaxTokens = 1 << 24;

// The server's settings: meta.json's engine arguments, config.json's hardware.
void read_llmservingsim_server(const Doc& meta, const Doc& hw, const std::string& hw_path, ObservedRun& run) {
  const json& nodes = hw.need("nodes");
  if (!nodes.is_array() || nodes.empty() || !nodes[0].contains("instances") || !nodes[0]["instances"].is_array() ||
      nodes[0]["instances"].empty() || !nodes[0]["instances"][0].contains("hardware") ||
      !nodes[0]["instances"][0]["hardware"].is_string())
    hw.fail("nodes.0.instances.0.hardware", "missing");
  Scenario& s = run.scenario;
  set_server(meta, s, "engine_kwargs.model", run.model_id,
             catalog_gpu_for(nodes[0]["instances"][0]["hardware"].get<std::string>(), hw_path,
                             "nodes.0.instances.0.hardware"));
  s.tp = static_cast<int>(meta.integer("engine_kwargs.tensor_parallel_size", 1, 64));
  if (meta.find("engine_kwargs.data_parallel_size")) {
    s.replicas = static_cast<int32_t>(meta.integer("engine_kwargs.data_parallel_size", 1, 4096));
    // vLLM's DP load balancer sends each request to the engine with the
    // fewest (4 x waiting + running): least-loaded's queue-first order.
    if (s.replicas > 1) s.router = "least-loaded";
  }
  // The run's expert parallelism is noted, not replayed: --enable-expert-parallel
  // splits the experts but not vLLM's lockstep DP steps, and on the one DP+EP
  // run held it makes the model worse (README "Is it right for my server?").
  const json* ep = meta.find("engine_kwargs.enable_expert_parallel");
  if (ep && ep->is_boolean() && ep->get<bool>() && s.replicas > 1)
    run.notes.push_back("expert parallelism across the DP engines is priced as each engine holding every expert "
                        "(--enable-expert-parallel is not applied: without vLLM's lockstep steps it is less "
                        "faithful on the runs held)");
  s.max_num_seqs = meta.find("engine_kwargs.max_num_seqs") ? meta.integer("engine_kwargs.max_num_seqs", 1, 1 << 20)
                                                            : 256;
  s.max_num_batched_tokens = meta.find("engine_kwargs.max_num_batched_tokens")
                                 ? meta.integer("engine_kwargs.max_num_batched_tokens", 1, int64_t{1} << 30)
                                 : 8192;
  if (meta.find("engine_kwargs.gpu_memory_utilization"))
    s.gpu_mem_util = meta.num("engine_kwargs.gpu_memory_utilization", 0.01, 1);
  if (meta.find("engine_kwargs.kv_cache_dtype")) {
    const std::string kv = meta.str("engine_kwargs.kv_cache_dtype");
    s.kv_cache_dtype = kv.rfind("fp8", 0) == 0 ? "fp8" : "auto";
  }
  run.notes.push_back("KV pool sized as vLLM would (the capture logs no block count)");
}

// The workload as sent (workload.jsonl[.gz]: token ids, lengths, arrivals).
std::vector<Request> read_llmservingsim_workload(const std::string& wl) {
  std::vector<Request> out;
  const std::vector<json> sent = json_lines(wl);
  for (size_t i = 0; i < sent.size(); ++i) {
    const json& j = sent[i];
    Request r;
    r.id = "r" + std::to_string(i);
    r.arrival = static_cast<TimeNs>(line_num(j, "arrival_time_ns", wl, i + 1, 0, 9e18));
    r.output_len = static_cast<int64_t>(line_num(j, "output_toks", wl, i + 1, 1, kMaxTokens));
    if (!j.contains("input_tok_ids") || !j["input_tok_ids"].is_array())
      throw InputError(wl + ":" + std::to_string(i + 1) + ": field 'input_tok_ids': missing (needed for the prefix cache)");
    for (const json& t : j["input_tok_ids"]) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= (int64_t{1} << 31))
        throw InputError(wl + ":" + std::to_string(i + 1) + ": field 'input_tok_ids': token ids must be integers in [0, 2^31)");
      r.tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    r.prompt_len = static_cast<int64_t>(r.tokens.size());
    if (r.prompt_len < 1 || r.output_len < 1)
      throw InputError(wl + ":" + std::to_string(i + 1) + ": a request needs prompt tokens and output tokens");
    if (!out.empty() && r.arrival < out.back().arrival)
      throw InputError(wl + ":" + std::to_string(i + 1) + ": field 'arrival_time_ns': goes backwards");
    out.push_back(std::move(r));
  }
  return out;
}

// What the engine measured (requests.jsonl: engine timestamps per request).
void read_llmservingsim_measured(const std::string& rq, size_t sent, const std::string& wl, ObservedRun& run) {
  std::vector<double> ttft, e2e, tpot;
  const std::vector<json> rows = json_lines(rq);
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& j = rows[i];
    const double queued = line_num(j, "queued_ts", rq, i + 1), first = line_num(j, "first_token_ts", rq, i + 1),
                 last = line_num(j, "last_token_ts", rq, i + 1), out = line_num(j, "output_toks", rq, i + 1, 0, kMaxTokens);
    if (!(first >= queued && last >= first))
      throw InputError(rq + ":" + std::to_string(i + 1) + ": timestamps out of order (queued, first, last token)");
    ttft.push_back((first - queued) * 1e3);
    e2e.push_back((last - queued) * 1e3);
    if (out > 1) tpot.push_back((last - first) * 1e3 / (out - 1));
  }
  if (rows.size() != sent)
    throw InputError(rq + ": " + std::to_string(rows.size()) + " requests measured but " + std::to_string(sent) +
                     " sent (" + wl + ")");
  run.ttft = measured_stat(ttft);
  run.e2e = measured_stat(e2e);
  run.tpot = measured_stat(tpot);
}

ObservedRun read_llmservingsim(const fs::path& dir) {
  const std::string meta_path = (dir / "meta.json").string();
  const Doc meta(meta_path, read_whole_file(meta_path, "meta.json"));
  const std::string hw_path = (dir / "config.json").string();
  const Doc hw(hw_path, read_whole_file(hw_path, "config.json"));
  ObservedRun run;
  run.path = dir.string();
  run.form = "llmservingsim";
  run.id = dir.filename().string();
  run.model_id = meta.str("engine_kwargs.model");
  read_llmservingsim_server(meta, hw, hw_path, run);
  std::string wl = (dir / "workload.jsonl.gz").string();
  if (!fs::exists(wl)) wl = (dir / "workload.jsonl").string();
  run.requests = read_llmservingsim_workload(wl);
  read_llmservingsim_measured((dir / "requests.jsonl").string(), run.requests.size(), wl, run);
  run.sent = static_cast<int64_t>(run.requests.size());
  run.client_side = false;
  return run;
}

// ---- vLLM's benchmark: `vllm bench serve --save-result --save-detailed` --

double list_num(const Doc& d, const json& list, size_t i, const std::string& field, double lo, double hi) {
  if (!list[i].is_number()) d.fail(field + "." + std::to_string(i), "must be a number");
  const double x = list[i].get<double>();
  if (!(x >= lo && x <= hi)) d.fail(field + "." + std::to_string(i), "out of range");
  return x;
}

// The requests vllm bench sent (its prompt and output lengths; fresh random
// tokens, as its random and ShareGPT datasets share no prefixes), arriving as
// its load generator spaced them: gamma gaps of shape `burstiness` at
// `request_rate` (Poisson at 1), or back to back under max_concurrency
// closed-loop slots; and what it measured per request (ttfts and itls in s).
// Request i's inter-token latencies summed (seconds).
double itl_sum(const Doc& b, const json& itls, size_t i) {
  double rest = 0;
  if (!itls[i].is_array()) b.fail("itls." + std::to_string(i), "must be a list");
  for (const json& g : itls[i]) {
    if (!g.is_number() || !(g.get<double>() >= 0 && g.get<double>() < 1e7))
      b.fail("itls." + std::to_string(i), "must be a list of seconds >= 0");
    rest += g.get<double>();
  }
  return rest;
}

void read_vllm_bench(const Doc& b, ObservedRun& run, uint64_t seed) {
  const json& in = b.need("input_lens");
  const json& out = b.need("output_lens");
  const json& ttfts = b.need("ttfts");
  const json& itls = b.need("itls");
  if (!in.is_array() || in.empty()) b.fail("input_lens", "must be a non-empty list (record with --save-detailed)");
  for (const char* k : {"output_lens", "ttfts", "itls"})
    if (!b.need(k).is_array() || b.need(k).size() != in.size()) b.fail(k, "must be a list as long as input_lens");
  const json* errors = b.find("errors");
  const double rate = b.find("request_rate") && b.need("request_rate").is_number()
                          ? b.num("request_rate", 1e-9, 1e9)
                          : INFINITY;  // vllm bench writes "inf" as a string
  const double burst = b.find("burstiness") ? b.num("burstiness", 1e-6, 1e6) : 1.0;
  int64_t slots = 0;
  if (b.find("max_concurrency")) slots = b.integer("max_concurrency", 1, 1 << 20);
  if (!std::isfinite(rate) && slots == 0) slots = static_cast<int64_t>(in.size());  // all at once
  workloads::Rng rng(workloads::derive_seed(seed, 3));
  double t = 0;
  std::vector<double> ttft, e2e, tpot;
  for (size_t i = 0; i < in.size(); ++i) {
    if (errors && errors->is_array() && i < errors->size() && (*errors)[i].is_string() &&
        !(*errors)[i].get<std::string>().empty()) {
      ++run.failed;
      continue;
    }
    Request r;
    r.id = "r" + std::to_string(i);
    r.prompt_len = static_cast<int64_t>(list_num(b, in, i, "input_lens", 0, kMaxTokens));
    r.output_len = static_cast<int64_t>(list_num(b, out, i, "output_lens", 0, kMaxTokens));
    if (r.prompt_len < 1 || r.output_len < 1) b.fail("input_lens." + std::to_string(i), "a request needs tokens in and out");
    for (int64_t k = 0; k < r.prompt_len; ++k) r.tokens.push_back(static_cast<int32_t>(rng.below(32000)));
    if (std::isfinite(rate)) {
      if (!(t < 9e9)) b.fail("request_rate", "arrivals past the nanosecond clock's range (292 years)");
      r.arrival = static_cast<TimeNs>(std::llround(t * 1e9));
      t += rng.gamma(burst, 1.0 / (rate * burst));
    }
    // Closed loop: slot k sends its next request when its last one finished.
    if (slots > 0 && run.requests.size() >= static_cast<size_t>(slots)) {
      const Request& before = run.requests[run.requests.size() - static_cast<size_t>(slots)];
      r.wait_for = {before.id};
      run.requests[run.requests.size() - static_cast<size_t>(slots)].awaitable = true;
    }
    const double first = list_num(b, ttfts, i, "ttfts", 0, 1e7);
    const double rest = itl_sum(b, itls, i);
    ttft.push_back(first * 1e3);
    e2e.push_back((first + rest) * 1e3);
    if (r.output_len > 1) tpot.push_back(rest * 1e3 / static_cast<double>(r.output_len - 1));
    run.requests.push_back(std::move(r));
  }
  run.ttft = measured_stat(ttft);
  run.e2e = measured_stat(e2e);
  run.tpot = measured_stat(tpot);
  if (b.find("request_throughput")) run.throughput_rps = b.num("request_throughput", 0, 1e9);
  run.sent = static_cast<int64_t>(in.size());
  mark_failures(run);
  run.notes.push_back("prompts: fresh random tokens of the recorded lengths (no shared prefixes)");
  if (slots > 0) run.notes.push_back("arrivals: " + std::to_string(slots) + " closed-loop client slots");
  else run.notes.push_back("arrivals: drawn again at the recorded rate and burstiness (vllm bench keeps no times)");
}

// ---- kubernetes-sigs/inference-perf: its report folder ------------------

// A YAML tree as JSON values: mappings, lists, and scalars as numbers,
// booleans or strings (what YAML 1.2's core schema reads them as).
json yaml_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.Scalar()] = yaml_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& v : n) a.push_back(yaml_json(v));
    return a;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string& v = n.Scalar();
  if (n.Tag() != "!") {  // unquoted: a number or a boolean when it reads as one
    if (v == "true" || v == "True") return true;
    if (v == "false" || v == "False") return false;
    if (v == "null" || v == "~") return nullptr;
    if (const auto i = to_number<int64_t>(v)) return *i;
    if (const auto d = to_number<double>(v); d && std::isfinite(*d)) return *d;
  }
  return v;
}

// inference-perf's summary statistics: seconds, "median" for the p50.
MeasuredStat seconds_stat(const Doc& d, const std::string& path, bool need_mean) {
  return d.stat(path, need_mean, 1e3, 1e7, "median");
}

// The folder inference-perf writes (reports-YYYYMMDD-HHMMSS/): config.yaml,
// the configuration it ran, and summary_lifecycle_metrics.json, what it
// measured. The workload is rebuilt from the configuration as
// shared_prefix_requests generates it: `shared_prefix` data with fixed
// question and output lengths, `constant` load stages. What cannot be
// rebuilt so (other data types, length distributions, Poisson or
// concurrent loads) is refused naming the field; give the requests as a
// trace with `trace` and `measured` instead.
void read_inference_perf(const std::string& dir, ObservedRun& run, uint64_t seed) {
  const std::string cfg_path = (fs::path(dir) / "config.yaml").string();
  const Doc cfg(cfg_path, yaml_json(load_yaml_strict(read_whole_file(cfg_path, "inference-perf config"), cfg_path)));
  const std::string rep_path = (fs::path(dir) / "summary_lifecycle_metrics.json").string();
  const Doc rep(rep_path, read_whole_file(rep_path, "inference-perf report"));
  if (cfg.str("data.type") != "shared_prefix")
    cfg.fail("data.type", "only shared_prefix data is rebuilt (got " + cfg.str("data.type") +
                              "); give the requests as a trace with measured figures instead");
  for (const char* field : {"question_distribution", "output_distribution"})
    if (cfg.find(std::string("data.shared_prefix.") + field))
      cfg.fail(std::string("data.shared_prefix.") + field, "length distributions are not rebuilt (fixed lengths only)");
  if (cfg.str("load.type") != "constant")
    cfg.fail("load.type", "only constant loads are rebuilt (got " + cfg.str("load.type") + ")");
  const std::string sp = "data.shared_prefix";
  SharedPrefixSpec spec;
  spec.groups = cfg.integer(sp + ".num_groups", 1, 1 << 20);
  spec.prompts_per_group = cfg.integer(sp + ".num_prompts_per_group", 1, 1 << 20);
  spec.system_prompt_len = cfg.integer(sp + ".system_prompt_len", 0, 1 << 20);
  spec.question_len = cfg.integer(sp + ".question_len", 0, 1 << 20);
  spec.output_len = cfg.integer(sp + ".output_len", 1, 1 << 24);
  spec.vocab = static_cast<int32_t>(std::min<int64_t>(find_model(run.scenario.model).vocab, 1 << 30));
  spec.seed = cfg.find("load.base_seed") ? static_cast<uint64_t>(cfg.integer("load.base_seed", 0, int64_t{1} << 62)) : seed;
  // The prompts as measured (tokenizing random text yields a few percent
  // more tokens than asked for).
  if (rep.find("successes.prompt_len.mean")) {
    const double mean = rep.num("successes.prompt_len.mean", 1, 1 << 20);
    spec.question_len = std::max<int64_t>(0, std::llround(mean) - spec.system_prompt_len);
    run.notes.push_back("question length from the measured mean prompt length");
  }
  run.requests = shared_prefix_requests(spec, read_blis_stages(cfg, "load.stages"));
  run.ttft = seconds_stat(rep, "successes.latency.time_to_first_token", true);
  run.e2e = seconds_stat(rep, "successes.latency.request_latency", true);
  const json* ignore_eos = cfg.find("server.ignore_eos");
  if (ignore_eos && ignore_eos->is_boolean() && ignore_eos->get<bool>()) {
    derive_tpot(run, spec.output_len);  // its own TPOT counts streamed chunks, not tokens
  } else {
    run.tpot = seconds_stat(rep, "successes.latency.time_per_output_token", false);
    run.notes.push_back("server.ignore_eos is not set: outputs may have ended early; replayed at output_len");
  }
  if (rep.find("successes.throughput.requests_per_sec"))
    run.throughput_rps = rep.num("successes.throughput.requests_per_sec", 0, 1e9);
  run.failed = rep.find("failures.count") ? rep.integer("failures.count", 0, int64_t{1} << 40) : 0;
  run.sent = static_cast<int64_t>(run.requests.size());
  mark_failures(run);
}

// ---- prefixsim.observed/1 ----------------------------------------------

ObservedRun read_native(const Doc& d, const std::string& path) {
  ObservedRun run;
  run.path = path;
  run.form = "observed";
  run.id = d.find("id") ? d.str("id") : fs::path(path).stem().string();
  Scenario& s = run.scenario;
  s.model = find_model(d.str("settings.model"), "settings.model").name;
  s.gpu = find_gpu(d.str("settings.gpu"), "settings.gpu").name;
  run.model_id = s.model;
  if (d.find("settings.tp")) s.tp = static_cast<int>(d.integer("settings.tp", 1, 64));
  if (d.find("settings.replicas")) s.replicas = static_cast<int32_t>(d.integer("settings.replicas", 1, 4096));
  if (d.find("settings.router")) s.router = d.str("settings.router");
  if (d.find("settings.max_num_seqs")) s.max_num_seqs = d.integer("settings.max_num_seqs", 1, 1 << 20);
  if (d.find("settings.max_num_batched_tokens"))
    s.max_num_batched_tokens = d.integer("settings.max_num_batched_tokens", 1, int64_t{1} << 30);
  if (d.find("settings.kv_blocks")) s.kv_blocks = d.integer("settings.kv_blocks", 2, int64_t{1} << 40);
  if (d.find("settings.gpu_mem_util")) s.gpu_mem_util = d.num("settings.gpu_mem_util", 0.01, 1);
  if (d.find("settings.block_size")) s.block_size = static_cast<int32_t>(d.integer("settings.block_size", 1, 4096));
  if (d.find("settings.async_scheduling")) {
    if (!d.need("settings.async_scheduling").is_boolean()) d.fail("settings.async_scheduling", "must be true or false");
    s.async_scheduling = d.need("settings.async_scheduling").get<bool>();
  }
  const std::string at = d.find("latency_measured_at") ? d.str("latency_measured_at") : "client";
  if (at != "client" && at != "engine") d.fail("latency_measured_at", "must be \"client\" or \"engine\"");
  run.client_side = at == "client";
  auto beside = [&](const std::string& field) {
    fs::path p = d.str(field);
    return (p.is_relative() ? fs::path(path).parent_path() / p : p).string();
  };
  if (d.find("inference_perf")) {
    // The workload and the measurements are inference-perf's report folder.
    if (d.find("trace") || d.find("measured") || d.find("vllm_bench"))
      d.fail("inference_perf", "give one of inference_perf, vllm_bench, or trace and measured");
    read_inference_perf(beside("inference_perf"), run,
                        d.find("seed") ? static_cast<uint64_t>(d.integer("seed", 0, int64_t{1} << 62)) : 0);
    return run;
  }
  if (d.find("vllm_bench")) {
    // The workload and the measurements are vLLM benchmark's result file.
    if (d.find("trace") || d.find("measured")) d.fail("vllm_bench", "give either vllm_bench or trace and measured");
    const std::string bench = beside("vllm_bench");
    read_vllm_bench(Doc(bench, read_whole_file(bench, "vllm bench result")), run,
                    d.find("seed") ? static_cast<uint64_t>(d.integer("seed", 0, int64_t{1} << 62)) : 0);
    return run;
  }
  TraceOptions t;
  std::unique_ptr<RequestSource> src = open_trace(beside("trace"), t);
  Request r;
  while (src->next(r)) run.requests.push_back(r);
  if (run.requests.empty()) d.fail("trace", "holds no requests");
  run.ttft = d.stat("measured.ttft_ms", true);
  run.e2e = d.stat("measured.e2e_ms", true);
  run.tpot = d.stat("measured.tpot_ms", false);
  if (d.find("measured.throughput_rps")) run.throughput_rps = d.num("measured.throughput_rps", 0, 1e9);
  run.sent = static_cast<int64_t>(run.requests.size());
  if (d.find("measured.failed")) run.failed = d.integer("measured.failed", 0, int64_t{1} << 40);
  if (run.failed > 0) {
    run.saturated = true;
    run.saturation = std::to_string(run.failed) + " requests failed";
  }
  return run;
}

}  // namespace

MeasuredStat measured_stat(std::vector<double> values) {
  MeasuredStat s;
  if (values.empty()) return s;
  const LatencySummary l = summarize(values);
  s.mean = l.mean;
  s.p50 = l.p50;
  s.p90 = l.p90;
  s.p99 = l.p99;
  return s;
}

std::string catalog_model_for(const std::string& hf_id, const std::string& file, const std::string& field) {
  for (const ModelSpec& m : model_catalog()) {
    if (m.name == hf_id) return m.name;
    const std::string repo = m.source.substr(0, m.source.find(' '));
    if (lower(repo) == lower(hf_id)) return m.name;
  }
  std::string base = lower(hf_id.substr(hf_id.rfind('/') == std::string::npos ? 0 : hf_id.rfind('/') + 1));
  for (const char* suffix : {"-hf", "-chat"})
    if (base.size() > std::string(suffix).size() && base.ends_with(suffix)) base.resize(base.size() - std::string(suffix).size());
  if (const size_t at = base.find("-instruct"); at != std::string::npos) base.resize(at);
  for (const ModelSpec& m : model_catalog())
    if (m.name == base) return m.name;
  throw InputError(file + ": field '" + field + "': model '" + hf_id +
                   "' is not in the catalog (prefixsim catalog lists it; add it with --model-file)");
}

std::string catalog_gpu_for(const std::string& hardware, const std::string& file, const std::string& field) {
  const std::string want = alnum_lower(hardware);
  std::string found;
  for (const GpuSpec& g : gpu_catalog()) {
    if (g.name == hardware) return g.name;
    if (!want.empty() && alnum_lower(g.name).rfind(want, 0) == 0) {
      if (!found.empty())
        throw InputError(file + ": field '" + field + "': GPU '" + hardware + "' names both " + found + " and " +
                         g.name + "; give the catalog name");
      found = g.name;
    }
  }
  if (found.empty())
    throw InputError(file + ": field '" + field + "': GPU '" + hardware +
                     "' is not in the catalog (prefixsim catalog lists it; add it with --gpu-file)");
  return found;
}

ObservedRun read_observed_run(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "meta.json") && fs::exists(p / "requests.jsonl")) return read_llmservingsim(p);
    throw InputError(path + ": a folder that is not an LLMServingSim capture (meta.json, requests.jsonl)");
  }
  if (p.filename() == "meta.json" && fs::exists(p.parent_path() / "requests.jsonl"))
    return read_llmservingsim(p.parent_path());
  return parse_observed_run(read_whole_file(path, "observed run"), path);
}

ObservedRun parse_observed_run(const std::string& text, const std::string& path) {
  const Doc d(path, text);
  if (d.root().contains("schema")) {
    if (d.root()["schema"] != "prefixsim.observed/1") d.fail("schema", "must be \"prefixsim.observed/1\"");
    return read_native(d, path);
  }
  if (d.find("vllm_args") && d.find("workload")) return read_blis(d, path);
  throw InputError(path + ": not an observed run (prefixsim.observed/1, a BLIS run record, or an LLMServingSim "
                   "capture folder)");
}

}  // namespace prefixsim
