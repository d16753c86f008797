// Dynamo's agentic Mooncake JSONL (github ai-dynamo/dynamo: the
// AgenticMooncakeRow of its replay/mocker trace types, written by
// benchmarks' agent_trace_to_mooncake --agentic): a Mooncake row
// (`timestamp` in ms, `input_length`, `output_length`, `hash_ids` of
// --trace-block-size tokens, 512 by default) plus request-level workflow
// dependencies:
//
//   {"request_id": "r2", "session_id": "root", "timestamp": 300,
//    "input_length": 1024, "output_length": 20, "hash_ids": [0, 1],
//    "wait_for": ["r1"], "delay": 100, "tool_wait_ms": 100,
//    "branches": [], "prefix_reset": false}
//
// Dynamo dispatches a row after every request in `wait_for` has completed,
// plus its `delay` (idle time, alias `delay_ms`) and `tool_wait_ms` (time in
// tools): its dependency delay is their sum. A row without `wait_for` is
// dispatched at its `timestamp`. The engine (sim/engine/engine.h) does the
// same: Request::wait_for and wait_after. `timestamp` stays the recorded
// start: rows come in its order (the converter sorts them so), and cache
// mode and analyze, which have no clock, replay the rows in that order.
// A `delay` or `tool_wait_ms` on a row without `wait_for` has nothing to
// count from, as in Dynamo, and is ignored.
//
// `branches` (the requests a row spawns: the inverse of their `wait_for`)
// and `prefix_reset` (true on the first request of a trajectory) describe
// the workflow; the block ids already say what each prompt shares, so
// neither changes the replay; both are type-checked. `session_id` is the
// session; `output_token_ids`, when given, are the recorded outputs.
// `priority`, `strict_priority`, `policy_class`, `request_kind` and
// `tool_events` are Dynamo scheduling hints and tool telemetry that this
// single-queue vLLM scheduler has no use for: type-checked and ignored.
//
// Checks beyond a Mooncake row: `request_id` is unique, and every id in
// `wait_for` names a request of an earlier line (so dependencies cannot
// form a cycle, and the engine never waits for a request it has not seen).
// The set of ids read so far is kept for that (one string per request).
#include <limits>

#include "traces/agentic_scan.h"
#include "traces/string_set.h"
#include "traces/json_scan.h"
#include "traces/jsonl_source.h"

namespace prefixsim {
namespace {

class AgenticMooncakeSource final : public JsonlSource {
 public:
  AgenticMooncakeSource(std::string path, std::unique_ptr<LineReader> lines, const TraceOptions& opts)
      : JsonlSource(std::move(path), std::move(lines), opts),
        block_size_(opts.trace_block_size > 0 ? opts.trace_block_size : 512) {}
  std::string format() const override { return "agentic-mooncake"; }

 protected:
  const char* time_key() const override { return "timestamp"; }

  // The fast path (agentic_scan.h): the row's fields, then parse()'s rules
  // and checks of earlier ids; a row that breaks one is left to parse().
  bool parse_fast(std::string_view text, const JsonFields&, long, Request& out) override {
    AgenticRow row;
    if (!scan_agentic_line(text, out, row) || out.hash_ids.empty()) return false;
    if (row.output_tokens && out.output_tokens.size() != static_cast<size_t>(out.output_len)) return false;
    const double arrival_s = row.timestamp_ms / 1000.0, wait_s = (row.delay_ms + row.tool_wait_ms) / 1000.0;
    if (arrival_s > json_scan::kMaxSeconds || wait_s > json_scan::kMaxSeconds) return false;
    for (const std::string& id : out.wait_for)
      if (!seen_ids_.contains(id)) return false;
    if (!seen_ids_.insert(out.id)) return false;  // the last check: nothing to undo
    out.arrival = json_scan::ns_of_seconds(arrival_s);
    if (!out.wait_for.empty()) out.wait_after = json_scan::ns_of_seconds(wait_s);
    out.awaitable = true;
    out.trace_block_size = block_size_;
    return true;
  }

