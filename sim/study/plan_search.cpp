#include "sim/study/plan_search.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "reports/slo_bound.h"
#include "sim/base/error.h"

namespace prefixsim {
namespace {

enum class MetricKind { latency, hit_rate, refusal_rate };
struct MetricInfo {
  const char* name;    // as written in --slo
  const char* column;  // the row's column (refusal_rate: plan's figures_of derives it)
  MetricKind kind;
};
constexpr MetricInfo kMetrics[] = {{"ttft_mean", "ttft_mean_ms", MetricKind::latency},
                                   {"ttft_p50", "ttft_p50_ms", MetricKind::latency},
                                   {"ttft_p90", "ttft_p90_ms", MetricKind::latency},
                                   {"ttft_p99", "ttft_p99_ms", MetricKind::latency},
                                   {"queue_p99", "queue_p99_ms", MetricKind::latency},
                                   {"e2e_p99", "e2e_p99_ms", MetricKind::latency},
                                   {"hit_rate", "hit_rate", MetricKind::hit_rate},
                                   {"block_hit_rate", "block_hit_rate", MetricKind::hit_rate},
                                   {"refusal_rate", "refusal_rate", MetricKind::refusal_rate}};

[[noreturn]] void bad(const std::string& term, const std::string& msg) {
  throw InputError("--slo: '" + term + "': " + msg);
}

double parse_number(const std::string& term, const std::string& s) {
  std::istringstream in(s);
  double v = 0;
  if (s.empty() || !(in >> v) || !in.eof() || !std::isfinite(v)) bad(term, "'" + s + "' is not a number");
  return v;
}

}  // namespace

bool SloTerm::meets(double v) const { return slo_meets(at_most, limit, v); }

double SloTerm::margin(double v) const { return slo_margin(at_most, limit, v); }

std::vector<SloTerm> parse_slo(const std::string& text) {
  std::vector<SloTerm> out;
  std::stringstream in(text);
  std::string term;
  if (text.empty() || text.back() == ',') bad(text, "an empty term");
  while (std::getline(in, term, ',')) {
    if (term.empty()) bad(text, "an empty term");
    const size_t op_at = term.find_first_of("<>=");
    if (op_at == std::string::npos || op_at == 0) bad(term, "expected METRIC<=VALUE or METRIC>=VALUE");
    const std::string name = term.substr(0, op_at);
    size_t value_at = op_at + 1;
    std::string op(1, term[op_at]);
    if (value_at < term.size() && term[value_at] == '=') op += '=', ++value_at;
    const MetricInfo* m = nullptr;
    for (const MetricInfo& x : kMetrics)
      if (name == x.name) m = &x;
    if (!m) {
      std::string known;
      for (const MetricInfo& x : kMetrics) known += std::string(known.empty() ? "" : ", ") + x.name;
      bad(term, "unknown metric '" + name + "' (known: " + known + ")");
    }
    SloTerm t;
    t.text = term;
    t.metric = m->column;
    t.at_most = m->kind != MetricKind::hit_rate;
    if (op != "=" && op != (t.at_most ? "<=" : ">="))
      bad(term, std::string(m->kind == MetricKind::latency  ? "a latency is bounded from above: use <= (or =)"
                            : m->kind == MetricKind::hit_rate ? "a hit rate is bounded from below: use >= (or =)"
                                                              : "a refusal rate is bounded from above: use <= (or =)"));
    std::string v = term.substr(value_at);
    for (const SloTerm& o : out)
      if (o.metric == t.metric) bad(term, "contradictory: " + name + " is bounded twice");
    if (m->kind == MetricKind::refusal_rate) {
      double scale = 1;
      if (!v.empty() && v.back() == '%') scale = 0.01, v.pop_back();
      t.limit = parse_number(term, v) * scale;
      if (!(t.limit >= 0 && t.limit < 1)) bad(term, "a refusal rate bound is in [0, 1) (or [0%, 100%))");
    } else if (m->kind == MetricKind::latency) {
      double scale = 0;
      if (v.size() > 2 && v.compare(v.size() - 2, 2, "ms") == 0) scale = 1, v.resize(v.size() - 2);
      else if (v.size() > 1 && v.back() == 's') scale = 1000, v.pop_back();
      else bad(term, "a latency needs its unit: 2s or 500ms");
      t.limit = parse_number(term, v) * scale;
      if (!(t.limit > 0)) bad(term, "a latency bound must be positive");
    } else {
      double scale = 1;
      if (!v.empty() && v.back() == '%') scale = 0.01, v.pop_back();
      t.limit = parse_number(term, v) * scale;
      if (!(t.limit > 0 && t.limit <= 1)) bad(term, "a hit rate bound is in (0, 1] (or (0%, 100%])");
    }
    out.push_back(t);
  }
  return out;
}

bool meets_slo(const std::vector<SloTerm>& slo, const std::map<std::string, double>& figures) {
  for (const SloTerm& t : slo) {
    auto it = figures.find(t.metric);
    if (it == figures.end() || !t.meets(it->second)) return false;
  }
  return true;
}

SearchResult search_replicas(int64_t max_replicas, const std::function<bool(int64_t)>& meets) {
  SearchResult r;
  auto run = [&](int64_t n) {
    const bool ok = meets(n);
    r.steps.push_back({n, ok});
    return ok;
  };
  int64_t lo = 0, hi = 0;  // lo fails (0: none run), hi meets (0: none found)
  for (int64_t n = 1; n <= max_replicas; n = std::min(max_replicas, n * 2)) {
    if (run(n)) {
      hi = n;
      break;
    }
    lo = n;
    if (n == max_replicas) break;
  }
  if (hi) {
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (run(mid) ? hi : lo) = mid;
    }
  }
  r.answer = hi;
  // The probe: under monotonicity one more replica meets the SLO too. The
  // search itself never runs a count above one that met, so without this
  // run a non-monotone verdict could not show.
  const bool probed = std::any_of(r.steps.begin(), r.steps.end(), [&](const SearchStep& s) { return s.replicas == hi + 1; });
  if (hi && hi < max_replicas && !probed) run(hi + 1);
  // The guard: more replicas failing where fewer met.
  for (const SearchStep& a : r.steps)
    for (const SearchStep& b : r.steps)
      if (a.meets && !b.meets && b.replicas > a.replicas)
        r.violations.push_back(std::to_string(a.replicas) + " replicas met the SLO but " +
                               std::to_string(b.replicas) + " did not");
  return r;
}

}  // namespace prefixsim
