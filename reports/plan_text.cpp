#include "reports/plan_text.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "reports/slo_bound.h"

namespace prefixsim {

namespace plan_text_detail {  // named: the unity build joins this file with others that have their own helpers

using ojson = nlohmann::ordered_json;

std::string fmt(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

double number_or_nan(const ojson& row, const std::string& key) {
  return row.contains(key) && row[key].is_number() ? row[key].get<double>() : NAN;
}

// "TTFT mean parts: queue 1.0 + prefill 2.0 + transfer 3.0 + first decode 4.0 ms" for a split run ("" otherwise).
std::string parts_text(const ojson& r) {
  if (!r.contains("ttft_parts_mean_ms")) return "";
  const ojson& p = r["ttft_parts_mean_ms"];
  return "TTFT mean parts: queue " + fmt(number_or_nan(p, "queue"), 1) + " + prefill " +
         fmt(number_or_nan(p, "prefill"), 1) + " + transfer " + fmt(number_or_nan(p, "transfer"), 1) +
         " + first decode " + fmt(number_or_nan(p, "first_decode"), 1) + " ms";
}

// "after 850 of 12031 requests, 121 over the limit of ttft_p99<=2s": where
// a run stopped once an SLO term could no longer hold (plan.json's
// "stopped"), "" for a run to the end.
std::string stopped_text(const ojson& row) {
  if (!row.contains("stopped")) return "";
  const ojson& st = row["stopped"];
  const uint64_t above = st["above_limit"].get<uint64_t>();
  return "after " + std::to_string(st["finished_requests"].get<uint64_t>()) + " of " +
         std::to_string(st["requests"].get<uint64_t>()) + " requests, " +
         (above > 0 ? std::to_string(above) + " over the limit of " : "past the limit of ") +
         st["bound"].get<std::string>();
}

// "ttft_p99_ms 1234.5 ms (<= 2000.0 ms: 38.3 % inside)", from one of
// plan.json's slo terms and a run's row; a run stopped early has no figures.
std::string margin_text(const ojson& term, const ojson& row) {
  const std::string metric = term["metric"].get<std::string>();
  if (row.contains("stopped") && !(row.contains(metric) && row[metric].is_number()))
    return metric + " not measured (the run stopped " + stopped_text(row) + ")";
  const bool at_most = term["bound"].get<std::string>() == "<=";
  const double limit = term["limit"].get<double>();
  const double v = number_or_nan(row, metric);
  const bool pct = !at_most || metric == "refusal_rate";  // rates in %, latencies in ms
  return metric + " " + (pct ? fmt(100 * v, 2) + " %" : fmt(v, 1) + " ms") + " (" + (at_most ? "<= " : ">= ") +
         (pct ? fmt(100 * limit, 2) + " %" : fmt(limit, 1) + " ms") + ": " +
         fmt(100 * std::fabs(slo_margin(at_most, limit, v)), 1) + " % " +
         (slo_meets(at_most, limit, v) ? "inside" : "outside") + ")";
}

// One line per SLO term ("- ..." in Markdown), or all on one line (" ...;").
std::string margins_md(const ojson& plan, const ojson& row) {
  std::string out;
  for (const ojson& t : plan["slo"]) out += "- " + margin_text(t, row) + "\n";
  return out;
}
std::string margins_inline(const ojson& plan, const ojson& row) {
  std::string out;
  for (const ojson& t : plan["slo"]) out += " " + margin_text(t, row) + ";";
  return out;
}

void md_question(std::ostringstream& md, const ojson& plan, const std::string& router) {
  const ojson& trace = plan["trace"];
  const ojson& s = plan["scenario"];
  md << "# prefixsim plan\n\nTrace `" << trace["path"].get<std::string>() << "` ("
     << trace["format"].get<std::string>() << "), " << trace["requests"].get<size_t>() << " requests; "
     << s["model"].get<std::string>() << " on " << s["gpu"].get<std::string>() << ", policy "
     << s["policy"].get<std::string>() << ", router " << router << ".\n\nSLO: ";
  for (size_t i = 0; i < plan["slo"].size(); ++i)
    md << (i ? ", " : "") << "`" << plan["slo"][i]["text"].get<std::string>() << "`";
  md << ".\n\n**Answer:** " << plan["summary"].get<std::string>() << ".\n\n";
}

void md_answer(std::ostringstream& md, const ojson& plan) {
  const ojson& answer = plan["answer"];
  if (answer.is_null()) return;
  md << "Margin at the answer:\n\n" << margins_md(plan, answer["run"]);
  if (answer.contains("prefill_replicas")) {  // a split fleet: one fewer of either pool
    md << "\n" << parts_text(answer["run"]) << ".\n";
    for (const char* pool : {"prefill", "decode"}) {
      const ojson& fewer = answer[std::string("one_fewer_") + pool];
      if (!fewer.is_null())
        md << "\nOne " << pool << " instance fewer (" << plan_size_text(fewer) << ") does not meet it:\n\n"
           << margins_md(plan, fewer);
    }
    return;
  }
  if (answer.contains("groups")) {  // a mix: one fewer of either group
    for (const char* group : {"first", "second"}) {
      const ojson& fewer = answer[std::string("one_fewer_") + group + "_group"];
      if (!fewer.is_null())
        md << "\nOne fewer of the " << group << " group (" << plan_size_text(fewer) << ") does not meet it:\n\n"
           << margins_md(plan, fewer);
    }
    return;
  }
  if (answer["one_fewer"].is_null()) {
    md << "\nOne replica is the smallest fleet.\n";
    return;
  }
  md << "\nOne replica fewer (" << answer["replicas"].get<int64_t>() - 1 << ") does not meet it:\n\n"
     << margins_md(plan, answer["one_fewer"]);
}

void md_tables(std::ostringstream& md, const ojson& plan) {
  md << "\n## Fleet shapes\n\n| shape | status | replicas | cost | runs |\n| --- | --- | ---: | ---: | ---: |\n";
  for (const ojson& o : plan["shapes"])
    md << "| " << o["fleet"].get<std::string>() << " | " << o["status"].get<std::string>() << " | "
       << plan_size_text(o) << " | "
       << (o.contains("cost") ? fmt(o["cost"].get<double>(), 2) : "-") << " | " << o["runs"].get<size_t>() << " |\n";
  md << "\n## Runs (in the order run, per shape)\n\n";
  for (const ojson& r : plan["runs"])
    if (r.contains("stopped")) {
      md << "n/a: a run stopped once an SLO latency term could no longer hold (plan.json's \"stopped\"; "
            "`--full-runs` measures every run).\n\n";
      break;
    }
  md << "| shape | replicas | meets | TTFT p99 ms | TPOT p99 ms | "
        "hit rate % | refused | imbalance |\n| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const ojson& r : plan["runs"])
    md << "| " << r["fleet"].get<std::string>() << " | " << plan_size_text(r) << " | "
       << (r["meets"].get<bool>() ? "yes" : "no") << " | " << fmt(number_or_nan(r, "ttft_p99_ms"), 1) << " | "
       << fmt(number_or_nan(r, "tpot_p99_ms"), 1) << " | "
       << fmt(100 * number_or_nan(r, "hit_rate"), 2) << " | " << fmt(number_or_nan(r, "refused_requests"), 0)
       << " | " << fmt(number_or_nan(r, "imbalance"), 2) << " |\n";
  if (!plan.contains("routers_at_answer")) return;
  md << "\n## Routers at the answer\n\n| router | meets | TTFT p99 ms | hit rate % | imbalance |\n| --- | --- | ---: | "
        "---: | ---: |\n";
  for (const ojson& r : plan["routers_at_answer"])
    md << "| " << r["router"].get<std::string>() << " | " << (r["meets"].get<bool>() ? "yes" : "no") << " | "
       << fmt(number_or_nan(r, "ttft_p99_ms"), 1) << " | " << fmt(100 * number_or_nan(r, "hit_rate"), 2) << " | "
       << fmt(number_or_nan(r, "imbalance"), 2) << " |\n";
}

void md_method(std::ostringstream& md, const ojson& plan) {
  md << "\n## Method\n\nFor each shape: fleets of 1, 2, 4, ... replicas until one meets the SLO, then bisection "
        "between the last that failed and the first that met; the answer and one replica fewer are both run. "
        "Bisection assumes more replicas never break the SLO. Latency nearly obeys that (less load per replica), "
        "though a router's split of sessions can move TTFT p99 a little either way; a hit-rate bound can break "
        "it outright (a prefix-blind router spreads sessions over more caches as the fleet grows).";
  const ojson& violations = plan["monotonicity_violations"];
  if (violations.empty()) {
    md << " No violation was seen among these runs.\n";
    return;
  }
  md << " Violations seen among these runs (the answer may not be the smallest that meets the SLO):\n\n";
  for (const ojson& v : violations) md << "- " << v.get<std::string>() << "\n";
}

// "TTFT p99 12.3 ms, hit rate 45.67 % -> meets" (a split run: TPOT p99 too);
// "stopped after ... -> fails" for a run stopped early.
std::string run_verdict(const ojson& r) {
  if (r.contains("stopped")) return "stopped " + stopped_text(r) + " -> fails";
  const std::string tpot =
      r.contains("prefill_replicas") ? ", TPOT p99 " + fmt(number_or_nan(r, "tpot_p99_ms"), 1) + " ms" : "";
  return "TTFT p99 " + fmt(number_or_nan(r, "ttft_p99_ms"), 1) + " ms" + tpot + ", hit rate " +
         fmt(100 * number_or_nan(r, "hit_rate"), 2) + " % -> " + (r["meets"].get<bool>() ? "meets" : "fails");
}

}  // namespace plan_text_detail


namespace {
template <class Json>
std::string size_text_of(const Json& o) {
  if (o.contains("prefill_replicas"))
    return std::to_string(o["prefill_replicas"].template get<int64_t>()) + "P:" +
           std::to_string(o["decode_replicas"].template get<int64_t>()) + "D";
  if (o.contains("groups") && o["groups"].size() == 2 && o["groups"][0].contains("replicas"))  // a mix: "4+2"
    return std::to_string(o["groups"][0]["replicas"].template get<int64_t>()) + "+" +
           std::to_string(o["groups"][1]["replicas"].template get<int64_t>());
  return o.contains("replicas") ? std::to_string(o["replicas"].template get<int64_t>()) : "-";
}
}  // namespace

std::string plan_size_text(const nlohmann::ordered_json& o) { return size_text_of(o); }
std::string plan_size_text(const nlohmann::json& o) { return size_text_of(o); }

std::string render_plan_md(const nlohmann::ordered_json& plan, const std::string& router) {
  using namespace plan_text_detail;
  std::ostringstream md;
  md_question(md, plan, router);
  md_answer(md, plan);
  md_tables(md, plan);
  md_method(md, plan);
  return md.str();
}

std::string render_plan_terminal(const nlohmann::ordered_json& plan) {
  using namespace plan_text_detail;
  std::string term = "plan: " + plan["summary"].get<std::string>() + "\n";
  const nlohmann::ordered_json& answer = plan["answer"];
  if (!answer.is_null()) {
    term += "  margin:" + margins_inline(plan, answer["run"]) + "\n";
    if (answer.contains("prefill_replicas")) {
      term += "  " + parts_text(answer["run"]) + "\n";
      for (const char* pool : {"prefill", "decode"}) {
        const nlohmann::ordered_json& fewer = answer[std::string("one_fewer_") + pool];
        if (!fewer.is_null())
          term += std::string("  one ") + pool + " fewer (" + plan_size_text(fewer) + "):" + margins_inline(plan, fewer) + "\n";
      }
    } else if (answer.contains("groups")) {
      for (const char* group : {"first", "second"}) {
        const nlohmann::ordered_json& fewer = answer[std::string("one_fewer_") + group + "_group"];
        if (!fewer.is_null())
          term += std::string("  one fewer of the ") + group + " group (" + plan_size_text(fewer) +
                  "):" + margins_inline(plan, fewer) + "\n";
      }
    } else if (!answer["one_fewer"].is_null())
      term += "  one fewer (" + std::to_string(answer["replicas"].get<int64_t>() - 1) +
              " replicas):" + margins_inline(plan, answer["one_fewer"]) + "\n";
  }
  term += "  runs:\n";
  for (const nlohmann::ordered_json& r : plan["runs"])
    term += "    " + r["fleet"].get<std::string>() + " x " + plan_size_text(r) + ": " +
            run_verdict(r) + "\n";
  if (plan.contains("routers_at_answer")) {
    term += "  routers at the answer:\n";
    for (const nlohmann::ordered_json& r : plan["routers_at_answer"]) term += "    " + r["router"].get<std::string>() + ": " + run_verdict(r) + "\n";
  }
  const nlohmann::ordered_json& violations = plan["monotonicity_violations"];
  if (!violations.empty()) {
    term += "  warning: monotonicity violations:";
    for (const nlohmann::ordered_json& v : violations) term += " " + v.get<std::string>() + ";";
    term += "\n";
  }
  return term;
}

}  // namespace prefixsim
