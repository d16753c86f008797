#include "sim/base/input_limits.h"

namespace prefixsim {

InputLimits& input_limits() {
  static InputLimits limits;
  return limits;
}

std::string bytes_text(uint64_t n) {
  std::string s = std::to_string(n) + " bytes";
  if (n >= (uint64_t{1} << 30) && n % (uint64_t{1} << 30) == 0) s += " (" + std::to_string(n >> 30) + " GiB)";
  else if (n >= (uint64_t{1} << 20) && n % (uint64_t{1} << 20) == 0) s += " (" + std::to_string(n >> 20) + " MiB)";
  return s;
}

}  // namespace prefixsim
