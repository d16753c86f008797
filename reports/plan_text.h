// plan's text documents beside its page (render_plan_html, outputs.h): the
// Markdown file and the terminal summary, both from plan.json (schema
// prefixsim.plan/1, built by sim/study/plan_run.h). Pure functions: the same
// document gives the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace prefixsim {

// plan.md: the question (trace, model, GPU, policy, `router`: plan.json's
// scenario echoes a router only for a fleet), the answer with its margin and
// one replica fewer, the shapes, every run, the routers at the answer, and
// the method with any monotonicity violation seen.
std::string render_plan_md(const nlohmann::ordered_json& plan, const std::string& router);
// The terminal's lines: the answer, its margins, the runs, the routers at
// the answer and a warning for each violation.
std::string render_plan_terminal(const nlohmann::ordered_json& plan);
// A fleet's size as the documents print it: "16", or "12P:4D" for a split
// fleet (a run's row, a shape or the answer; "-" where it has none).
std::string plan_size_text(const nlohmann::ordered_json& fleet);
std::string plan_size_text(const nlohmann::json& fleet);  // plan.html's rows

}  // namespace prefixsim
