#include "sim/cost/profile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/json_keys.h"

namespace prefixsim {

namespace {

using nlohmann::json;

// Typed, range-checked access to a parsed profile; errors name the dotted
// field path and the line where its key first appears in the text (nlohmann
// keeps no positions, so we find the key in the source).
class Reader {
 public:
  Reader(const std::string& text, const std::string& file, const json& root)
      : text_(text), file_(file), root_(root) {}

  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw InputError(file_, line_of(path), "field '" + path + "' " + msg);
  }

  const json& object(const std::string& path, std::initializer_list<const char*> keys) const {
    const json& v = at(path);
    if (!v.is_object()) fail(path, "must be an object");
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool known = false;
      for (const char* k : keys) known = known || it.key() == k;
      if (!known) fail(path.empty() ? it.key() : path + "." + it.key(), "is not a profile field (typo?)");
    }
    return v;
  }
  std::string str(const std::string& path, bool non_empty = true) const {
    const json& v = at(path);
    if (!v.is_string()) fail(path, "must be a string");
    std::string s = v.get<std::string>();
    if (non_empty && s.empty()) fail(path, "must not be empty");
    return s;
  }
  double num(const std::string& path, double lo, double hi) const {
    const json& v = at(path);
    if (!v.is_number()) fail(path, "must be a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) fail(path, "must be in [" + g(lo) + ", " + g(hi) + "], got " + g(x));
    return x;
  }
  bool has(const std::string& path) const {
    const size_t dot = path.rfind('.');
    const json& parent = dot == std::string::npos ? root_ : at(path.substr(0, dot));
    return parent.is_object() && parent.contains(path.substr(dot == std::string::npos ? 0 : dot + 1));
  }
  int64_t integer(const std::string& path, int64_t lo, int64_t hi) const {
    const json& v = at(path);
    if (!v.is_number_integer()) fail(path, "must be an integer");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      fail(path, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(x));
    return x;
  }

 private:
  static std::string g(double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  }
  const json& at(const std::string& path) const {
    const json* v = &root_;
    size_t start = 0;
    while (start <= path.size() && !path.empty()) {
      const size_t dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!v->is_object() || !v->contains(key)) fail(path, "is missing");
      v = &(*v)[key];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return *v;
  }
  // Line of the path's last key, searching each component after the previous one.
  long line_of(const std::string& path) const {
    size_t pos = 0, start = 0;
    while (start < path.size()) {
      const size_t dot = path.find('.', start);
      const std::string key = "\"" + path.substr(start, dot == std::string::npos ? std::string::npos : dot - start) + "\"";
      const size_t hit = text_.find(key, pos);
      if (hit == std::string::npos) break;
      pos = hit;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return 1 + static_cast<long>(std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
  }

  const std::string& text_;
  const std::string& file_;
  const json& root_;
};

}  // namespace

bool looks_like_iso_date(std::string_view s) {
  if (s.size() < 10) return false;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9') return false;
  return s[4] == '-' && s[7] == '-';
}

namespace {

// A generous ceiling: no engine step coefficient is anywhere near a minute.
constexpr double kMaxSeconds = 60.0;

}  // namespace

Profile parse_profile(const std::string& text, const std::string& file) {
  json root;
  try {
    root = json::parse(text, refuse_duplicate_json_keys(text, file));
  } catch (const json::parse_error& e) {
    const auto upto = std::min<size_t>(e.byte, text.size());
    const long line = 1 + static_cast<long>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto), '\n'));
    throw InputError(file, line, std::string("invalid JSON: ") + e.what());
  } catch (const json::exception& e) {  // e.g. out_of_range: a number like 1e999
    throw InputError(file, 1, std::string("invalid JSON: ") + e.what());
  }
  Reader r(text, file, root);
  r.object("", {"schema", "gpu", "model", "tp", "date", "coefficients", "fit", "provenance"});
  if (r.str("schema") != kProfileSchema)
    r.fail("schema", std::string("must be \"") + kProfileSchema + "\", got \"" + r.str("schema") + "\"");

  Profile p;
  r.object("gpu", {"name", "catalog", "sm_count", "sm_clock_mhz", "mem_clock_mhz", "driver", "cuda"});
  p.gpu.name = r.str("gpu.name");
  p.gpu.catalog = r.str("gpu.catalog");
  p.gpu.sm_count = static_cast<int>(r.integer("gpu.sm_count", 1, 100000));
  p.gpu.sm_clock_mhz = r.num("gpu.sm_clock_mhz", 0, 1e5);
  p.gpu.mem_clock_mhz = r.num("gpu.mem_clock_mhz", 0, 1e5);
  p.gpu.driver = r.str("gpu.driver");
  p.gpu.cuda = r.str("gpu.cuda");
  p.model = r.str("model");
  p.tp = static_cast<int>(r.integer("tp", 1, 64));
  p.date = r.str("date");
  if (!looks_like_iso_date(p.date)) r.fail("date", "must be an ISO 8601 date (YYYY-MM-DD...), got \"" + p.date + "\"");

  r.object("coefficients", {"overhead_s", "linear_s_per_token", "weight_floor_s", "attn_s_per_unit",
                            "kv_read_s_per_token", "per_seq_s", "allreduce_s_per_token", "expert_read_s",
                            "expert_miss", "device_overhead_s", "expert_token_scale"});
  CostCoefficients& c = p.coefficients;
  c.overhead_s = r.num("coefficients.overhead_s", 0, kMaxSeconds);
  c.linear_s_per_token = r.num("coefficients.linear_s_per_token", 0, kMaxSeconds);
  c.weight_floor_s = r.num("coefficients.weight_floor_s", 0, kMaxSeconds);
  c.attn_s_per_unit = r.num("coefficients.attn_s_per_unit", 0, kMaxSeconds);
  c.kv_read_s_per_token = r.num("coefficients.kv_read_s_per_token", 0, kMaxSeconds);
  c.per_seq_s = r.num("coefficients.per_seq_s", 0, kMaxSeconds);
  c.allreduce_s_per_token = r.num("coefficients.allreduce_s_per_token", 0, kMaxSeconds);
  if (r.has("coefficients.expert_read_s") != r.has("coefficients.expert_miss"))
    r.fail("coefficients", "fields 'expert_read_s' and 'expert_miss' (mixture of experts) go together");
  if (r.has("coefficients.expert_read_s")) {
    c.expert_read_s = r.num("coefficients.expert_read_s", 0, kMaxSeconds);
    c.expert_miss = r.num("coefficients.expert_miss", 0, 1);
  }
  if (r.has("coefficients.expert_token_scale"))
    c.expert_token_scale = r.num("coefficients.expert_token_scale", 1, 1 << 20);
  if (r.has("coefficients.device_overhead_s"))
    c.device_overhead_s = r.num("coefficients.device_overhead_s", 0, kMaxSeconds);
  if (c.overhead_s + c.linear_s_per_token + c.weight_floor_s + c.per_seq_s <= 0)
    r.fail("coefficients", "must price a step above zero (overhead, linear, floor and per-sequence terms are all 0)");

  r.object("fit", {"method", "train_samples", "held_out_samples", "mape_train", "mape_held_out", "max_ape_held_out"});
  p.fit.method = r.str("fit.method");
  p.fit.train_samples = r.integer("fit.train_samples", 1, int64_t{1} << 40);
  p.fit.held_out_samples = r.integer("fit.held_out_samples", 0, int64_t{1} << 40);
  p.fit.mape_train = r.num("fit.mape_train", 0, 1e3);
  p.fit.mape_held_out = r.num("fit.mape_held_out", 0, 1e3);
  p.fit.max_ape_held_out = r.num("fit.max_ape_held_out", 0, 1e3);
  p.provenance = r.str("provenance", false);
  return p;
}

