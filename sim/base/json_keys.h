// nlohmann_json keeps the last of a key given twice in one object, silently:
// a profile with two `overhead_s` would quietly use the second. Documents
// read whole (profiles, step models) are parsed with this guard instead.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prefixsim {

// A parser callback for nlohmann::json::parse that throws InputError
// "FILE:LINE: field 'a.b' given twice" at a key repeated in one object (keys
// inside arrays' objects name the array: 'runs.x'). The line is that of the
// repeat, found in `text`, which is the parsed text and must outlive the
// parse. It keeps every value: the parsed document is unchanged.
nlohmann::json::parser_callback_t refuse_duplicate_json_keys(const std::string& text, const std::string& file);

}  // namespace prefixsim
