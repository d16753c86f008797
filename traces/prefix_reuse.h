// Why a policy keeps or loses a hot prefix: the hottest shared prefixes of
// a prepared trace (the same ones `prefixsim analyze` lists, ranked by
// traces/hot_prefixes.h) and their reuse distance in blocks:
// from one use of the prefix to the next, the distinct blocks touched, its
// own included. That is the LRU stack distance of its deepest block plus
// one, the analyzer's convention: a request's blocks become most recent
// last to first, so the blocks it computes after the prefix are older than
// the prefix and do not count. An LRU cache of C usable blocks keeps the
// prefix across a reuse when C >= the distance; a ghost list of G hashes
// can at least recognise its return when C + G >= the distance.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/cache_replay.h"

namespace prefixsim {

struct PrefixReuse {
  BlockHash last;                   // hash of the prefix's last block
  uint32_t blocks = 0;              // its length in blocks
  uint64_t reuses = 0;              // lookups that hit all of it, with an unbounded cache
  int64_t tokens_saved = 0;         // reuses x blocks x B: the rank
  std::vector<uint64_t> distances;  // reuse distance (blocks) at each reuse, in trace order
  uint64_t median_distance = 0;     // the lower middle one
};

std::vector<PrefixReuse> hot_prefix_reuse(const PreparedTrace& trace, size_t top_k);

}  // namespace prefixsim
