// The differential harness of the JSONL fast-path tests (test_*_scan.cpp):
// a text read through a format's reader twice, with its fast path
// (TraceOptions::fast_scan) and without it (simdjson's DOM for every
// line), must give the same requests and then the same error, if any, word
// for word (file, line and field). Texts are read from memory, so a test
// can afford a reader per mutated line.
#pragma once

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/engine/request.h"
#include "traces/byte_stream.h"
#include "traces/jsonl_source.h"

namespace prefixsim::test {

class TextStream final : public ByteStream {
 public:
  explicit TextStream(const std::string& text) : text_(text) {}
  size_t read(char* buf, size_t n) override {
    n = std::min(n, text_.size() - pos_);
    std::memcpy(buf, text_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  const std::string& text_;
  size_t pos_ = 0;
};

// What a reader made of a text: its requests, then the error that stopped
// it ("" when it reached the end).
struct Outcome {
  std::vector<Request> requests;
  std::string error;
};

using MakeSource = std::unique_ptr<RequestSource> (*)(std::string, std::unique_ptr<LineReader>, const TraceOptions&);

inline Outcome read_text(MakeSource make, const std::string& text, TraceOptions opts, bool fast) {
  opts.fast_scan = fast;
  Outcome o;
  try {
    auto src = make("mem.jsonl", std::make_unique<LineReader>(std::make_unique<TextStream>(text),
                                                              simdjson::SIMDJSON_PADDING), opts);
    Request r;
    while (src->next(r)) o.requests.push_back(r);
  } catch (const InputError& e) {
    o.error = e.what();
  }
  return o;
}

// "" when equal, else the first field that differs.
inline std::string request_diff(const Request& a, const Request& b) {
  if (a.id != b.id) return "id: " + a.id + " vs " + b.id;
  if (a.arrival != b.arrival) return "arrival: " + std::to_string(a.arrival) + " vs " + std::to_string(b.arrival);
  if (a.tokens != b.tokens) return "tokens";
  if (a.hash_ids != b.hash_ids) return "hash_ids";
  if (a.trace_block_size != b.trace_block_size) return "trace_block_size";
  if (a.prompt_len != b.prompt_len) return "prompt_len";
  if (a.output_len != b.output_len) return "output_len";
  if (a.output_tokens != b.output_tokens) return "output_tokens";
  if (a.session != b.session) return "session: " + a.session + " vs " + b.session;
  if (a.extras.salt != b.extras.salt) return "salt";
  if (a.extras.lora != b.extras.lora) return "lora";
  if (a.extras.mm.size() != b.extras.mm.size()) return "mm";
  if (a.wait_for != b.wait_for) return "wait_for";
  if (a.wait_after != b.wait_after) return "wait_after";
  if (a.awaitable != b.awaitable) return "awaitable";
  return {};
}

// "" when the two outcomes agree, else how they differ.
inline std::string outcome_diff(const Outcome& fast, const Outcome& slow) {
  if (fast.error != slow.error) return "errors differ: fast \"" + fast.error + "\", simdjson \"" + slow.error + "\"";
  if (fast.requests.size() != slow.requests.size())
    return "request counts differ: " + std::to_string(fast.requests.size()) + " vs " +
           std::to_string(slow.requests.size());
  for (size_t i = 0; i < fast.requests.size(); ++i)
    if (std::string d = request_diff(fast.requests[i], slow.requests[i]); !d.empty())
      return "request " + std::to_string(i) + ": " + d;
  return {};
}

// Reads `text` both ways and checks they agree; returns the outcome.
inline Outcome check_both_paths(MakeSource make, const std::string& text, const TraceOptions& opts = {}) {
  const Outcome fast = read_text(make, text, opts, true);
  const Outcome slow = read_text(make, text, opts, false);
  const std::string d = outcome_diff(fast, slow);
  if (!d.empty()) {
    // Cut: Catch wraps a message in time quadratic in its length, and a
    // long text would make a failing test look hung.
    INFO("text" << (text.size() > 4000 ? " (its first 4000 bytes)" : "") << ":\n" << text.substr(0, 4000));
    FAIL(d);
  }
  return fast;
}

// Each line of `text` with every one-byte deletion, after the lines before
// it (so that rows referring to earlier ones stay meaningful), read both ways.
inline void check_each_deletion(MakeSource make, const std::string& text) {
  std::istringstream in(text);
  std::string line, before;
  while (std::getline(in, line)) {
    for (size_t at = 0; at < line.size(); ++at)
      check_both_paths(make, before + line.substr(0, at) + line.substr(at + 1) + "\n");
    before += line + "\n";
  }
}

// `line` followed by json_scan::kScanPadding bytes, as the line scanners
// need (the reader's LineReader provides them): a view into `buf`. The
// padding is list syntax ("0, 1]..."), so a scanner that looked past the
// line would be caught reading it.
inline std::string_view padded(const std::string& line, std::string& buf) {
  buf = line;
  while (buf.size() < line.size() + 80) buf += "0, 1]";
  return std::string_view(buf.data(), line.size());
}

// JSON whitespace, mostly none.
inline std::string ws(std::mt19937_64& rng) {
  static const char* const kinds[] = {"", "", "", " ", "  ", "\t", " \r "};
  return kinds[rng() % 7];
}

// A JSON object of `members` ("\"key\": value" strings without spacing
// around the colon yet) in a random order with random whitespace.
inline std::string object_of(std::vector<std::pair<std::string, std::string>> members, std::mt19937_64& rng) {
  std::shuffle(members.begin(), members.end(), rng);
  std::string s = ws(rng) + "{" + ws(rng);
  for (size_t k = 0; k < members.size(); ++k)
    s += (k ? "," + ws(rng) : "") + "\"" + members[k].first + "\"" + ws(rng) + ":" + ws(rng) + members[k].second +
         ws(rng);
  return s + "}" + ws(rng);
}

// One random edit: a byte replaced, inserted or removed, from characters
// that matter to JSON numbers, strings and structure (or from `alphabet`).
inline constexpr std::string_view kMutationAlphabet = "{}[]\":,.-+eE0123456789 \t\\axu\x01\xc3\x80tfn";
inline std::string mutate(std::string s, std::mt19937_64& rng, std::string_view alphabet = kMutationAlphabet) {
  const size_t at = s.empty() ? 0 : rng() % s.size();
  const char c = alphabet[rng() % alphabet.size()];
  switch (rng() % 3) {
    case 0: if (!s.empty()) s[at] = c; break;
    case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c); break;
    default: if (!s.empty()) s.erase(at, 1); break;
  }
  return s;
}

// An unsigned number of 1 to max_digits digits (sometimes "0").
inline std::string random_uint(std::mt19937_64& rng, int max_digits) {
  const int d = 1 + static_cast<int>(rng() % static_cast<uint64_t>(max_digits));
  std::string s(1, static_cast<char>('1' + rng() % 9));
  for (int k = 1; k < d; ++k) s += static_cast<char>('0' + rng() % 10);
  return rng() % 10 == 0 ? std::string("0") : s;
}

// A non-negative decimal as traces write times: an integer, or up to 9
// decimals (at most 15 digits, which the fast paths take); `longer`:
// sometimes up to 16 decimals, which they leave to simdjson.
inline std::string random_decimal(std::mt19937_64& rng, bool longer = false) {
  std::string s = random_uint(rng, 6);
  if (rng() % 4 == 0) return s;
  s += '.';
  const int d = 1 + static_cast<int>(rng() % (longer && rng() % 8 == 0 ? 16 : 9));
  for (int k = 0; k < d; ++k) s += static_cast<char>('0' + rng() % 10);
  return s;
}

}  // namespace prefixsim::test
