// SplitMix64's finaliser (Steele, Lea, Flood, OOPSLA 2014): a bijection of
// 64-bit words in which every output bit depends on every input bit. The
// one cheap mixer the simulator uses wherever a full hash would be too slow
// (synthetic output tokens, identity sub-blocks, sketch indices, seeds).
#pragma once

#include <cstdint>

namespace prefixsim {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace prefixsim
