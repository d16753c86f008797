// The documents of `prefixsim validate` and `prefixsim calibrate`, from the
// validate JSON (sim/study/validate.h): validate.md (the summary table, then
// each run worst first), validate.html (predicted against measured, one point
// per run and metric, and the same tables), and the terminal summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace prefixsim {

std::string render_validate_md(const nlohmann::ordered_json& doc, const std::string& title);
std::string render_validate_html(const nlohmann::ordered_json& doc, const std::string& title);
// A few lines: runs, median and worst |error| of the means, the worst run.
std::string render_validate_terminal(const nlohmann::ordered_json& doc);

}  // namespace prefixsim
