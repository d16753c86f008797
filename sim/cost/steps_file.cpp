#include "sim/cost/steps_file.h"

#include <string_view>

#include "sim/base/error.h"
#include "sim/base/json_out.h"
#include "sim/base/text_fields.h"
#include "sim/cost/catalog.h"

namespace prefixsim {

namespace {
constexpr std::string_view kCsvHeader = "step,new_tokens,cached_tokens";
constexpr int64_t kMaxTokens = int64_t{1} << 40;

std::string in_range(int64_t lo, int64_t hi) {
  return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}
}  // namespace

StepsWriter::StepsWriter(const std::string& path, const std::string& model, int tp, int block_size,
                         const std::string& source)
    : file_(path, "--steps-out") {
  if (!valid_utf8(source)) throw InputError("--steps-out: the replay's description is not valid UTF-8");
  file_.stream() << "# " << kStepsSchema << "\n# model: " << model << "\n# tp: " << tp
                 << "\n# block_size: " << block_size << "\n# source: " << source << "\n"
                 << kCsvHeader << "\n";
}

void StepsWriter::add(uint64_t step, const Batch& batch) {
  rows_.clear();
  for (const ScheduledSeq& s : batch.seqs) {
    append_int(rows_, static_cast<int64_t>(step));
    rows_.push_back(',');
    append_int(rows_, s.num_new_tokens);
    rows_.push_back(',');
    append_int(rows_, s.num_computed_tokens);
    rows_.push_back('\n');
  }
  file_.stream() << rows_;
  ++steps_;
}

void StepsWriter::finish() { file_.commit(); }

StepsFile parse_steps_file(const std::string& text, const std::string& file) {
  const std::vector<std::string_view> lines = split_lines(text);
  auto at = [&](size_t i) { return TextLoc{file, static_cast<long>(i) + 1}; };
  StepsFile out;
  if (lines.empty() || lines[0] != std::string("# ") + kStepsSchema)
    at(0).fail("schema", std::string("the first line must be '# ") + kStepsSchema + "'");
  bool have_model = false, have_tp = false, have_bs = false;
  size_t i = 1;
  for (; i < lines.size() && !lines[i].empty() && lines[i][0] == '#'; ++i) {
    const std::string_view l = lines[i];
    const size_t colon = l.find(':');
    if (colon == std::string_view::npos) at(i).fail("a header line must be '# key: value'");
    const std::string_view key = trim(l.substr(1, colon - 1)), value = trim(l.substr(colon + 1));
    if (key == "model") {
      out.model = model_in(at(i), "model", value);
      have_model = true;
    } else if (key == "tp") {
      out.tp = static_cast<int>(integer_in(at(i), "tp", value, 1, 64, in_range(1, 64)));
      have_tp = true;
    } else if (key == "block_size") {
      out.block_size = static_cast<int>(integer_in(at(i), "block_size", value, 1, 65536, in_range(1, 65536)));
      have_bs = true;
    } else if (key == "source") {
      if (!valid_utf8(value)) at(i).fail("source", "must be valid UTF-8");
      out.source = value;
    } else {
      at(i).fail(key, "not a steps header key (model, tp, block_size, source)");
    }
  }
  if (!have_model || !have_tp || !have_bs)
    at(i).fail(!have_model ? "model" : !have_tp ? "tp" : "block_size", "missing from the header");
  const std::string_view header = i < lines.size() ? lines[i] : std::string_view();
  if (header != kCsvHeader)
    at(i).fail("the CSV header must be '" + std::string(kCsvHeader) + "', not " + shown(header));
  for (++i; i < lines.size() && !lines[i].empty(); ++i) {
    const std::vector<std::string_view> f = split_commas(lines[i]);
    if (f.size() != 3) at(i).fail("a row must have 3 fields (step,new_tokens,cached_tokens), not " + shown(lines[i]));
    const auto step = static_cast<uint64_t>(integer_in(at(i), "step", f[0], 1, INT64_MAX, in_range(1, INT64_MAX)));
    const int64_t n = integer_in(at(i), "new_tokens", f[1], 1, kMaxTokens, in_range(1, kMaxTokens));
    const int64_t c = integer_in(at(i), "cached_tokens", f[2], 0, kMaxTokens, in_range(0, kMaxTokens));
    if (out.steps.empty() || out.steps.back().step != step) {
      if (!out.steps.empty() && step < out.steps.back().step)
        at(i).fail("step", "steps must ascend (" + std::to_string(step) + " after " +
                               std::to_string(out.steps.back().step) + ")");
      out.steps.push_back({step, {}});
    }
    out.steps.back().seqs.emplace_back(n, c);
  }
  for (; i < lines.size(); ++i)
    if (!lines[i].empty()) at(i).fail("a row after a blank line (blank lines are allowed only at the end)");
  if (out.steps.empty()) at(i).fail("no steps: at least one row must follow the CSV header");
  return out;
}

StepsFile read_steps_file(const std::string& path) {
  return parse_steps_file(read_whole_file(path, "steps file", true), path);
}

}  // namespace prefixsim