Profile read_profile(const std::string& path) {
  return parse_profile(read_whole_file(path, "profile"), path);
}

json to_json(const CostCoefficients& c) {
  json j = {{"overhead_s", c.overhead_s},
            {"linear_s_per_token", c.linear_s_per_token},
            {"weight_floor_s", c.weight_floor_s},
            {"attn_s_per_unit", c.attn_s_per_unit},
            {"kv_read_s_per_token", c.kv_read_s_per_token},
            {"per_seq_s", c.per_seq_s},
            {"allreduce_s_per_token", c.allreduce_s_per_token}};
  // Only for a MoE with routing figures, so dense profiles are unchanged.
  if (c.expert_read_s > 0) {
    j["expert_read_s"] = c.expert_read_s;
    j["expert_miss"] = c.expert_miss;
  }
  if (c.device_overhead_s > 0) j["device_overhead_s"] = c.device_overhead_s;
  if (c.expert_token_scale != 1) j["expert_token_scale"] = c.expert_token_scale;
  return j;
}

json to_json(const Profile& p) {
  return {{"schema", kProfileSchema},
          {"gpu",
           {{"name", p.gpu.name},
            {"catalog", p.gpu.catalog},
            {"sm_count", p.gpu.sm_count},
            {"sm_clock_mhz", p.gpu.sm_clock_mhz},
            {"mem_clock_mhz", p.gpu.mem_clock_mhz},
            {"driver", p.gpu.driver},
            {"cuda", p.gpu.cuda}}},
          {"model", p.model},
          {"tp", p.tp},
          {"date", p.date},
          {"coefficients", to_json(p.coefficients)},
          {"fit",
           {{"method", p.fit.method},
            {"train_samples", p.fit.train_samples},
            {"held_out_samples", p.fit.held_out_samples},
            {"mape_train", p.fit.mape_train},
            {"mape_held_out", p.fit.mape_held_out},
            {"max_ape_held_out", p.fit.max_ape_held_out}}},
          {"provenance", p.provenance}};
}

std::string profile_text(const Profile& p) { return to_json(p).dump(2) + "\n"; }

void write_profile(const std::string& path, const Profile& p) {
  const std::string text = profile_text(p);
  parse_profile(text, path);  // the one validator: never write a profile we would refuse to read
  write_file_atomic(path, text, "--out");
}

}  // namespace prefixsim
