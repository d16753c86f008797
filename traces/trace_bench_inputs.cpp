#include "traces/trace_bench_inputs.h"

#include <algorithm>
#include <span>
#include <unordered_map>

#include "sim/base/json_out.h"
#include "sim/base/mix.h"
#include "traces/native_writer.h"

namespace prefixsim {
namespace {

// The ids as JSON, ", "-separated as the Mooncake release writes them.
void append_ids(std::string& out, const std::vector<uint64_t>& ids, const char* sep) {
  out.push_back('[');
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) out += sep;
    out += std::to_string(ids[k]);
  }
  out.push_back(']');
}

// Each request's conversation root (its own index for a first turn).
std::vector<int> roots_of(const std::vector<int>& parent) {
  std::vector<int> root(parent.size());
  for (size_t i = 0; i < parent.size(); ++i) root[i] = parent[i] < 0 ? static_cast<int>(i) : root[parent[i]];
  return root;
}

}  // namespace

std::string ids19_trace(int requests) {
  std::string text;
  uint64_t x = 0x9e3779b97f4a7c15ULL, next_id = 0;
  auto rnd = [&x] { return x = mix64(x + 0x2545f4914f6cdd1dULL); };
  auto id19 = [&next_id] { return 1'000'000'000'000'000'000ULL + mix64(++next_id) % 8'000'000'000'000'000'000ULL; };
  std::vector<uint64_t> ids;
  int turns_left = 0;
  for (int i = 0; i < requests; ++i) {
    if (turns_left == 0) {
      ids.clear();
      turns_left = 1 + static_cast<int>(rnd() % 6);
    }
    --turns_left;
    const int fresh = 1 + static_cast<int>(rnd() % 24);
    for (int k = 0; k < fresh; ++k) ids.push_back(id19());
    const uint64_t input = ids.size() * 512 - rnd() % 512;
    text += "{\"timestamp\": " + std::to_string(i * 37) + ", \"input_length\": " + std::to_string(input) +
            ", \"output_length\": " + std::to_string(1 + rnd() % 800) + ", \"hash_ids\": ";
    append_ids(text, ids, ", ");
    text += "}\n";
  }
  return text;
}

std::string small_requests_trace(int requests) {
  uint64_t x = 0x7a3c5e9b1d2f4861ULL, next_id = 0;
  auto rnd = [&x] { return x = mix64(x + 0x2545f4914f6cdd1dULL); };
  auto uniform = [&rnd] { return static_cast<double>((rnd() >> 11) + 1) * 0x1.0p-53; };  // (0, 1]
  auto id19 = [&next_id] { return 1'000'000'000'000'000'000ULL + mix64(++next_id) % 8'000'000'000'000'000'000ULL; };
  auto fresh = [&](std::vector<uint64_t>& ids, uint64_t n) {
    for (uint64_t k = 0; k < n; ++k) ids.push_back(id19());
  };
  constexpr size_t kSystems = 2000, kMaxBlocks = 160;
  std::vector<std::vector<uint64_t>> systems(kSystems);
  for (auto& sys : systems) fresh(sys, 20 + rnd() % 41);
  std::vector<uint64_t> ids;
  std::string text;
  int turns_left = 0;
  for (int i = 0; i < requests; ++i) {
    if (turns_left == 0) {
      // Pareto(1): index k with probability ~1/(k+1)(k+2).
      const size_t pick = rnd() % 10 < 9 ? std::min<size_t>(static_cast<size_t>(1.0 / uniform()) - 1, kSystems - 1)
                                         : rnd() % kSystems;
      ids = systems[pick];
      fresh(ids, 10 + rnd() % 31);
      turns_left = 1 + static_cast<int>(rnd() % 6);
    } else {
      fresh(ids, 5 + rnd() % 21);
    }
    --turns_left;
    if (ids.size() > kMaxBlocks) ids.resize(kMaxBlocks);
    const uint64_t input = ids.size() * 16 - rnd() % 16;
    text += "{\"timestamp\": " + std::to_string(i * 37) + ", \"input_length\": " + std::to_string(input) +
            ", \"output_length\": " + std::to_string(1 + rnd() % 300) + ", \"hash_ids\": ";
    append_ids(text, ids, ", ");
    text += "}\n";
  }
  return text;
}

