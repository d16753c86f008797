#include "sim/study/plan_search.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "reports/slo_bound.h"
#include "sim/scenario/point_run.h"
#include "sim/base/error.h"

namespace prefixsim {
namespace {

enum class MetricKind { latency, hit_rate, refusal_rate };
using Figure = StopBound::Figure;
struct MetricInfo {
  const char* name;    // as written in --slo
  const char* column;  // the row's column (refusal_rate: plan's figures_of derives it)
  MetricKind kind;
  // A latency: the figure and percentile a run may stop at (0: the mean).
  Figure figure = Figure::kTtft;
  double percentile = 0;
};
constexpr MetricInfo kMetrics[] = {{"ttft_mean", "ttft_mean_ms", MetricKind::latency, Figure::kTtft, 0},
                                   {"ttft_p50", "ttft_p50_ms", MetricKind::latency, Figure::kTtft, 50},
                                   {"ttft_p90", "ttft_p90_ms", MetricKind::latency, Figure::kTtft, 90},
                                   {"ttft_p99", "ttft_p99_ms", MetricKind::latency, Figure::kTtft, 99},
                                   {"queue_p99", "queue_p99_ms", MetricKind::latency, Figure::kQueue, 99},
                                   {"e2e_p99", "e2e_p99_ms", MetricKind::latency, Figure::kE2e, 99},
                                   {"tpot_p50", "tpot_p50_ms", MetricKind::latency, Figure::kTpot, 50},
                                   {"tpot_p99", "tpot_p99_ms", MetricKind::latency, Figure::kTpot, 99},
                                   {"hit_rate", "hit_rate", MetricKind::hit_rate},
                                   {"block_hit_rate", "block_hit_rate", MetricKind::hit_rate},
                                   {"refusal_rate", "refusal_rate", MetricKind::refusal_rate}};

// The fewest n in (lo, hi] with ok(n): lo fails (0: none below), hi meets
// (run or implied); bisection, each mid tried once.
template <class Ok>
int64_t fewest_meeting(int64_t lo, int64_t hi, const Ok& ok) {
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (ok(mid) ? hi : lo) = mid;
  }
  return hi;
}

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

std::vector<StopBound> stop_bounds_of(const std::vector<SloTerm>& slo) {
  std::vector<StopBound> out;
  for (const SloTerm& t : slo)
    for (const MetricInfo& m : kMetrics)
      if (m.kind == MetricKind::latency && t.metric == m.column) out.push_back({m.figure, m.percentile, t.limit, t.text});
  return out;
}

int64_t doubling_next(int64_t n, int64_t max_replicas) { return n < max_replicas ? std::min(max_replicas, n * 2) : 0; }

SearchResult search_replicas(int64_t max_replicas, const std::function<bool(int64_t)>& meets) {
  SearchResult r;
  auto run = [&](int64_t n) {
    const bool ok = meets(n);
    r.steps.push_back({n, ok});
    return ok;
  };
  int64_t lo = 0, hi = 0;  // lo fails (0: none run), hi meets (0: none found)
  for (int64_t n = max_replicas >= 1 ? 1 : 0; n > 0; n = doubling_next(n, max_replicas)) {
    if (run(n)) {
      hi = n;
      break;
    }
    lo = n;
  }
  if (hi) hi = fewest_meeting(lo, hi, run);
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

namespace {

std::string split_text(int64_t p, int64_t d) { return std::to_string(p) + "P:" + std::to_string(d) + "D"; }

// The split search's runs, each fleet once.
class SplitRuns {
 public:
  explicit SplitRuns(const std::function<bool(int64_t, int64_t)>& meets) : meets_(meets) {}
  bool run(int64_t p, int64_t d) {
    for (const SplitStep& s : steps)
      if (s.prefill == p && s.decode == d) return s.meets;
    steps.push_back({p, d, meets_(p, d)});
    return steps.back().meets;
  }
  std::vector<SplitStep> steps;

 private:
  const std::function<bool(int64_t, int64_t)>& meets_;
};

}  // namespace

SplitSearchResult search_split(int64_t max_per_pool, const std::function<double(int64_t, int64_t)>& cost,
                               const std::function<bool(int64_t, int64_t)>& meets) {
  SplitRuns runs(meets);
  int64_t k = 0;
  for (int64_t n = 1; n <= max_per_pool; n = std::min(max_per_pool, n * 2)) {
    if (runs.run(n, n)) {
      k = n;
      break;
    }
    if (n == max_per_pool) break;
  }
  SplitSearchResult r;
  if (k) {
    const int64_t p0 = fewest_meeting(0, k, [&](int64_t p) { return runs.run(p, k); });
    const int64_t d0 = fewest_meeting(0, k, [&](int64_t d) { return runs.run(p0, d); });
    int64_t best_p = p0, best_d = d0;
    auto consider = [&](int64_t p, int64_t d) {
      const double c = cost(p, d), b = cost(best_p, best_d);
      if (c < b || (c == b && (p + d < best_p + best_d || (p + d == best_p + best_d && p < best_p))))
        best_p = p, best_d = d;
    };
    // The most decode instances P prefill ones may have and still cost less
    // than the best found (0: none).
    auto cap = [&](int64_t p) {
      int64_t d = 0;
      while (d < max_per_pool && cost(p, d + 1) < cost(best_p, best_d)) ++d;
      return d;
    };
    // P's fewest decode instances if a fleet of them costs less than the
    // best: above `fails` (known to fail), at most `meets` (known or implied
    // to meet; 0: none known). One run at the cap says whether any would.
    // Returns D(P), or 0 when no fleet of P could be cheaper.
    auto cheaper_at = [&](int64_t p, int64_t fails, int64_t meets) -> int64_t {
      const int64_t c = cap(p);
      if (c <= fails) return 0;
      if (meets && meets <= c) return fewest_meeting(fails, meets, [&](int64_t d) { return runs.run(p, d); });
      if (!runs.run(p, c)) return 0;
      return fewest_meeting(fails, c, [&](int64_t d) { return runs.run(p, d); });
    };
    // More prefill: D(P) falls from D*, while P and one decode instance
    // could still cost less than the best.
    for (int64_t p = p0 + 1, d_last = d0; p <= max_per_pool && d_last > 1 && cost(p, 1) < cost(best_p, best_d);
         ++p) {
      const int64_t d = cheaper_at(p, 0, d_last);
      if (d) consider(p, d), d_last = d;  // else D(P) is still at most d_last
    }
    // Fewer prefill: each needs more than K decode instances (P* - 1
    // failed with K), and more than the next larger P needed.
    for (int64_t p = p0 - 1, fails = k; p >= 1 && fails < max_per_pool; --p) {
      const int64_t d = cheaper_at(p, fails, 0);
      if (d) consider(p, d), fails = d - 1;
      else fails = std::max(fails, std::min(cap(p), max_per_pool));  // (P, cap) failed, or was not worth a run
    }
    r.prefill = best_p;
    r.decode = best_d;
    if (best_p < max_per_pool && best_d < max_per_pool) runs.run(best_p + 1, best_d + 1);  // the probe
  }
  r.steps = std::move(runs.steps);
  // The guard: a fleet at least as large in both pools failing where one met.
  for (const SplitStep& a : r.steps)
    for (const SplitStep& b : r.steps)
      if (a.meets && !b.meets && b.prefill >= a.prefill && b.decode >= a.decode)
        r.violations.push_back(split_text(a.prefill, a.decode) + " met the SLO but " + split_text(b.prefill, b.decode) +
                               " did not");
  return r;
}

}  // namespace prefixsim
