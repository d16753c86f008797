#include "sim/steps_file.h"

#include <charconv>
#include <string_view>

#include "sim/catalog.h"
#include "sim/error.h"
#include "sim/json_out.h"

namespace prefixsim {

namespace {

constexpr std::string_view kCsvHeader = "step,new_tokens,cached_tokens";

std::string shown(std::string_view v) {
  constexpr size_t kMax = 60;
  return "'" + std::string(v.substr(0, kMax)) + (v.size() > kMax ? "...'" : "'");
}

[[noreturn]] void fail(const std::string& file, long line, std::string_view field, const std::string& msg) {
  throw InputError(file, line, field.empty() ? msg : "field '" + std::string(field) + "': " + msg);
}

int64_t integer(const std::string& file, long line, std::string_view field, std::string_view v, int64_t lo,
                int64_t hi) {
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
    fail(file, line, field,
         "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not " + shown(v));
  return x;
}

}  // namespace

StepsWriter::StepsWriter(const std::string& path, const std::string& model, int tp, int block_size,
                         const std::string& source)
    : file_(path) {
  if (!valid_utf8(source)) throw InputError("--steps-out: the replay's description is not valid UTF-8");
  file_.stream() << "# " << kStepsSchema << "\n# model: " << model << "\n# tp: " << tp
                 << "\n# block_size: " << block_size << "\n# source: " << source << "\n"
                 << kCsvHeader << "\n";
}

void StepsWriter::add(uint64_t step, const Batch& batch) {
  std::string rows;
  for (const ScheduledSeq& s : batch.seqs) {
    append_int(rows, static_cast<int64_t>(step));
    rows.push_back(',');
    append_int(rows, s.num_new_tokens);
    rows.push_back(',');
    append_int(rows, s.num_computed_tokens);
    rows.push_back('\n');
  }
  file_.stream() << rows;
  ++steps_;
}

void StepsWriter::finish() { file_.commit(); }

StepsFile parse_steps_file(const std::string& text, const std::string& file) {
  StepsFile out;
  long line = 0;
  size_t pos = 0;
  auto next_line = [&](std::string_view& l) {
    if (pos >= text.size()) return false;
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    l = std::string_view(text).substr(pos, end - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    pos = end + 1;
    ++line;
    return true;
  };
  std::string_view l;
  if (!next_line(l) || l != std::string("# ") + kStepsSchema)
    fail(file, 1, "schema", std::string("the first line must be '# ") + kStepsSchema + "'");
  bool have_model = false, have_tp = false, have_bs = false;
  while (next_line(l) && !l.empty() && l[0] == '#') {
    const size_t colon = l.find(':');
    if (colon == std::string_view::npos) fail(file, line, "", "a header line must be '# key: value'");
    std::string_view key = l.substr(1, colon - 1), value = l.substr(colon + 1);
    while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (key == "model") {
      try {
        out.model = find_model(value, "").name;
      } catch (const InputError& e) {
        const std::string msg = e.what();
        fail(file, line, "model", msg.substr(msg.find("unknown")));
      }
      have_model = true;
    } else if (key == "tp") {
      out.tp = static_cast<int>(integer(file, line, "tp", value, 1, 64));
      have_tp = true;
    } else if (key == "block_size") {
      out.block_size = static_cast<int>(integer(file, line, "block_size", value, 1, 65536));
      have_bs = true;
    } else if (key == "source") {
      if (!valid_utf8(value)) fail(file, line, "source", "must be valid UTF-8");
      out.source = value;
    } else {
      fail(file, line, key, "not a steps header key (model, tp, block_size, source)");
    }
  }
  if (!have_model || !have_tp || !have_bs)
    fail(file, line, !have_model ? "model" : !have_tp ? "tp" : "block_size", "missing from the header");
  if (l != kCsvHeader) fail(file, line, "", "the CSV header must be '" + std::string(kCsvHeader) + "', not " + shown(l));
  while (next_line(l)) {
    if (l.empty()) {
      std::string_view rest;
      while (next_line(rest))
        if (!rest.empty()) fail(file, line, "", "a row after a blank line (blank lines are allowed only at the end)");
      break;
    }
    const size_t c1 = l.find(','), c2 = c1 == std::string_view::npos ? c1 : l.find(',', c1 + 1);
    if (c2 == std::string_view::npos || l.find(',', c2 + 1) != std::string_view::npos)
      fail(file, line, "", "a row must have 3 fields (step,new_tokens,cached_tokens), not " + shown(l));
    const auto step = static_cast<uint64_t>(integer(file, line, "step", l.substr(0, c1), 1, INT64_MAX));
    const int64_t n = integer(file, line, "new_tokens", l.substr(c1 + 1, c2 - c1 - 1), 1, int64_t{1} << 40);
    const int64_t c = integer(file, line, "cached_tokens", l.substr(c2 + 1), 0, int64_t{1} << 40);
    if (out.steps.empty() || out.steps.back().step != step) {
      if (!out.steps.empty() && step < out.steps.back().step)
        fail(file, line, "step", "steps must ascend (" + std::to_string(step) + " after " +
                                     std::to_string(out.steps.back().step) + ")");
      out.steps.push_back({step, {}});
    }
    out.steps.back().seqs.emplace_back(n, c);
  }
  if (out.steps.empty()) fail(file, line + 1, "", "no steps: at least one row must follow the CSV header");
  return out;
}

StepsFile read_steps_file(const std::string& path) { return parse_steps_file(read_whole_file(path, "steps file"), path); }

}  // namespace prefixsim
