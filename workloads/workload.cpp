#include "workloads/workload.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <queue>
#include <sstream>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "workloads/config_node.h"
#include "workloads/distributions.h"
#include "workloads/patterns.h"
#include "workloads/presets.h"
#include "workloads/rng.h"

namespace prefixsim::workloads {

namespace {

namespace fs = std::filesystem;

// The last arrival a TimeNs (int64 nanoseconds) holds, with a margin.
constexpr double kMaxArrivalSeconds = 9.2e9;
constexpr TimeNs kMaxArrivalNs = static_cast<TimeNs>(kMaxArrivalSeconds * 1e9);

struct Component {
  std::string name;
  std::unique_ptr<Pattern> pattern;
  double weight = 1;
  std::string salt;
};

// Where a workload description comes from: its text and the name errors use.
struct Source {
  std::string text;
  std::string file;    // for messages: a path, or "preset:NAME.yaml"
  std::string origin;  // for reports: the preset name or the path
  fs::path dir;        // for relative `file:` references ("" for presets)
};

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".yaml") || s.ends_with(".yml");
}

Source load_source(const std::string& ref, const fs::path& base, const std::string& from_file, long from_line) {
  if (!looks_like_path(ref)) {
    if (const std::string* t = preset_text(ref)) return {*t, "preset:" + ref + ".yaml", ref, {}};
  }
  const fs::path p = base.empty() || fs::path(ref).is_absolute() ? fs::path(ref) : base / ref;
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::string presets;
    for (const auto& n : preset_names()) presets += (presets.empty() ? "" : ", ") + n;
    const std::string msg = "unknown workload '" + ref + "': not a preset (" + presets + ") and no readable file";
    if (from_file.empty()) throw InputError(msg);
    throw InputError(from_file, from_line, msg);
  }
  in.close();
  return {read_whole_file(p.string(), "workload file"), p.string(), p.string(), p.parent_path()};
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (c == ' ') c = '-';
  return s;
}

class WorkloadSource final : public RequestSource {
 public:
  WorkloadSource(std::string name, std::string origin, uint64_t seed, int64_t requests, Arrival arrival,
                 std::vector<Component> components)
      : name_(std::move(name)), origin_(std::move(origin)), requests_(requests), arrival_(arrival),
        components_(std::move(components)), arrival_rng_(derive_seed(seed, 101)), mix_rng_(derive_seed(seed, 102)) {
    double total = 0;
    for (const auto& c : components_) total += c.weight;
    double acc = 0;
    for (const auto& c : components_) cumulative_.push_back((acc += c.weight) / total);
  }

  bool next(Request& out) override {
    if (emitted_ >= requests_) return false;
    out.clear();
    const TimeNs arrival_ns = to_ns(next_arrival_s_);
    size_t comp = 0;
    uint64_t conv = 0;
    TimeNs t = 0;
    double think = -1;
    if (!pending_.empty() && pending_.top().t < arrival_ns) {
      const Pending p = pending_.top();
      pending_.pop();
      comp = p.comp;
      conv = p.conv;
      t = p.t;
      think = components_[comp].pattern->resume(conv, out);
    } else {
      comp = pick_component();
      conv = conversations_++;
      t = arrival_ns;
      think = components_[comp].pattern->begin(conv, out);
      next_arrival_s_ += arrival_.next_gap(arrival_rng_);
    }
    if (think >= 0) {
      const TimeNs gap = to_ns(think);
      if (gap > kMaxArrivalNs - t) to_ns(kMaxArrivalSeconds * 2);  // past the clock: throws
      pending_.push({t + gap, seq_++, comp, conv});
    }
    out.id = "r" + std::to_string(emitted_++);
    out.arrival = t;
    out.extras.salt = components_[comp].salt;
    if (!out.session.empty() && components_.size() > 1) out.session = components_[comp].name + "-" + out.session;
    return true;
  }

  std::string format() const override { return "generator:" + name_; }
  std::string origin() const override { return origin_; }

 private:
  // Seconds -> nanoseconds, range-checked before the conversion (a double
  // past 2^63 ns converts to garbage: negative arrival times).
  TimeNs to_ns(double s) const {
    if (!(s >= 0 && s <= kMaxArrivalSeconds))
      throw InputError("arrival rate: request r" + std::to_string(emitted_) + " would arrive at " + std::to_string(s) +
                       " s, beyond the nanosecond clock (292 years); raise --rate or lower --requests");
    return static_cast<TimeNs>(std::llround(s * 1e9));
  }

