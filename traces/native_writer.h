// Writes requests as native JSONL (DESIGN.md "File formats"), one compact
// line per request, so that any source (a generator, a converted trace) can
// be saved and replayed. What it writes reads back identically through the
// native reader (open_trace with format "native").
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "sim/engine/request.h"
#include "sim/engine/request_source.h"

namespace prefixsim {

class NativeJsonlWriter {
 public:
  explicit NativeJsonlWriter(std::ostream& out) : out_(out) {}
  // Appends one line. Throws InputError when the stream fails.
  void write(const Request& r);
  uint64_t written() const { return written_; }

 private:
  std::ostream& out_;
  std::string line_;  // reused: no allocation per request once warm
  uint64_t written_ = 0;
};

// Appends one request as a native JSON object (no newline) to `out`.
void append_native_json(std::string& out, const Request& r);

// Drains `src` into `out`; returns the number of requests written.
uint64_t write_native_jsonl(RequestSource& src, std::ostream& out);

// "12.000000125": nanoseconds as exact decimal seconds (no rounding through
// a double), so arrival times survive a write/read round trip bit for bit.
void append_seconds(std::string& out, TimeNs ns);

}  // namespace prefixsim
