// Basic identifiers shared by every room.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>

namespace prefixsim {

using BlockId = int32_t;           // index into the block pool; 0 is the null block
inline constexpr BlockId kNoBlock = -1;

// Dense number of a distinct block hash in an interned trace (PreparedTrace).
inline constexpr uint32_t kNoKey = UINT32_MAX;

using TimeNs = int64_t;            // simulated time, integer nanoseconds

// A 128-bit block hash (XXH3-128). 64 bits collide with real probability on
// billion-block traces, so the chain keeps all 128.
struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const noexcept { return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ULL)); }
};

}  // namespace prefixsim
