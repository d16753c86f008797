// Alibaba's Qwen-Bailian usage traces (github alibaba-edu/qwen-bailian-usagetraces-anon,
// README "Data Specification of the Traces"; the paper: Wang et al., "KVCache
// Cache in the Wild", USENIX ATC'25). One JSON object per line:
//   {"chat_id": 159, "parent_chat_id": 55, "timestamp": 61.114,
//    "input_length": 521, "output_length": 132, "type": "text", "turn": 2,
//    "hash_ids": [1089, 1090, ...]}
// timestamp: seconds since the trace began; parent_chat_id: -1 for the first
// turn of a conversation; type: text | search | image | file; hash_ids: one
// salted SipHash-2-4 per 16-token block, remapped to small integers.
//
// Chaining. A Bailian id names one block's *content*, not its prefix (the
// README hashes each block alone): the same 16 tokens after two different
// prefixes share an id. vLLM can only reuse a block whose whole prefix
// matches, so the ids go into the engine's hash chain like any trace
// identity (h_i = H(h_{i-1}, id_i), sim/kv/block_hash.h): block i hits only
// when ids 0..i all match. Counting a repeated id as a hit wherever it stands
// would overstate the hit rate (test_bailian_reader shows by how much on a
// fixture).
//
// Session: the conversation's first chat_id (followed through
// parent_chat_id; a parent not seen before starts its own conversation).
// Fields are strict as in the other JSONL readers: unknown or duplicate keys
// are errors naming file, line and field.
#include <cmath>
#include <cstdint>
#include <memory_resource>
#include <unordered_map>

#include "traces/bailian_scan.h"
#include "traces/jsonl_source.h"

namespace prefixsim {
namespace {

class BailianSource final : public JsonlSource {
 public:
  BailianSource(std::string path, std::unique_ptr<LineReader> lines, const TraceOptions& opts)
      : JsonlSource(std::move(path), std::move(lines), opts),
        block_size_(opts.trace_block_size > 0 ? opts.trace_block_size : 16) {}
  std::string format() const override { return "bailian"; }

 protected:
  const char* time_key() const override { return "timestamp"; }

  bool parse_fast(std::string_view text, const JsonFields& f, long, Request& out) override {
    BailianRow row;
    if (!scan_bailian_line(text, out, row)) return false;  // it also declines what parse() rejects
    finish(f, row.chat, row.parent, out);
    return true;
  }

  void parse(simdjson::dom::object obj, const JsonFields& f, long, Request& out) override {
    enum { kChat, kParent, kTimestamp, kInput, kOutput, kType, kTurn, kIds, kCount };
    bool seen[kCount] = {};
    auto mark = [&](int bit, std::string_view k) {
      if (seen[bit]) f.fail("field \"" + std::string(k) + "\" appears twice");
      seen[bit] = true;
    };
    int64_t chat = 0, parent = -1;
    for (auto field : obj) {
      const std::string_view k = field.key;
      const simdjson::dom::element v = field.value;
      if (k == "chat_id") {
        mark(kChat, k);
        chat = f.get_int(v, k, 0, INT64_MAX);
      } else if (k == "parent_chat_id") {
        mark(kParent, k);
        parent = f.get_int(v, k, -1, INT64_MAX);
      } else if (k == "timestamp") {
        mark(kTimestamp, k);
        out.arrival = seconds_to_ns(f, f.get_nonneg_number(v, k), "timestamp");
      } else if (k == "input_length") {
        mark(kInput, k);
        out.prompt_len = f.get_int(v, k, 1, kMaxTokens);
      } else if (k == "output_length") {
        mark(kOutput, k);
        out.output_len = f.get_int(v, k, 0, kMaxTokens);
      } else if (k == "type") {
        mark(kType, k);
        const std::string_view t = f.get_string(v, k);
        if (t != "text" && t != "search" && t != "image" && t != "file")
          f.fail("field \"type\": '" + std::string(t) + "' is not text, search, image or file");
      } else if (k == "turn") {
        mark(kTurn, k);
        f.get_int(v, k, 1, INT64_MAX);
      } else if (k == "hash_ids") {
        mark(kIds, k);
        f.get_ids(v, k, out.hash_ids);
      } else {
        f.fail("unknown field \"" + std::string(k) + "\" in a Bailian trace line");
      }
    }
    for (auto [bit, key] : {std::pair{kChat, "chat_id"}, {kParent, "parent_chat_id"}, {kTimestamp, "timestamp"},
                            {kInput, "input_length"}, {kOutput, "output_length"}, {kIds, "hash_ids"}})
      if (!seen[bit]) f.fail(std::string("missing field \"") + key + "\"");
    if (out.hash_ids.empty()) f.fail("field \"hash_ids\" is empty");
    if (parent == chat) f.fail("field \"parent_chat_id\": a chat cannot be its own parent");
    finish(f, chat, parent, out);
  }

 private:
  // What both paths add to a row: block size, id, and the session. A chat
  // id names one request: a repeat would make two requests one id and
  // re-root its children, so it is refused (as agentic request ids are).
  void finish(const JsonFields& f, int64_t chat, int64_t parent, Request& out) {
    out.trace_block_size = block_size_;
    assign_decimal(out.id, chat);
    // The conversation: the root of the parent chain, as far as it was seen.
    int64_t root = chat;
    if (parent >= 0) {
      const auto it = root_of_.find(parent);
      root = it == root_of_.end() ? parent : it->second;
    }
    if (!root_of_.emplace(chat, root).second)
      f.fail("field \"chat_id\": " + std::to_string(chat) + " appears on an earlier line too");
    assign_decimal(out.session, root);
    // Request::validate (called by the line loop) checks
    // len(hash_ids) == ceil(input_length / trace_block_size).
  }

  int32_t block_size_;
  // chat -> its conversation's first chat (8 B x 2 per chat, plus a node's
  // and a bucket's overhead). Its nodes come from a pool, not one malloc a
  // line: they live as long as the reader anyway.
  std::pmr::monotonic_buffer_resource pool_;
  std::pmr::unordered_map<int64_t, int64_t> root_of_{&pool_};
};

}  // namespace

std::unique_ptr<RequestSource> make_bailian_source(std::string path, std::unique_ptr<LineReader> lines,
                                                   const TraceOptions& opts) {
  return std::make_unique<BailianSource>(std::move(path), std::move(lines), opts);
}

}  // namespace prefixsim
