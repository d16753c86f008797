// Typed access to fields of a parsed JSON line, with errors that name the
// file, the line and the field. Shared by every line-oriented input format
// that is parsed with nlohmann_json (op scripts, step scripts).
#pragma once

#include <cstdint>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/base/error.h"

namespace prefixsim {

class JsonLine {
 public:
  // Parses `text`; throws InputError("FILE:LINE: invalid JSON ...").
  JsonLine(const std::string& file, long line, const std::string& text);

  const nlohmann::json& json() const { return j_; }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  [[noreturn]] void fail(const std::string& msg) const { throw InputError(file_, line_, msg); }
  // "FILE:LINE", for messages about what happened after this line.
  std::string where() const { return file_ + ":" + std::to_string(line_); }

  std::string get_string(const char* key) const;
  int64_t get_int(const char* key, int64_t lo = std::numeric_limits<int64_t>::min(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const;
  bool get_bool(const char* key) const;
  // Token ids: integers in [0, 2^31).
  void get_tokens(const char* key, std::vector<int32_t>& out) const;
  // A JSON object line whose keys must all be in `allowed`.
  void reject_unknown_keys(std::initializer_list<const char*> allowed) const;

 private:
  const nlohmann::json& field(const char* key) const;
  std::string file_;
  long line_;
  nlohmann::json j_;
};

// Hands every non-blank line of a JSON-lines script to on_line(const
// JsonLine&), in order, numbered from 1 (so errors name the line); an error
// thrown by on_line stops the script. Throws InputError on a read error.
template <class OnLine>
void for_each_json_line(std::istream& in, const std::string& file, OnLine&& on_line) {
  std::string text;
  long lineno = 0;
  while (std::getline(in, text)) {
    ++lineno;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    on_line(JsonLine(file, lineno, text));
  }
  if (in.bad()) throw InputError(file + ": read error");
}

}  // namespace prefixsim
