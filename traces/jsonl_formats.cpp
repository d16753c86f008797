// The two JSONL trace formats: native (ours, DESIGN.md) and Mooncake.
// Both reject unknown and duplicate fields: a misspelt key must not be
// ignored silently.
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "traces/jsonl_source.h"
#include "traces/mooncake_scan.h"
#include "traces/native_scan.h"

namespace prefixsim {
namespace {

// Multimodal hash: up to 32 hex digits are the 128-bit value itself (what
// the writer's to_hex produces, so it round-trips); a longer digest (e.g. a
// sha256) is folded to 128 bits with XXH3-128.
BlockHash parse_mm_hash(const JsonFields& f, std::string_view hex, size_t i) {
  const auto bad = [&] { f.fail("field \"mm\"[" + std::to_string(i) + "].hash: expected a non-empty hex string"); };
  if (hex.empty()) bad();
  for (char c : hex)
    if (!std::isxdigit(static_cast<unsigned char>(c))) bad();
  if (hex.size() > 32) {
    std::string lower(hex);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
    const XXH128_hash_t h = XXH3_128bits(lower.data(), lower.size());
    return BlockHash{h.low64, h.high64};
  }
  BlockHash h;
  for (char c : hex) {
    const uint64_t d = static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
    h.hi = (h.hi << 4) | (h.lo >> 60);
    h.lo = (h.lo << 4) | d;
  }
  return h;
}

class NativeSource final : public JsonlSource {
 public:
  using JsonlSource::JsonlSource;
  std::string format() const override { return "native"; }

 protected:
  const char* time_key() const override { return "t"; }

  bool parse_fast(std::string_view text, const JsonFields&, long line, Request& out) override {
    return scan_native_line(text, opts().trace_block_size, line, out);
  }

  void parse(simdjson::dom::object obj, const JsonFields& f, long line, Request& out) override {
    enum { kId, kT, kTokens, kIds, kBlockSize, kPromptLen, kOutLen, kOutTokens, kSession, kSalt, kLora, kMm };
    SeenFields seen(f);
    int64_t block_size = 0, prompt_len = 0, output_len = 0;
    for (auto field : obj) {
      const std::string_view k = field.key;
      const simdjson::dom::element v = field.value;
      if (k == "id") {
        seen.mark(kId, k);
        out.id = f.get_string(v, k);
      } else if (k == "t") {
        seen.mark(kT, k);
        out.arrival = seconds_to_ns(f, f.get_nonneg_number(v, k), "t");
      } else if (k == "tokens") {
        seen.mark(kTokens, k);
        f.get_tokens(v, k, out.tokens);
      } else if (k == "hash_ids") {
        seen.mark(kIds, k);
        f.get_ids(v, k, out.hash_ids);
      } else if (k == "block_size") {
        seen.mark(kBlockSize, k);
        block_size = f.get_int(v, k, 1, 1 << 20);
      } else if (k == "prompt_len") {
        seen.mark(kPromptLen, k);
        prompt_len = f.get_int(v, k, 1, kMaxTokens);
      } else if (k == "output_len") {
        seen.mark(kOutLen, k);
        output_len = f.get_int(v, k, 0, kMaxTokens);
      } else if (k == "output_tokens") {
        seen.mark(kOutTokens, k);
        f.get_tokens(v, k, out.output_tokens);
      } else if (k == "session") {
        seen.mark(kSession, k);
        out.session = f.get_string(v, k);
      } else if (k == "salt") {
        seen.mark(kSalt, k);
        out.extras.salt = f.get_string(v, k);
      } else if (k == "lora") {
        seen.mark(kLora, k);
        out.extras.lora = static_cast<int32_t>(f.get_int(v, k, 0, std::numeric_limits<int32_t>::max()));
      } else if (k == "mm") {
        seen.mark(kMm, k);
        parse_mm(v, f, out);
      } else {
        f.fail("unknown field \"" + std::string(k) + "\" in a native trace line");
      }
    }
    if (!seen.has(kT)) f.fail("missing field \"t\" (arrival time in seconds)");
    if (!seen.has(kId)) assign_decimal(out.id, line);
    if (seen.has(kTokens) == seen.has(kIds)) f.fail("a request needs exactly one of \"tokens\" and \"hash_ids\"");
    if (seen.has(kIds)) {
      if (!seen.has(kBlockSize)) block_size = opts().trace_block_size;
      if (block_size <= 0) f.fail("field \"hash_ids\" needs \"block_size\" (or --trace-block-size)");
      if (out.hash_ids.size() > static_cast<size_t>(kMaxTokens / block_size + 1))
        f.fail("field \"hash_ids\": prompt longer than " + std::to_string(kMaxTokens) + " tokens");
      out.trace_block_size = static_cast<int32_t>(block_size);
      out.prompt_len = seen.has(kPromptLen) ? prompt_len : static_cast<int64_t>(out.hash_ids.size()) * block_size;
    } else {
      if (seen.has(kBlockSize)) f.fail("field \"block_size\" only applies to \"hash_ids\"");
      out.prompt_len = seen.has(kPromptLen) ? prompt_len : static_cast<int64_t>(out.tokens.size());
    }
    if (seen.has(kOutLen)) {
      out.output_len = output_len;
      if (seen.has(kOutTokens) && out.output_tokens.size() != static_cast<size_t>(output_len))
        f.fail("field \"output_tokens\" has " + std::to_string(out.output_tokens.size()) +
               " tokens but \"output_len\" is " + std::to_string(output_len));
    } else if (seen.has(kOutTokens)) {
      out.output_len = static_cast<int64_t>(out.output_tokens.size());
    } else {
      f.fail("missing field \"output_len\"");
    }
    for (size_t i = 0; i < out.extras.mm.size(); ++i) {
      const MultimodalInput& m = out.extras.mm[i];
      if (m.offset + m.length > out.prompt_len)
        f.fail("field \"mm\"[" + std::to_string(i) + "]: tokens [" + std::to_string(m.offset) + ", " +
               std::to_string(m.offset + m.length) + ") lie outside the prompt of " + std::to_string(out.prompt_len) +
               " tokens");
    }
    std::stable_sort(out.extras.mm.begin(), out.extras.mm.end(),
                     [](const MultimodalInput& a, const MultimodalInput& b) { return a.offset < b.offset; });
  }

