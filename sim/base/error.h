// Errors that reach the user. InputError means bad input or usage (exit 2);
// the message already names file, line and field.
#pragma once

#include <stdexcept>
#include <string>

namespace prefixsim {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& msg) : std::runtime_error(msg) {}
  // "FILE:LINE: message"
  InputError(const std::string& file, long line, const std::string& msg)
      : std::runtime_error(file + ":" + std::to_string(line) + ": " + msg) {}
};

// A broken internal invariant (exit 3).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& msg) : std::logic_error(msg) {}
};

}  // namespace prefixsim
