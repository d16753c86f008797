// The hottest shared prefixes of a prefix forest: the one ranking that
// `prefixsim analyze` lists (traces/analysis.h) and `compare` explains
// (traces/prefix_reuse.h). A prefix is maximal when no child is reused as
// often (a longer prefix would save more on the same uses); maximal
// prefixes rank by the tokens an unbounded cache saves on them, reuses x
// blocks x block size, ties to the lower vertex. Both callers number
// vertices in order of first appearance, so they rank ties alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace prefixsim {

struct RankedPrefix {
  int64_t tokens_saved = 0;
  uint32_t vertex = 0;  // the prefix's last block
};

// parent[v] (`none` for a root), depth[v] (0 for a root) and reuse[v] (the
// lookups that hit v, with an unbounded cache) by vertex: the top_k
// maximal prefixes, hottest first. Memory: top_k entries beside a byte per
// vertex.
std::vector<RankedPrefix> rank_hot_prefixes(std::span<const uint32_t> parent, std::span<const uint32_t> depth,
                                            std::span<const uint64_t> reuse, int64_t block_size, size_t top_k,
                                            uint32_t none);

}  // namespace prefixsim
