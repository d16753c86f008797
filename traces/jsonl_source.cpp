#include "traces/jsonl_source.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/base/error.h"
#include "sim/base/interrupt.h"
#include "sim/base/text_fields.h"
#include "traces/json_scan.h"

namespace prefixsim {

TimeNs seconds_to_ns(const JsonFields& f, double s, const char* key) {
  if (s > json_scan::kMaxSeconds)
    f.fail(std::string("field \"") + key + "\": " + number_text(s) + " s is absurdly late");
  return json_scan::ns_of_seconds(s);
}

using simdjson::dom::element;
using simdjson::dom::element_type;

void JsonFields::fail(const std::string& msg) const { throw InputError(file_, line_, msg); }

namespace {
std::string quoted(std::string_view key) { return "field \"" + std::string(key) + "\""; }
}  // namespace

int64_t JsonFields::get_int(element v, std::string_view key, int64_t lo, int64_t hi) const {
  int64_t x = 0;
  if (v.type() == element_type::INT64) {
    x = v.get_int64().value_unsafe();
  } else if (v.type() == element_type::UINT64) {
    fail(quoted(key) + ": " + std::to_string(v.get_uint64().value_unsafe()) + " is out of range [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]");
  } else {
    fail(quoted(key) + ": expected an integer");
  }
  if (x < lo || x > hi)
    fail(quoted(key) + ": " + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  return x;
}

double JsonFields::get_nonneg_number(element v, std::string_view key) const {
  double x = 0;
  switch (v.type()) {
    case element_type::INT64: x = static_cast<double>(v.get_int64().value_unsafe()); break;
    case element_type::UINT64: x = static_cast<double>(v.get_uint64().value_unsafe()); break;
    case element_type::DOUBLE: x = v.get_double().value_unsafe(); break;
    default: fail(quoted(key) + ": expected a number");
  }
  if (!(x >= 0)) fail(quoted(key) + ": must not be negative");
  return x;
}

std::string_view JsonFields::get_string(element v, std::string_view key) const {
  std::string_view s;
  if (v.get_string().get(s)) fail(quoted(key) + ": expected a string");
  return s;
}

simdjson::dom::array JsonFields::get_array(element v, std::string_view key) const {
  simdjson::dom::array a;
  if (v.get_array().get(a)) fail(quoted(key) + ": expected an array");
  return a;
}

void JsonFields::get_ids(element v, std::string_view key, std::vector<uint64_t>& out) const {
  const simdjson::dom::array arr = get_array(v, key);
  // size() saturates at 2^24 - 1; no valid prompt has that many ids anyway.
  if (arr.size() >= 0xFFFFFF) fail(quoted(key) + ": too many ids");
  out.resize(arr.size());  // O(1) on the tape; writing in place beats push_back here
  uint64_t* dst = out.data();
  for (element x : arr) {
    if (x.get_uint64().get(*dst)) {  // one checked read per id: this is the hot loop
      const std::string at = quoted(key) + "[" + std::to_string(dst - out.data()) + "]";
      if (x.is_int64()) fail(at + ": " + std::to_string(x.get_int64().value_unsafe()) + " is negative");
      fail(at + ": expected a non-negative integer");
    }
    ++dst;
  }
}

void JsonFields::get_tokens(element v, std::string_view key, std::vector<int32_t>& out) const {
  out.clear();
  size_t i = 0;
  for (element x : get_array(v, key)) {
    int64_t t = -1;
    if (x.type() == element_type::INT64) t = x.get_int64().value_unsafe();
    if (t < 0 || t > std::numeric_limits<int32_t>::max())
      fail(quoted(key) + "[" + std::to_string(i) + "]: expected a token id in [0, 2^31)");
    out.push_back(static_cast<int32_t>(t));
    ++i;
  }
  if (out.size() > static_cast<size_t>(kMaxTokens))
    fail(quoted(key) + ": " + std::to_string(out.size()) + " tokens is more than the limit of " +
         std::to_string(kMaxTokens));
}

JsonlSource::JsonlSource(std::string path, std::unique_ptr<LineReader> lines, const TraceOptions& opts)
    : path_(std::move(path)), lines_(std::move(lines)), opts_(opts) {}

namespace {
bool blank(std::string_view line) {
  for (const char ch : line)  // a loop, not find_first_not_of: it returns at a line's '{'
    if (ch != ' ' && ch != '\t' && ch != '\r') return false;
  return true;
}
}  // namespace

bool JsonlSource::read_one(Request& out) {
  std::string_view line;
  while (lines_->next(line)) {
    throw_if_interrupted();  // a safe point per line: nothing half-parsed
    if (blank(line)) continue;  // blank lines hold no data (e.g. a trailing one)
    const long ln = lines_->line_number();
    last_line_ = ln;
    JsonFields f(path_, ln);
    out.clear();
    if (opts_.fast_scan && parse_fast(line, f, ln, out)) {
      if (const std::string why = out.validate(); !why.empty()) f.fail(why);
      return true;
    }
    element doc;
    if (const auto err = parser_.parse(line.data(), line.size(), false).get(doc)) {
      std::string msg = std::string("invalid JSON: ") + simdjson::error_message(err);
      if (lines_->last_line_unterminated()) msg += " (the last line is truncated?)";
      throw InputError(path_, ln, msg);
    }
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) f.fail("expected a JSON object (one request per line)");
    out.clear();
    parse(obj, f, ln, out);
    if (const std::string why = out.validate(); !why.empty()) f.fail(why);
    return true;
  }
  return false;
}

void JsonlSource::load_sorted() {
  sorted_loaded_ = true;
  Request r;
  while (read_one(r)) sorted_.push_back(std::move(r));
  if (sorted_.empty()) throw InputError(path_, std::max(1L, lines_->line_number()), "empty trace: no requests");
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
}

bool JsonlSource::next(Request& out) {
  if (opts_.sort) {
    if (!sorted_loaded_) load_sorted();
    if (next_sorted_ == sorted_.size()) return false;
    out = std::move(sorted_[next_sorted_++]);  // frees each request as it is served
    return true;
  }
  if (!read_one(out)) {
    if (count_ == 0) throw InputError(path_, std::max(1L, lines_->line_number()), "empty trace: no requests");
    return false;
  }
  if (count_ > 0 && out.arrival < last_arrival_)
    throw InputError(path_, last_line_,
                     std::string("field \"") + time_key() + "\": arrival goes backwards (" +
                         std::to_string(out.arrival) + " ns after " + std::to_string(last_arrival_) +
                         " ns on the request before); sort the trace or pass --sort");
  last_arrival_ = out.arrival;
  ++count_;
  return true;
}

}  // namespace prefixsim
