#include "sim/base/json_keys.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "sim/base/error.h"

namespace prefixsim {

namespace {

using Event = nlohmann::json::parse_event_t;

class DuplicateKeys {
 public:
  DuplicateKeys(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  void on(Event e, const nlohmann::json& parsed) {
    if (e == Event::object_start || e == Event::array_start) levels_.push_back({e == Event::object_start, "", {}});
    if (e == Event::object_end || e == Event::array_end) levels_.pop_back();
    if (e == Event::key) on_key(parsed.get<std::string>());
  }

 private:
  struct Level {
    bool object;
    std::string key;  // the last key read at this level
    std::set<std::string> keys;
  };

  void on_key(const std::string& key) {
    const int nth = ++occurrences_[key];
    Level& here = levels_.back();
    here.key = key;
    if (here.keys.insert(key).second) return;
    std::string path;
    for (const Level& l : levels_)
      if (l.object) path += (path.empty() ? "" : ".") + l.key;
    throw InputError(file_, line_of_key(key, nth), "field '" + path + "' given twice");
  }

  // Key events come in text order, so the repeat is the nth `"key":` of the
  // text (one not preceded by a backslash: that one is inside a string).
  // A key spelt with escapes is not found: line 1 then.
  long line_of_key(const std::string& key, int nth) const {
    const std::string quoted = "\"" + key + "\"";
    for (size_t at = text_.find(quoted); at != std::string::npos; at = text_.find(quoted, at + 1)) {
      if (at > 0 && text_[at - 1] == '\\') continue;
      const size_t colon = text_.find_first_not_of(" \t\r\n", at + quoted.size());
      if (colon == std::string::npos || text_[colon] != ':' || --nth > 0) continue;
      return 1 + std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    }
    return 1;
  }

  const std::string& text_;
  const std::string file_;
  std::vector<Level> levels_;            // the open objects and arrays, outermost first
  std::map<std::string, int> occurrences_;  // how often each key name was read so far
};

}  // namespace

nlohmann::json::parser_callback_t refuse_duplicate_json_keys(const std::string& text, const std::string& file) {
  auto state = std::make_shared<DuplicateKeys>(text, file);
  return [state](int, Event e, nlohmann::json& parsed) {
    state->on(e, parsed);
    return true;
  };
}

}  // namespace prefixsim
