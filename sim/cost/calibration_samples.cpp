#include "sim/cost/calibration_samples.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "sim/cost/catalog.h"
#include "sim/cost/cost_model.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/json_out.h"
#include "sim/base/text_fields.h"

namespace prefixsim {

namespace {

constexpr std::string_view kMagic = "# prefixsim.calibration-samples/1";
constexpr std::string_view kCsvHeader = "kind,seqs,new_tokens,attn_units,context_tokens,ms";
constexpr const char* kColumns[] = {"kind", "seqs", "new_tokens", "attn_units", "context_tokens", "ms"};
constexpr size_t kNumColumns = std::size(kColumns);

// ---- header ----------------------------------------------------------------

// The ranges match what read_profile accepts, so a file that reads here
// always makes a profile that can be written.
struct HeaderKey {
  const char* key;
  bool required;
  void (*set)(CalibrationSamples& s, const TextLoc& at, std::string_view v);
};

constexpr HeaderKey kHeaderKeys[] = {
    {"gpu.name", true, [](CalibrationSamples& s, const TextLoc&, std::string_view v) { s.gpu.name = v; }},
    {"gpu.sm_count", true,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) {
       s.gpu.sm_count =
           static_cast<int>(integer_in(at, "gpu.sm_count", v, 1, 100000, "a positive integer (at most 100000)"));
     }},
    {"gpu.sm_clock_mhz", true,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) {
       s.gpu.sm_clock_mhz = number_in(at, "gpu.sm_clock_mhz", v, 0, false, 1e5, "a number in [0, 100000]");
     }},
    {"gpu.mem_clock_mhz", true,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) {
       s.gpu.mem_clock_mhz = number_in(at, "gpu.mem_clock_mhz", v, 0, false, 1e5, "a number in [0, 100000]");
     }},
    {"gpu.driver", true, [](CalibrationSamples& s, const TextLoc&, std::string_view v) { s.gpu.driver = v; }},
    {"gpu.cuda", true, [](CalibrationSamples& s, const TextLoc&, std::string_view v) { s.gpu.cuda = v; }},
    {"model", true,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) { s.model = model_in(at, "model", v); }},
    {"tp", true,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) {
       s.tp = static_cast<int>(integer_in(at, "tp", v, 1, 64, "an integer in [1, 64]"));
     }},
    {"block_size", true,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) {
       s.block_size = static_cast<int>(integer_in(at, "block_size", v, 1, 65536, "an integer in [1, 65536]"));
     }},
    // The profile this file becomes requires an ISO date; say so here, at the
    // samples' line, rather than when the profile is written.
    {"date", true,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) {
       if (!looks_like_iso_date(v)) at.fail("date", "must be an ISO 8601 date (YYYY-MM-DD...), not " + shown(v));
       s.date = v;
     }},
    {"runner", false, [](CalibrationSamples& s, const TextLoc&, std::string_view v) { s.runner = v; }},
    // Checked against tp once every header line is read (check_shards_timed).
    {"shards_timed", false,
     [](CalibrationSamples& s, const TextLoc& at, std::string_view v) {
       s.shards_timed = static_cast<int>(integer_in(at, "shards_timed", v, 1, 64, "an integer in [1, 64]"));
       s.shards_timed_line = at.line;
     }},
};
constexpr size_t kNumHeaderKeys = std::size(kHeaderKeys);

std::string known_keys() {
  std::string out;
  for (const HeaderKey& k : kHeaderKeys) out += (out.empty() ? "" : ", ") + std::string(k.key);
  return out;
}

// "# key: value" -> sets the field; `seen_at[i]` remembers the line of key i.
void parse_header_line(const TextLoc& at, std::string_view line, CalibrationSamples& out,
                       long (&seen_at)[kNumHeaderKeys]) {
  const std::string_view body = trim(line.substr(1));
  const size_t colon = body.find(':');
  if (colon == std::string_view::npos)
    at.fail("header line: must read '# key: value' (every '#' line after the first is one), not " + shown(line));
  const std::string_view key = trim(body.substr(0, colon)), value = trim(body.substr(colon + 1));
  for (size_t i = 0; i < kNumHeaderKeys; ++i) {
    if (key != kHeaderKeys[i].key) continue;
    if (seen_at[i]) at.fail(key, "given twice (first on line " + std::to_string(seen_at[i]) + ")");
    if (value.empty()) at.fail(key, "must not be empty");
    if (!valid_utf8(value)) at.fail(key, "must be valid UTF-8 (it goes into the profile's JSON)");
    seen_at[i] = at.line;
    kHeaderKeys[i].set(out, at, value);
    return;
  }
  at.fail(key, "is not a samples header key (typo?); the keys are " + known_keys());
}

void require_all_keys(const TextLoc& at, const long (&seen_at)[kNumHeaderKeys]) {
  for (size_t i = 0; i < kNumHeaderKeys; ++i)
    if (kHeaderKeys[i].required && !seen_at[i])
      at.fail(kHeaderKeys[i].key, "missing from the header (every key but 'runner' is required)");
}

// ---- rows ------------------------------------------------------------------

