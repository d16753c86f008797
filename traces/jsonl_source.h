// The line loop shared by the JSONL formats (native, Mooncake): reads one
// line at a time, parses it in place with simdjson's DOM parser (which
// validates the whole line: structure, numbers, UTF-8, trailing content),
// lets the format fill the Request, and enforces arrival order. DOM rather
// than On-Demand: On-Demand is compiled for the build's baseline CPU
// (Debian's generic x86-64 gets simdjson's scalar fallback), while the DOM
// parser lives in libsimdjson and picks AVX2/AVX-512 kernels at run time.
// Memory: one line buffer and one parsed line, whatever the length of the
// trace (unless TraceOptions::sort).
#pragma once

#include <simdjson.h>

#include <charconv>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/request_source.h"
#include "traces/byte_stream.h"
#include "traces/trace_reader.h"

namespace prefixsim {

// Field access on a parsed line with errors that name file, line and field.
class JsonFields {
 public:
  JsonFields(const std::string& file, long line) : file_(file), line_(line) {}
  [[noreturn]] void fail(const std::string& msg) const;

  // An integer in [lo, hi]; doubles are rejected.
  int64_t get_int(simdjson::dom::element v, std::string_view key, int64_t lo, int64_t hi) const;
  // A non-negative number (integer or float) as a double.
  double get_nonneg_number(simdjson::dom::element v, std::string_view key) const;
  std::string_view get_string(simdjson::dom::element v, std::string_view key) const;
  simdjson::dom::array get_array(simdjson::dom::element v, std::string_view key) const;
  // Block identities: non-negative integers below 2^64.
  void get_ids(simdjson::dom::element v, std::string_view key, std::vector<uint64_t>& out) const;
  // Token ids: integers in [0, 2^31).
  void get_tokens(simdjson::dom::element v, std::string_view key, std::vector<int32_t>& out) const;


 private:
  const std::string& file_;
  long line_;
};

// Remembers which fields a line had, to reject duplicates and find missing
// ones (every JSONL reader).
class SeenFields {
 public:
  explicit SeenFields(const JsonFields& f) : f_(f) {}
  void mark(int bit, std::string_view key) {
    if (bits_ & (1u << bit)) f_.fail("field \"" + std::string(key) + "\" appears twice");
    bits_ |= 1u << bit;
  }
  bool has(int bit) const { return bits_ & (1u << bit); }

 private:
  const JsonFields& f_;
  uint32_t bits_ = 0;
};

// A trace's arrival time in seconds as int64 nanoseconds; a time past about
// 292 years (the int64 range) fails naming `key`.
TimeNs seconds_to_ns(const JsonFields& f, double s, const char* key);

// `s` = the decimal text of `v`, written into s's own buffer (a request id
// from a line number or a chat id: no temporary string per line).
inline void assign_decimal(std::string& s, int64_t v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  s.assign(buf, end);
}

// Largest accepted prompt or output, in tokens: beyond this a length is a
// corrupt field, not a request.
inline constexpr int64_t kMaxTokens = 100'000'000;

class JsonlSource : public RequestSource {
 public:
  JsonlSource(std::string path, std::unique_ptr<LineReader> lines, const TraceOptions& opts);
  bool next(Request& out) final;
  std::string origin() const final { return path_; }

 protected:
  // Fills `out` (already cleared) from one parsed line.
  virtual void parse(simdjson::dom::object obj, const JsonFields& f, long line, Request& out) = 0;
  // A format's fast path, tried on each line before simdjson: fills `out`
  // (already cleared) and returns true, or returns false to leave the line
  // to parse(), which must then give the same Request or an error
  // (mooncake_scan.h).
  virtual bool parse_fast(std::string_view, const JsonFields&, long, Request&) { return false; }
  // The key that holds the arrival time, for error messages.
  virtual const char* time_key() const = 0;
  const TraceOptions& opts() const { return opts_; }

 private:
  bool read_one(Request& out);  // the next line's request, unordered
  void load_sorted();

  std::string path_;
  std::unique_ptr<LineReader> lines_;
  TraceOptions opts_;
  simdjson::dom::parser parser_;
  uint64_t count_ = 0;
  TimeNs last_arrival_ = 0;
  long last_line_ = 0;
  // Only with opts_.sort: the whole trace, sorted, served from next_sorted_.
  bool sorted_loaded_ = false;
  std::vector<Request> sorted_;
  size_t next_sorted_ = 0;
};

// The two JSONL formats.
std::unique_ptr<RequestSource> make_native_source(std::string path, std::unique_ptr<LineReader> lines,
                                                  const TraceOptions& opts);
// Dynamo's agentic Mooncake: Mooncake rows with wait_for dependencies (agentic_mooncake_jsonl.cpp).
std::unique_ptr<RequestSource> make_agentic_mooncake_source(std::string path, std::unique_ptr<LineReader> lines,
                                                            const TraceOptions& opts);
std::unique_ptr<RequestSource> make_bailian_source(std::string path, std::unique_ptr<LineReader> lines,
                                                   const TraceOptions& opts);
std::unique_ptr<RequestSource> make_mooncake_source(std::string path, std::unique_ptr<LineReader> lines,
                                                    const TraceOptions& opts);

}  // namespace prefixsim
