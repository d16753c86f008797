// "name" or "name:key=value,key=value" specs, as --policy and --router take
// them: the parser and typed getters that reject bad values and report keys
// nobody asked for. Errors name the flag and the spec's name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace prefixsim {

struct ParsedSpec {
  std::string name;
  std::map<std::string, std::string> params;
};

// Splits a spec; InputError (naming `flag`) on a malformed parameter list.
ParsedSpec parse_spec(std::string_view spec, const std::string& flag);

class SpecParams {
 public:
  SpecParams() = default;
  // `owner` names the spec in errors: "--policy lfu", "--router prefix".
  SpecParams(std::string owner, std::map<std::string, std::string> kv);
  double get_double(const std::string& key, double fallback);
  int64_t get_int(const std::string& key, int64_t fallback);
  bool get_bool(const std::string& key, bool fallback);
  std::string get_string(const std::string& key, const std::string& fallback);
  // A number that must lie in [lo, hi].
  double get_double_in(const std::string& key, double fallback, double lo, double hi);
  // Throws InputError naming the first key no getter consumed.
  void reject_unused() const;
  const std::map<std::string, std::string>& values() const { return kv_; }
  const std::string& owner() const { return owner_; }

 private:
  template <typename T>
  T get_number(const std::string& key, T fallback, const char* what);
  std::string owner_;
  std::map<std::string, std::string> kv_;
  std::map<std::string, bool> used_;
};

}  // namespace prefixsim