  void parse(simdjson::dom::object obj, const JsonFields& f, long, Request& out) override {
    enum {
      kId, kSession, kTimestamp, kInput, kOutput, kIds, kWaitFor, kBranches, kReset, kDelay, kToolWait,
      kOutTokens, kHint
    };
    SeenFields seen(f);
    double delay_ms = 0, tool_wait_ms = 0;
    for (auto field : obj) {
      const std::string_view k = field.key;
      const simdjson::dom::element v = field.value;
      if (k == "request_id") {
        seen.mark(kId, k);
        out.id = f.get_string(v, k);
        if (out.id.empty()) f.fail("field \"request_id\": empty");
      } else if (k == "session_id") {
        seen.mark(kSession, k);
        out.session = f.get_string(v, k);
      } else if (k == "timestamp") {
        seen.mark(kTimestamp, k);
        out.arrival = seconds_to_ns(f, f.get_nonneg_number(v, k) / 1000.0, "timestamp");  // ms -> ns
      } else if (k == "input_length") {
        seen.mark(kInput, k);
        out.prompt_len = f.get_int(v, k, 1, kMaxTokens);
      } else if (k == "output_length") {
        seen.mark(kOutput, k);
        out.output_len = f.get_int(v, k, 0, kMaxTokens);
      } else if (k == "hash_ids") {
        seen.mark(kIds, k);
        f.get_ids(v, k, out.hash_ids);
      } else if (k == "wait_for") {
        seen.mark(kWaitFor, k);
        size_t i = 0;
        for (simdjson::dom::element x : f.get_array(v, k)) {
          const std::string at = "wait_for[" + std::to_string(i++) + "]";
          std::string id(f.get_string(x, at));
          if (!seen_ids_.contains(id))
            f.fail("field \"" + at + "\": \"" + id + "\" is not the request_id of an earlier line");
          out.wait_for.push_back(std::move(id));
        }
      } else if (k == "branches") {
        seen.mark(kBranches, k);
        size_t i = 0;
        for (simdjson::dom::element x : f.get_array(v, k)) f.get_string(x, "branches[" + std::to_string(i++) + "]");
      } else if (k == "prefix_reset") {
        seen.mark(kReset, k);
        bool b = false;
        if (v.get_bool().get(b)) f.fail("field \"prefix_reset\": expected true or false");
      } else if (k == "delay" || k == "delay_ms") {
        seen.mark(kDelay, k);
        delay_ms = f.get_nonneg_number(v, k);
      } else if (k == "tool_wait_ms") {
        seen.mark(kToolWait, k);
        tool_wait_ms = f.get_nonneg_number(v, k);
      } else if (k == "output_token_ids") {
        seen.mark(kOutTokens, k);
        f.get_tokens(v, k, out.output_tokens);
      } else if (k == "priority" || k == "strict_priority") {
        f.get_int(v, k, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      } else if (k == "policy_class" || k == "request_kind") {
        f.get_string(v, k);
      } else if (k == "tool_events") {
        f.get_array(v, k);
      } else {
        f.fail("unknown field \"" + std::string(k) + "\" in an agentic Mooncake trace line");
      }
    }
    for (auto [bit, key] : {std::pair{kId, "request_id"}, {kTimestamp, "timestamp"}, {kInput, "input_length"},
                            {kOutput, "output_length"}, {kIds, "hash_ids"}})
      if (!seen.has(bit)) f.fail(std::string("missing field \"") + key + "\"");
    if (out.hash_ids.empty()) f.fail("field \"hash_ids\" is empty");
    if (seen.has(kOutTokens) && out.output_tokens.size() != static_cast<size_t>(out.output_len))
      f.fail("field \"output_token_ids\" has " + std::to_string(out.output_tokens.size()) +
             " tokens but \"output_length\" is " + std::to_string(out.output_len));
    const TimeNs wait = seconds_to_ns(f, (delay_ms + tool_wait_ms) / 1000.0, "delay\" + \"tool_wait_ms");
    if (!out.wait_for.empty()) out.wait_after = wait;
    if (!seen_ids_.insert(out.id))
      f.fail("field \"request_id\": \"" + out.id + "\" appears on an earlier line too");
    out.awaitable = true;
    out.trace_block_size = block_size_;
    // Request::validate (called by the line loop) checks
    // len(hash_ids) == ceil(input_length / trace_block_size).
  }

 private:
  int32_t block_size_;
  StringSet seen_ids_;  // every request_id so far
};

}  // namespace

std::unique_ptr<RequestSource> make_agentic_mooncake_source(std::string path, std::unique_ptr<LineReader> lines,
                                                            const TraceOptions& opts) {
  return std::make_unique<AgenticMooncakeSource>(std::move(path), std::move(lines), opts);
}

}  // namespace prefixsim
