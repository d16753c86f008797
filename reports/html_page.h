// The frame every HTML page shares (report, compare, sweep, plan): the head
// with the style, the error capture, Chart.js inlined and the self-check;
// the tail with the page's data as JSON and its drawing code. Internal to
// reports/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace prefixsim {

std::string html_escape(std::string_view s);
std::string page_head(const std::string& title);
// `draw_js` sees the data as D, a COLORS palette, and pushes every chart
// it makes onto `charts` (the self-check counts them).
std::string page_tail(const nlohmann::json& data, const std::string& draw_js);

}  // namespace prefixsim
