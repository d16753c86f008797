#include "sim/engine/sched_runner.h"

#include <istream>
#include <ostream>
#include <unordered_set>

#include "sim/base/json_fields.h"
#include "sim/base/json_out.h"
#include "sim/kv/kv_cache_manager.h"
#include "sim/engine/scheduler.h"

namespace prefixsim {
namespace {

constexpr int64_t kMaxBlockSize = 4096;
constexpr int64_t kMaxNumBlocks = int64_t{1} << 28;  // as `prefixsim ops`
constexpr int64_t kMaxCount = int64_t{1} << 40;      // sequence counts, budgets, lengths

// One element of a step's "arrive" list, checked field by field.
void parse_arrival(const JsonLine& line, const nlohmann::json& a, size_t idx, Request& r) {
  const std::string where = "arrive[" + std::to_string(idx) + "]";
  if (!a.is_object()) line.fail("'" + where + "' must be an object {\"req\",\"tokens\",\"max_tokens\"}");
  for (auto it = a.begin(); it != a.end(); ++it)
    if (it.key() != "req" && it.key() != "tokens" && it.key() != "max_tokens")
      line.fail("unknown field '" + where + "." + it.key() + "'");
  auto need = [&](const char* key) -> const nlohmann::json& {
    auto it = a.find(key);
    if (it == a.end()) line.fail("missing field '" + where + "." + key + "'");
    return *it;
  };
  const auto& id = need("req");
  if (!id.is_string()) line.fail("field '" + where + ".req' must be a string");
  const auto& toks = need("tokens");
  if (!toks.is_array()) line.fail("field '" + where + ".tokens' must be an array of token ids");
  if (toks.empty()) line.fail("field '" + where + ".tokens' must not be empty");
  const auto& mt = need("max_tokens");
  // nlohmann stores non-negative literals as unsigned: test both forms.
  const bool in_range = mt.is_number_unsigned()
                            ? (mt.get<uint64_t>() >= 1 && mt.get<uint64_t>() <= uint64_t(kMaxCount))
                            : (mt.is_number_integer() && mt.get<int64_t>() >= 1 && mt.get<int64_t>() <= kMaxCount);
  if (!in_range)
    line.fail("field '" + where + ".max_tokens' must be an integer >= 1");
  r.clear();
  r.id = id.get<std::string>();
  r.tokens.reserve(toks.size());
  for (size_t j = 0; j < toks.size(); ++j) {
    const auto& t = toks[j];
    const bool ok = t.is_number_integer() &&
                    (t.is_number_unsigned() ? t.get<uint64_t>() <= 0x7fffffffULL
                                            : (t.get<int64_t>() >= 0 && t.get<int64_t>() <= 0x7fffffffLL));
    if (!ok) line.fail("field '" + where + ".tokens[" + std::to_string(j) + "]' must be a token id in [0, 2^31)");
    r.tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  r.prompt_len = static_cast<int64_t>(r.tokens.size());
  r.output_len = mt.get<int64_t>();
}

void append_ids(std::string& out, const Scheduler& s, const std::vector<SlotId>& slots) {
  out.push_back('[');
  for (size_t i = 0; i < slots.size(); ++i) {
    if (i) out.push_back(',');
    append_json_string(out, s.request(slots[i]).id);
  }
  out.push_back(']');
}

void append_step(std::string& out, uint64_t step, const Scheduler& s, const StepPlan* plan, int32_t num_free) {
  out += "{\"step\":";
  append_int(out, static_cast<int64_t>(step));
  out += ",\"scheduled\":[";
  if (plan) {
    for (size_t i = 0; i < plan->scheduled.size(); ++i) {
      if (i) out.push_back(',');
      out.push_back('[');
      append_json_string(out, s.request(plan->scheduled[i].slot).id);
      out.push_back(',');
      append_int(out, plan->scheduled[i].num_new_tokens);
      out.push_back(']');
    }
  }
  out += "],\"new\":[";
  if (plan) {
    for (size_t i = 0; i < plan->admitted.size(); ++i) {
      if (i) out.push_back(',');
      out.push_back('[');
      append_json_string(out, s.request(plan->admitted[i].slot).id);
      out.push_back(',');
      append_int(out, plan->admitted[i].hit_tokens);
      out.push_back(']');
    }
  }
  out += "],\"preempted\":";
  if (plan) append_ids(out, s, plan->preempted); else out += "[]";
  out += ",\"finished\":";
  if (plan) append_ids(out, s, plan->finished); else out += "[]";
  out += ",\"num_free\":";
  append_int(out, num_free);
  out += "}\n";
}

}  // namespace

SchedResult run_sched(std::istream& in, const std::string& file, std::ostream& out, const SchedOptions& opts) {
  std::unique_ptr<BlockPool> pool;
  std::unique_ptr<KvCacheManager> kv;
  std::unique_ptr<Scheduler> sched;
  const PromptSumTokens fake_model;
  std::unordered_set<std::string> seen;
  PrefixCacheStats total;
  SchedResult result;
  uint64_t added = 0;
  std::string buf;  // the whole output; written only if the script is good
  Request req;

  for_each_json_line(in, file, [&](const JsonLine& line) {
    const std::string op = line.get_string("op");
    if (op == "config") {
      if (sched) line.fail("a second config line (config must be the first line, once)");
      line.reject_unknown_keys({"op", "num_blocks", "block_size", "max_num_seqs", "max_num_batched_tokens",
                                "enable_chunked_prefill", "long_prefill_token_threshold", "max_model_len",
                                "enable_prefix_caching", "scheduler_reserve_full_isl"});
      const int64_t n = line.get_int("num_blocks", 2, kMaxNumBlocks);
      const auto block_size = static_cast<int32_t>(line.get_int("block_size", 1, kMaxBlockSize));
      SchedulerConfig cfg;
      cfg.max_num_seqs = line.get_int("max_num_seqs", 1, kMaxCount);
      cfg.max_num_batched_tokens = line.get_int("max_num_batched_tokens", 1, kMaxCount);
      if (line.has("enable_chunked_prefill")) cfg.enable_chunked_prefill = line.get_bool("enable_chunked_prefill");
      if (line.has("long_prefill_token_threshold"))
        cfg.long_prefill_token_threshold = line.get_int("long_prefill_token_threshold", 0, kMaxCount);
      if (line.has("max_model_len")) cfg.max_model_len = line.get_int("max_model_len", 2, kMaxCount);
      if (line.has("scheduler_reserve_full_isl"))
        cfg.full_sequence_must_fit = line.get_bool("scheduler_reserve_full_isl");
      const bool caching = line.has("enable_prefix_caching") ? line.get_bool("enable_prefix_caching") : true;
      pool = std::make_unique<BlockPool>(static_cast<int32_t>(n), caching, opts.make_policy());
      kv = std::make_unique<KvCacheManager>(block_size, *pool);
      sched = std::make_unique<Scheduler>(cfg, *kv, fake_model);
      return;
    }
    if (!sched) line.fail("the first line must be the config op");
    if (op != "step") line.fail("unknown op '" + op + "' (expected config or step)");
    line.reject_unknown_keys({"op", "arrive"});
    if (!line.has("arrive")) line.fail("missing field 'arrive'");
    const auto& arrive = line.json()["arrive"];
    if (!arrive.is_array()) line.fail("field 'arrive' must be an array of requests");
    for (size_t i = 0; i < arrive.size(); ++i) {
      parse_arrival(line, arrive[i], i, req);
      if (!seen.insert(req.id).second) line.fail("duplicate request id '" + req.id + "' in 'arrive[" + std::to_string(i) + "]'");
      if (sched->config().max_model_len > 0 && req.prompt_len >= sched->config().max_model_len)
        line.fail("request '" + req.id + "' has " + std::to_string(req.prompt_len) +
                  " prompt tokens; max_model_len " + std::to_string(sched->config().max_model_len) +
                  " leaves no room for an output");
      // A prompt that can never be admitted would block `waiting` forever.
      const std::string why = sched->never_fits(req.prompt_len);
      if (!why.empty()) line.fail("request '" + req.id + "' can never be scheduled: its prompt " + why);
      sched->add_request(std::move(req));
      ++added;
    }
    ++result.steps;
    if (!sched->has_requests()) {  // EngineCore.step: nothing runs, no stats
      append_step(buf, result.steps, *sched, nullptr, pool->num_free());
    } else {
      const StepPlan& plan = sched->schedule();
      sched->update_from_output();
      total += plan.prefix_stats;
      result.preemptions += plan.preempted.size();
      result.finished += plan.finished.size();
      append_step(buf, result.steps, *sched, &plan, pool->num_free());
    }
    if (opts.check_invariants) {
      const std::string broken = pool->check_invariants();
      if (!broken.empty())
        throw InternalError(line.where() + ": block pool invariant violated after step " +
                            std::to_string(result.steps) + ": " + broken);
    }
  });
  if (!sched) throw InputError(file + ":1: empty script (the first line must be the config op)");
  result.unfinished = added - result.finished;
  buf += "{\"summary\":true,\"steps\":";
  append_int(buf, static_cast<int64_t>(result.steps));
  buf += ",\"prefix_cache\":{\"requests\":";
  append_int(buf, static_cast<int64_t>(total.requests));
  buf += ",\"queries\":";
  append_int(buf, static_cast<int64_t>(total.queries));
  buf += ",\"hits\":";
  append_int(buf, static_cast<int64_t>(total.hits));
  buf += ",\"preempted_requests\":";
  append_int(buf, static_cast<int64_t>(total.preempted_requests));
  buf += ",\"preempted_queries\":";
  append_int(buf, static_cast<int64_t>(total.preempted_queries));
  buf += ",\"preempted_hits\":";
  append_int(buf, static_cast<int64_t>(total.preempted_hits));
  buf += "},\"preemptions\":";
  append_int(buf, static_cast<int64_t>(result.preemptions));
  buf += ",\"finished\":";
  append_int(buf, static_cast<int64_t>(result.finished));
  buf += ",\"unfinished\":";
  append_int(buf, static_cast<int64_t>(result.unfinished));
  buf += "}\n";
  out << buf;
  out.flush();
  return result;
}

}  // namespace prefixsim