 private:
  // The multimodal inputs, in file order (sorted and bounds-checked once
  // the prompt length is known).
  static void parse_mm(simdjson::dom::element v, const JsonFields& f, Request& out) {
    size_t i = 0;
    for (simdjson::dom::element entry : f.get_array(v, "mm")) {
      const std::string where = "field \"mm\"[" + std::to_string(i) + "]";
      simdjson::dom::object o;
      if (entry.get_object().get(o)) f.fail(where + ": expected an object {hash, offset, length}");
      MultimodalInput m;
      int seen = 0;
      for (auto field : o) {
        const std::string_view k = field.key;
        const simdjson::dom::element fv = field.value;
        if (k == "hash") {
          m.hash = parse_mm_hash(f, f.get_string(fv, "mm.hash"), i);
          seen |= 1;
        } else if (k == "offset") {
          m.offset = f.get_int(fv, "mm.offset", 0, kMaxTokens);
          seen |= 2;
        } else if (k == "length") {
          m.length = f.get_int(fv, "mm.length", 1, kMaxTokens);
          seen |= 4;
        } else {
          f.fail(where + ": unknown field \"" + std::string(k) + "\"");
        }
      }
      if (seen != 7) f.fail(where + ": needs \"hash\", \"offset\" and \"length\"");
      out.extras.mm.push_back(m);
      ++i;
    }
  }
};

class MooncakeSource final : public JsonlSource {
 public:
  MooncakeSource(std::string path, std::unique_ptr<LineReader> lines, const TraceOptions& opts)
      : JsonlSource(std::move(path), std::move(lines), opts),
        block_size_(opts.trace_block_size > 0 ? opts.trace_block_size : 512) {}
  std::string format() const override { return "mooncake"; }

 protected:
  const char* time_key() const override { return "timestamp"; }

  bool parse_fast(std::string_view text, const JsonFields& f, long line, Request& out) override {
    MooncakeLine m;
    if (!scan_mooncake_line(text, kMaxTokens, m, out.hash_ids)) return false;
    // As parse() computes it from an integer timestamp.
    out.arrival = seconds_to_ns(f, static_cast<double>(m.timestamp_ms) / 1000.0, "timestamp");
    out.prompt_len = m.input_length;
    out.output_len = m.output_length;
    out.trace_block_size = block_size_;
    assign_decimal(out.id, line);
    return true;
  }

  void parse(simdjson::dom::object obj, const JsonFields& f, long line, Request& out) override {
    enum { kTimestamp, kInput, kOutput, kIds };
    SeenFields seen(f);
    for (auto field : obj) {
      const std::string_view k = field.key;
      const simdjson::dom::element v = field.value;
      if (k == "timestamp") {
        seen.mark(kTimestamp, k);
        // milliseconds -> ns
        out.arrival = seconds_to_ns(f, f.get_nonneg_number(v, k) / 1000.0, "timestamp");
      } else if (k == "input_length") {
        seen.mark(kInput, k);
        out.prompt_len = f.get_int(v, k, 1, kMaxTokens);
      } else if (k == "output_length") {
        seen.mark(kOutput, k);
        out.output_len = f.get_int(v, k, 0, kMaxTokens);
      } else if (k == "hash_ids") {
        seen.mark(kIds, k);
        f.get_ids(v, k, out.hash_ids);
      } else {
        f.fail("unknown field \"" + std::string(k) + "\" in a Mooncake trace line");
      }
    }
    if (!seen.has(kTimestamp)) f.fail("missing field \"timestamp\"");
    if (!seen.has(kInput)) f.fail("missing field \"input_length\"");
    if (!seen.has(kOutput)) f.fail("missing field \"output_length\"");
    if (!seen.has(kIds)) f.fail("missing field \"hash_ids\"");
    if (out.hash_ids.empty()) f.fail("field \"hash_ids\" is empty");
    out.trace_block_size = block_size_;
    assign_decimal(out.id, line);
    // Request::validate (called by the line loop) checks
    // len(hash_ids) == ceil(input_length / trace_block_size).
  }

 private:
  int32_t block_size_;
};

}  // namespace

std::unique_ptr<RequestSource> make_native_source(std::string path, std::unique_ptr<LineReader> lines,
                                                  const TraceOptions& opts) {
  return std::make_unique<NativeSource>(std::move(path), std::move(lines), opts);
}

std::unique_ptr<RequestSource> make_mooncake_source(std::string path, std::unique_ptr<LineReader> lines,
                                                    const TraceOptions& opts) {
  return std::make_unique<MooncakeSource>(std::move(path), std::move(lines), opts);
}

}  // namespace prefixsim
