#include "traces/trace_reader.h"

#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <string_view>

#include "sim/base/error.h"
#include "traces/byte_stream.h"
#include "traces/json_scan_lists.h"
#include "traces/jsonl_source.h"
#include "traces/kvcache_tester.h"

namespace prefixsim {
namespace {

// The rest of a LineReader's input as plain bytes.
class RestOfLines final : public ByteStream {
 public:
  explicit RestOfLines(std::unique_ptr<LineReader> lines) : lines_(std::move(lines)) {}
  size_t read(char* buf, size_t n) override { return lines_->read_rest(buf, n); }

 private:
  std::unique_ptr<LineReader> lines_;
};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The format of a JSONL (or single-object) trace, from the keys of its
// first object. Leaves the reader positioned before that line.
std::string detect_from_keys(const std::string& path, LineReader& lines) {
  std::string_view line;
  while (lines.next(line))
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) break;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos)
    throw InputError(path, std::max(1L, lines.line_number()), "empty trace: no requests");
  const long ln = lines.line_number();
  lines.unread();
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (const auto err = parser.parse(line.data(), line.size(), false).get_object().get(obj))
    throw InputError(path, ln,
                     std::string("cannot detect the trace format: the first line is not a JSON object (") +
                         simdjson::error_message(err) + "); pass --format");
  bool mooncake = false, native = false, conversations = false, bailian = false, agentic = false;
  std::string keys;
  for (auto field : obj) {
    const std::string_view k = field.key;
    if (k == "requests") conversations = true;
    if (k == "chat_id" || k == "parent_chat_id") bailian = true;  // Mooncake's keys plus these
    if (k == "request_id" || k == "wait_for" || k == "branches" || k == "prefix_reset" || k == "tool_wait_ms")
      agentic = true;
    if (k == "timestamp" || k == "input_length" || k == "output_length") mooncake = true;
    if (k == "t" || k == "tokens" || k == "output_len" || k == "prompt_len") native = true;
    keys += (keys.empty() ? "" : ", ") + std::string(k);
  }
  if (conversations) return "kvcache-tester";
  if (bailian && mooncake && !native) return "bailian";
  if (mooncake && !native) return agentic ? "agentic-mooncake" : "mooncake";
  if (native && !mooncake) return "native";
  throw InputError(path, ln, "cannot detect the trace format from the keys of the first object (" + keys +
                                 "); pass --format (" + kTraceFormats + ")");
}

// Whether the first non-blank line is a whole JSON object (a JSONL), rather
// than the start of a pretty-printed document. Leaves the reader before it.
bool first_line_is_object(LineReader& lines) {
  std::string_view line;
  while (lines.next(line))
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) break;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return false;
  lines.unread();
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  return parser.parse(line.data(), line.size(), false).get_object().get(obj) == simdjson::SUCCESS;
}

void check_options(const TraceOptions& opts) {
  if (opts.format != "auto" && opts.format != "native" && opts.format != "mooncake" &&
      opts.format != "bailian" && opts.format != "agentic-mooncake" && opts.format != "kvcache-tester")
    throw InputError("unknown trace format \"" + opts.format + "\" (expected one of " + kTraceFormats + ")");
  if (opts.trace_block_size < 0 || opts.trace_block_size > (1 << 20))
    throw InputError("--trace-block-size must be in [1, 1048576] (0 = the format's default)");
  if (!(opts.conversation_rate > 0) || !std::isfinite(opts.conversation_rate))
    throw InputError("--conversation-rate must be a positive number of conversations per second");
}

void expect_conversations(const std::string& path, const TraceOptions& opts, const char* what) {
  if (opts.format == "native" || opts.format == "mooncake" || opts.format == "bailian" ||
      opts.format == "agentic-mooncake")
    throw InputError(path, 1, std::string(what) + " holds kv-cache-tester conversations, not a " + opts.format +
                                  " trace");
}

}  // namespace

std::unique_ptr<RequestSource> open_trace(const std::string& path, const TraceOptions& opts) {
  check_options(opts);
  if (path != "-") {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      expect_conversations(path, opts, "a folder");
      return open_kvcache_folder(path, opts);
    }
  }
  auto raw = open_raw(path);
  // xz and bzip2 wrap tar archives here (JSONL comes plain, gzip or zstd).
  const std::string_view magic = raw->peek(6);
  if (magic == std::string_view("\xfd" "7zXZ\0", 6) || starts_with(magic, "BZh")) {
    expect_conversations(path, opts, "this archive");
    return open_kvcache_tar(path, std::move(raw), opts);
  }
  auto bytes = decompressed(std::move(raw), path);
  const std::string_view head = bytes->peek(512);
  if (head.empty()) throw InputError(path, 1, "empty trace: no requests");
  if (head.size() >= 262 && head.substr(257, 5) == "ustar") {  // a tar header
    expect_conversations(path, opts, "this tar archive");
    return open_kvcache_tar(path, std::move(bytes), opts);
  }
  // The line scanners (json_scan_lists.h) read up to kScanPadding bytes past
  // a line, as simdjson does: the padding serves both.
  static_assert(simdjson::SIMDJSON_PADDING >= json_scan::kScanPadding);
  auto lines = std::make_unique<LineReader>(std::move(bytes), simdjson::SIMDJSON_PADDING);
  const std::string format = opts.format == "auto" ? detect_from_keys(path, *lines) : opts.format;
  if (format == "native") return make_native_source(path, std::move(lines), opts);
  if (format == "mooncake") return make_mooncake_source(path, std::move(lines), opts);
  if (format == "bailian") return make_bailian_source(path, std::move(lines), opts);
  if (format == "agentic-mooncake") return make_agentic_mooncake_source(path, std::move(lines), opts);
  // kv-cache-tester JSON: one conversation per line (WEKA / SemiAnalysis
  // JSONL, or a one-line file), else one pretty-printed conversation.
  if (first_line_is_object(*lines)) return open_kvcache_jsonl(path, std::move(lines), opts);
  return open_kvcache_file(path, std::make_unique<RestOfLines>(std::move(lines)), opts);
}

}  // namespace prefixsim
