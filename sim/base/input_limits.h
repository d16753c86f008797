// Bounds on what one input may make prefixsim hold or read, so a hostile
// file (/dev/zero, a compression bomb, a tar header claiming a terabyte)
// ends with exit 2 naming the file instead of exhausting memory. One set per
// process, set from the command line (--max-line-bytes, --max-input-bytes)
// before any input is opened; every reader consults it.
#pragma once

#include <cstdint>
#include <string>

namespace prefixsim {

struct InputLimits {
  // Longest line of a JSONL input (a line is held whole to be parsed).
  uint64_t max_line_bytes = uint64_t{256} << 20;  // 256 MiB
  // Most bytes one input may yield after decompression (a trace file, a tar
  // archive's members together, a YAML/JSON/CSV file read whole).
  uint64_t max_input_bytes = uint64_t{64} << 30;  // 64 GiB
};

InputLimits& input_limits();

// The text of a byte count in messages: "268435456 bytes (256 MiB)".
std::string bytes_text(uint64_t n);

}  // namespace prefixsim
