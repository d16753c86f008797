// A stream of requests in arrival order, read lazily: memory does not grow
// with the length of the trace. Readers (traces/) and generators
// (workloads/) implement it.
#pragma once

#include <memory>
#include <string>

#include "sim/engine/request.h"

namespace prefixsim {

class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // Fills `out` with the next request; false at the end. Throws InputError
  // ("FILE:LINE: message") on bad data; never skips data silently.
  virtual bool next(Request& out) = 0;
  // What this is, for reports: e.g. "mooncake" or "generator:chatbot".
  virtual std::string format() const = 0;
  // Where it comes from: a path, or a preset name.
  virtual std::string origin() const = 0;
};

}  // namespace prefixsim