  struct Pending {
    TimeNs t;
    uint64_t seq;  // ties break by scheduling order: deterministic
    size_t comp;
    uint64_t conv;
    bool operator>(const Pending& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  size_t pick_component() {
    if (components_.size() == 1) return 0;
    const double u = mix_rng_.uniform01();
    for (size_t i = 0; i + 1 < cumulative_.size(); ++i)
      if (u < cumulative_[i]) return i;
    return cumulative_.size() - 1;
  }

  std::string name_, origin_;
  int64_t requests_;
  Arrival arrival_;
  std::vector<Component> components_;
  std::vector<double> cumulative_;
  Rng arrival_rng_, mix_rng_;
  double next_arrival_s_ = 0;
  int64_t emitted_ = 0;
  uint64_t conversations_ = 0;
  uint64_t seq_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
};

// One component from a node holding `pattern` (+ `params`).
Component single_component(const ConfigNode& root, const std::string& name, uint64_t seed) {
  const ConfigNode pat = root.require("pattern");
  Component c;
  c.name = name;
  c.pattern = make_pattern(pat.as_string(), root.get("params"), seed, pat);
  return c;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& p : embedded_presets()) out.emplace_back(p.name);
  return out;
}

const std::string* preset_text(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> texts = [] {
    std::vector<std::pair<std::string, std::string>> v;
    for (const auto& p : embedded_presets()) v.emplace_back(std::string(p.name), std::string(p.text));
    return v;
  }();
  for (const auto& [n, t] : texts)
    if (n == name) return &t;
  return nullptr;
}

std::unique_ptr<RequestSource> make_workload(const std::string& preset_or_path, const WorkloadOverrides& o) {
  const Source src = load_source(preset_or_path, {}, "", 0);
  const ConfigNode root = ConfigNode::parse(src.text, src.file);
  root.expect_map({"name", "description", "seed", "requests", "arrival", "pattern", "params", "mixture"});

  const std::string name = sanitize(root.get("name") ? root.get("name")->as_string() : src.origin);
  const uint64_t seed = o.seed ? *o.seed : root.get("seed") ? root.get("seed")->as_u64() : 1;
  int64_t requests = root.get("requests") ? root.get("requests")->as_int(0, 1'000'000'000'000) : 1000;
  if (o.requests) {
    if (*o.requests < 0) throw InputError("--requests must be >= 0");
    requests = *o.requests;
  }
  Arrival arrival;
  if (auto a = root.get("arrival")) arrival = Arrival::parse(*a);
  if (o.rate) {
    if (!(*o.rate > 0) || !std::isfinite(*o.rate)) throw InputError("--rate must be a positive number");
    arrival.rate = *o.rate;
  }
  // Arrival times are int64 nanoseconds (at most ~292 years): refuse up
  // front a rate that would carry the expected arrivals past that.
  if (static_cast<double>(requests) / arrival.rate > kMaxArrivalSeconds / 2)
    throw InputError(std::string(o.rate ? "--rate" : src.file + ": arrival.rate") + ": " + std::to_string(requests) +
                     " requests at " + [&] {
                       char b[32];
                       std::snprintf(b, sizeof b, "%g", arrival.rate);
                       return std::string(b);
                     }() +
                     "/s would arrive over more than 146 years, beyond the nanosecond clock (292 years); "
                     "raise the rate or lower --requests");

  std::vector<Component> comps;
  const auto mixture = root.get("mixture");
  if (mixture && root.get("pattern")) root.require("pattern").fail("give either pattern or mixture, not both");
  if (!mixture) {
    if (root.get("params") && !root.get("pattern")) root.require("pattern").fail("params need a pattern");
    comps.push_back(single_component(root, name, derive_seed(seed, 0)));
  } else {
    const auto items = mixture->elements();
    if (items.empty()) mixture->fail("a mixture needs at least one entry");
    uint64_t index = 0;
    for (const ConfigNode& e : items) {
      e.expect_map({"name", "preset", "file", "pattern", "params", "weight", "salt"});
      const int sources = (e.get("preset") ? 1 : 0) + (e.get("file") ? 1 : 0) + (e.get("pattern") ? 1 : 0);
      if (sources != 1) e.fail("each mixture entry needs exactly one of preset, file or pattern");
      const uint64_t cseed = derive_seed(seed, ++index);
      Component c;
      if (e.get("pattern")) {
        c = single_component(e, e.require("pattern").as_string(), cseed);
      } else {
        const ConfigNode ref = e.get("preset") ? e.require("preset") : e.require("file");
        const std::string r = ref.as_string();
        if (e.get("preset") && !preset_text(r)) ref.fail("unknown preset '" + r + "'");
        const Source inner = e.get("preset") ? load_source(r, {}, ref.file(), ref.line())
                                             : load_source(r, src.dir, ref.file(), ref.line());
        const ConfigNode iroot = ConfigNode::parse(inner.text, inner.file);
        iroot.expect_map({"name", "description", "seed", "requests", "arrival", "pattern", "params", "mixture"});
        if (iroot.get("mixture")) iroot.require("mixture").fail("a mixture entry cannot itself be a mixture");
        c = single_component(iroot, r, cseed);
      }
      if (auto n = e.get("name")) c.name = n->as_string();
      c.name = sanitize(c.name);
      if (auto w = e.get("weight")) c.weight = w->as_double(1e-12, 1e12);
      if (auto s = e.get("salt")) c.salt = s->as_string();
      comps.push_back(std::move(c));
    }
  }
  return std::make_unique<WorkloadSource>(name, src.origin, seed, requests, arrival, std::move(comps));
}

}  // namespace prefixsim::workloads