std::string native_tokens_trace(int requests) {
  uint64_t x = 0x51ed270b27a4c1f3ULL;
  auto rnd = [&x] { return x = mix64(x + 0x2545f4914f6cdd1dULL); };
  auto token = [&rnd] { return static_cast<int32_t>(rnd() % 151'936); };
  std::vector<std::vector<int32_t>> systems(8);
  for (auto& s : systems) {
    s.resize(256 + rnd() % 1024);
    for (int32_t& t : s) t = token();
  }
  std::string text;
  Request r;
  int turns_left = 0, conversation = 0;
  for (int i = 0; i < requests; ++i) {
    if (turns_left == 0) {
      r.tokens = systems[rnd() % systems.size()];
      r.session = "conv-" + std::to_string(++conversation);
      turns_left = 1 + static_cast<int>(rnd() % 6);
    } else {  // the previous turn's answer, then the user's next message
      for (int64_t k = 0; k < r.output_len; ++k) r.tokens.push_back(token());
    }
    --turns_left;
    for (int k = 20 + static_cast<int>(rnd() % 280); k > 0; --k) r.tokens.push_back(token());
    r.id = "req-" + std::to_string(i);
    r.arrival = static_cast<TimeNs>(i) * 37'000'000;
    r.prompt_len = static_cast<int64_t>(r.tokens.size());
    r.output_len = 16 + static_cast<int64_t>(rnd() % 500);
    append_native_json(text, r);
    text.push_back('\n');
  }
  return text;
}

std::vector<int> conversation_parents(const std::vector<Request>& reqs) {
  std::vector<int> parent(reqs.size(), -1);
  std::unordered_map<uint64_t, int> holder;  // id -> the latest request holding it
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::vector<uint64_t>& ids = reqs[i].hash_ids;
    for (size_t k = ids.size(); k >= 2 && parent[i] < 0; --k)
      if (const auto it = holder.find(ids[k - 1]); it != holder.end()) parent[i] = it->second;
    for (uint64_t id : ids) holder[id] = static_cast<int>(i);
  }
  return parent;
}

std::string as_native(const std::vector<Request>& reqs) {
  std::string text;
  for (const Request& r : reqs) {
    append_native_json(text, r);
    text.push_back('\n');
  }
  return text;
}

std::string as_agentic_mooncake(const std::vector<Request>& reqs) {
  const std::vector<int> parent = conversation_parents(reqs);
  const std::vector<int> root = roots_of(parent);
  std::string text;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = reqs[i];
    const int64_t ms = r.arrival / 1'000'000;
    text += "{\"request_id\": \"r" + std::to_string(i) + "\", \"session_id\": \"s" + std::to_string(root[i]) +
            "\", \"timestamp\": " + std::to_string(ms) + ", \"input_length\": " + std::to_string(r.prompt_len) +
            ", \"output_length\": " + std::to_string(r.output_len) + ", \"hash_ids\": ";
    append_ids(text, r.hash_ids, ", ");
    if (parent[i] >= 0) {
      const int64_t gap = ms - reqs[parent[i]].arrival / 1'000'000;
      text += ", \"wait_for\": [\"r" + std::to_string(parent[i]) + "\"], \"delay\": " + std::to_string(gap / 2) +
              ", \"tool_wait_ms\": " + std::to_string(gap - gap / 2) + "}\n";
    } else {
      text += ", \"prefix_reset\": true}\n";
    }
  }
  return text;
}

std::string as_bailian(const std::vector<Request>& reqs) {
  const std::vector<int> parent = conversation_parents(reqs);
  std::vector<int> turn(reqs.size(), 1);
  std::string text;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = reqs[i];
    if (parent[i] >= 0) turn[i] = turn[parent[i]] + 1;
    text += "{\"chat_id\": " + std::to_string(i + 1) +
            ", \"parent_chat_id\": " + std::to_string(parent[i] < 0 ? -1 : parent[i] + 1) + ", \"timestamp\": ";
    append_seconds(text, r.arrival);
    text += ", \"input_length\": " + std::to_string(r.prompt_len) + ", \"output_length\": " +
            std::to_string(r.output_len) + ", \"type\": \"text\", \"turn\": " + std::to_string(turn[i]) +
            ", \"hash_ids\": ";
    append_ids(text, r.hash_ids, ", ");
    text += "}\n";
  }
  return text;
}

std::string as_kvcache_jsonl(const std::vector<Request>& reqs) {
  const std::vector<int> root = roots_of(conversation_parents(reqs));
  std::vector<std::vector<int>> members(reqs.size());
  bool local = true;
  for (size_t i = 0; i < reqs.size(); ++i) {
    members[root[i]].push_back(static_cast<int>(i));
    for (uint64_t id : reqs[i].hash_ids) local &= id < (1ULL << 40);
  }
  std::string text;
  for (size_t c = 0; c < reqs.size(); ++c) {
    if (members[c].empty()) continue;
    text += "{\"id\":\"conv-" + std::to_string(c) + "\",\"block_size\":" + std::to_string(reqs[c].trace_block_size) +
            ",\"hash_id_scope\":\"" + (local ? "local" : "global") + "\",\"requests\":[";
    for (size_t k = 0; k < members[c].size(); ++k) {
      const Request& r = reqs[members[c][k]];
      text += k ? ",{\"t\":" : "{\"t\":";
      append_seconds(text, r.arrival - reqs[c].arrival);
      text += ",\"type\":\"n\",\"in\":" + std::to_string(r.prompt_len) + ",\"out\":" + std::to_string(r.output_len) +
              ",\"hash_ids\":";
      append_ids(text, r.hash_ids, ",");
      text.push_back('}');
    }
    text += "]}\n";
  }
  return text;
}

}  // namespace prefixsim
