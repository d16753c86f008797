// A trace's identity for `check`: XXH3-128 of its bytes as stored (before
// decompression), so a baseline can tell "the same traffic" from "new
// traffic" without keeping the trace. A folder (kv-cache-tester) hashes its
// regular files' names and bytes in name order; stdin ("-") has none.
#pragma once

#include <string>

namespace prefixsim {

// 32 hex digits, or "" for stdin. InputError when the path cannot be read.
std::string trace_checksum(const std::string& path);

}  // namespace prefixsim