StepKind parse_kind(const TextLoc& at, std::string_view v) {
  for (StepKind k : kStepKinds)
    if (v == to_string(k)) return k;
  at.fail("kind", "must be prefill, decode or mixed, not " + shown(v));
}

void parse_row(const TextLoc& at, std::string_view line, CalibrationSamples& out) {
  const std::vector<std::string_view> f = split_commas(line);
  if (f.size() < kNumColumns)
    at.fail(kColumns[f.size()], "missing: the row has " + std::to_string(f.size()) + " of the " +
                                    std::to_string(kNumColumns) + " fields " + std::string(kCsvHeader));
  if (f.size() > kNumColumns)
    at.fail("the row has " + std::to_string(f.size()) + " fields, expected " + std::to_string(kNumColumns) + " (" +
            std::string(kCsvHeader) + ")");
  const StepKind kind = parse_kind(at, f[0]);
  constexpr int64_t kMaxCount = int64_t{1} << 40;  // far beyond any step; keeps the sums exact
  BatchSummary b;
  b.seqs = integer_in(at, "seqs", f[1], 1, kMaxCount, "a positive integer");
  b.new_tokens = integer_in(at, "new_tokens", f[2], 1, kMaxCount, "a positive integer");
  b.attn_units = number_in(at, "attn_units", f[3], 0, false, HUGE_VAL, "a non-negative number");
  b.context_tokens = number_in(at, "context_tokens", f[4], 0, false, HUGE_VAL, "a non-negative number");
  const double ms = number_in(at, "ms", f[5], 0, true, HUGE_VAL, "a positive number");
  // K counts every token each sequence attends over, its new ones included
  // (sum of c + n); a writer that counts only the cached c would skew the fit.
  if (b.context_tokens < static_cast<double>(b.new_tokens))
    at.fail("context_tokens", "must be at least new_tokens (" + std::to_string(b.new_tokens) +
                                  "): it is the sum of cached + new tokens over the step's sequences, not " +
                                  shown(f[4]));
  out.samples.push_back({b, ms / 1000});
  out.kinds.push_back(kind);
}

std::string provenance(const CalibrationSamples& s, const std::string& samples_file) {
  std::string counts;
  for (StepKind k : kStepKinds)
    counts += (counts.empty() ? "" : ", ") + std::to_string(samples_of_kind(s, k).size()) + " " + to_string(k);
  return "Fitted by `prefixsim gpu calibrate` from " + std::filesystem::path(samples_file).filename().string() +
         " (" + counts + " steps, block size " + std::to_string(s.block_size) + "); measured by: " +
         (s.runner.empty() ? "(runner not recorded)" : s.runner) + ".";
}

}  // namespace

std::string samples_header_text(const SamplesHeader& h) {
  std::string out = std::string("# ") + kCalibrationSamplesSchema + "\n";
  out += "# gpu.name: " + h.gpu_name + "\n";
  out += "# gpu.sm_count: " + std::to_string(h.sm_count) + "\n";
  out += "# gpu.sm_clock_mhz: " + h.sm_clock_mhz + "\n";
  out += "# gpu.mem_clock_mhz: " + h.mem_clock_mhz + "\n";
  out += "# gpu.driver: " + h.driver + "\n";
  out += "# gpu.cuda: " + h.cuda + "\n";
  out += "# model: " + h.model + "\n";
  out += "# tp: " + std::to_string(h.tp) + "\n";
  out += "# block_size: " + std::to_string(h.block_size) + "\n";
  out += "# date: " + h.date + "\n";
  if (!h.runner.empty()) out += "# runner: " + h.runner + "\n";
  return out + "kind,seqs,new_tokens,attn_units,context_tokens,ms\n";
}

std::string sample_row_text(std::string_view kind, const BatchSummary& b, double ms) {
  char row[160];
  std::snprintf(row, sizeof row, ",%lld,%lld,%.1f,%.0f,%.4f\n", static_cast<long long>(b.seqs),
                static_cast<long long>(b.new_tokens), b.attn_units, b.context_tokens, ms);
  return std::string(kind) + row;
}

std::string samples_date_now() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

StepKind step_kind_of(const BatchSummary& b) {
  if (b.decode_seqs == b.seqs) return StepKind::decode;
  return b.decode_seqs == 0 ? StepKind::prefill : StepKind::mixed;
}

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::prefill: return "prefill";
    case StepKind::decode: return "decode";
    case StepKind::mixed: return "mixed";
  }
  return "?";
}

CalibrationSamples parse_calibration_samples(const std::string& text, const std::string& file) {
  const std::vector<std::string_view> lines = split_lines(text);
  auto at = [&](size_t i) { return TextLoc{file, static_cast<long>(i) + 1}; };
  if (lines.empty() || lines[0] != kMagic)
    at(0).fail("schema", "the first line must be '" + std::string(kMagic) + "', not " +
                             shown(lines.empty() ? std::string_view() : lines[0]));

  CalibrationSamples out;
  long seen_at[kNumHeaderKeys] = {};
  size_t i = 1;
  for (; i < lines.size() && !lines[i].empty() && lines[i][0] == '#'; ++i)
    parse_header_line(at(i), lines[i], out, seen_at);
  require_all_keys(at(i), seen_at);
  if (out.shards_timed != 1 && out.shards_timed != out.tp)
    TextLoc{file, out.shards_timed_line}.fail("shards_timed", "must be 1 (one shard timed alone) or tp (" +
                                                              std::to_string(out.tp) + "), not " +
                                                              std::to_string(out.shards_timed));

  if (i == lines.size()) at(i).fail("missing the CSV header '" + std::string(kCsvHeader) + "' after the header lines");
  if (lines[i] != kCsvHeader)
    at(i).fail("the CSV header must be '" + std::string(kCsvHeader) + "', not " + shown(lines[i]));
  const size_t first_row = ++i;
  for (; i < lines.size() && !trim(lines[i]).empty(); ++i) parse_row(at(i), lines[i], out);
  if (i == first_row) at(i).fail("no samples: at least one row must follow the CSV header");
  for (; i < lines.size(); ++i)
    if (!trim(lines[i]).empty()) at(i).fail("a row after a blank line (blank lines are allowed only at the end)");
  return out;
}

CalibrationSamples read_calibration_samples(const std::string& path) {
  return parse_calibration_samples(read_whole_file(path, "samples file", true), path);
}

bool allreduce_untimed(const CalibrationSamples& s) { return s.tp > 1 && s.shards_timed == 1; }

std::vector<StepSample> samples_of_kind(const CalibrationSamples& s, StepKind k) {
  std::vector<StepSample> out;
  for (size_t i = 0; i < s.samples.size(); ++i)
    if (s.kinds[i] == k) out.push_back(s.samples[i]);
  return out;
}

Calibration calibrate(const CalibrationSamples& s, const std::string& samples_file, const std::string& gpu_catalog,
                      const FitOptions& options) {
  // Its name goes into the profile's provenance, which is JSON.
  if (!valid_utf8(samples_file)) throw InputError("--samples: the path must be valid UTF-8 (it goes into the profile)");
  Calibration c;
  try {
    c.fit = fit_cost_model(s.samples, options);
  } catch (const InputError& e) {  // "fit: 8 training samples; need at least 12": say which file
    throw InputError(samples_file + ": " + e.what());
  }
  Profile& p = c.profile;
  p.gpu = s.gpu;
  p.gpu.catalog = gpu_catalog;
  p.model = s.model;
  p.tp = s.tp;
  p.date = s.date;
  p.coefficients = c.fit.coefficients;
  p.fit = c.fit.fit;
  p.provenance = provenance(s, samples_file);
  if (allreduce_untimed(s)) {
    // One shard timed alone: its times hold no all-reduce. Price it as the
    // roofline does rather than let the profile claim TP costs nothing.
    const GpuSpec& g = find_gpu(gpu_catalog);
    add_tensor_parallel_comm(p.coefficients, find_model(s.model), g, s.tp);
    p.provenance += " TP all-reduce not timed (one of " + std::to_string(s.tp) +
                    " shards timed alone): added from the roofline over the catalog's " +
                    std::to_string(std::lround(g.interconnect_bandwidth / 1e9)) + " GB/s interconnect.";
  }
  return c;
}

namespace {
void add_step(KindError& e, double predicted, double measured) {
  const double rel = (predicted - measured) / measured;
  ++e.steps;
  e.mape += std::fabs(rel);
  e.max_ape = std::max(e.max_ape, std::fabs(rel));
  e.bias += rel;
  e.measured_s += measured;
  e.predicted_s += predicted;
}
void finish(KindError& e) {
  if (e.steps == 0) return;
  e.mape /= static_cast<double>(e.steps);
  e.bias /= static_cast<double>(e.steps);
}
}  // namespace

Validation validate_profile(const Profile& p, const CalibrationSamples& s) {
  if (p.model != s.model || p.tp != s.tp)
    throw InputError("--profile: the profile is for " + p.model + " at TP " + std::to_string(p.tp) +
                     ", the samples for " + s.model + " at TP " + std::to_string(s.tp));
  CostCoefficients c = p.coefficients;
  if (allreduce_untimed(s)) {
    CostCoefficients comm;  // what the profile charges for TP, which one shard's times hold none of
    add_tensor_parallel_comm(comm, find_model(s.model), find_gpu(p.gpu.catalog), s.tp);
    c.allreduce_s_per_token = std::max(0.0, c.allreduce_s_per_token - comm.allreduce_s_per_token);
    c.overhead_s = std::max(0.0, c.overhead_s - comm.overhead_s);
  }
  Validation v;
  for (size_t i = 0; i < s.samples.size(); ++i) {
    const double predicted = step_seconds(c, s.samples[i].shape), measured = s.samples[i].seconds;
    add_step(v.all, predicted, measured);
    add_step(v.by_kind[static_cast<size_t>(s.kinds[i])], predicted, measured);
  }
  finish(v.all);
  for (KindError& e : v.by_kind) finish(e);
  return v;
}

}  // namespace prefixsim
