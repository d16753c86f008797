#include "traces/prefix_reuse.h"

#include <algorithm>

#include "traces/hot_prefixes.h"

namespace prefixsim {

std::vector<PrefixReuse> hot_prefix_reuse(const PreparedTrace& trace, size_t top_k) {
  const uint32_t n = trace.num_keys();
  std::vector<uint32_t> parent(n, kNoKey), depth(n, 0);
  std::vector<uint64_t> reuse(n, 0);
  std::vector<uint8_t> seen(n, 0);
  // The ideal cache's hits, as PrefixAnalyzer counts them: a lookup walks
  // the chain and hits each block that existed before, until the first new
  // one or the lookup's end. Keys are numbered in order of first appearance,
  // like the analyzer's vertices, so ties rank alike.
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto keys = trace.keys_of(i);
    const size_t lookup = trace.lookup_keys(i).size();
    bool run = true;
    for (size_t j = 0; j < keys.size(); ++j) {
      const uint32_t k = keys[j];
      if (!seen[k]) {
        seen[k] = 1;
        parent[k] = j ? keys[j - 1] : kNoKey;
        depth[k] = static_cast<uint32_t>(j);
        run = false;
      } else if (run && j < lookup) {
        ++reuse[k];
      } else {
        run = false;
      }
    }
  }
  const std::vector<RankedPrefix> ranked = rank_hot_prefixes(parent, depth, reuse, trace.block_size, top_k, kNoKey);

  std::vector<PrefixReuse> out;
  std::vector<uint8_t> in_prefix(n, 0);
  std::vector<uint32_t> stamp(n, 0);  // epoch of the last count of each key
  for (const RankedPrefix& hot : ranked) {
    const uint32_t last = hot.vertex;
    PrefixReuse p;
    p.last = trace.key_hashes[last];
    p.blocks = depth[last] + 1;
    p.reuses = reuse[last];
    p.tokens_saved = hot.tokens_saved;
    for (uint32_t k = last; k != kNoKey; k = parent[k]) in_prefix[k] = 1;
    // Between two uses, count the distinct other blocks touched.
    uint32_t epoch = 1;
    uint64_t others = 0;
    bool used = false;
    std::fill(stamp.begin(), stamp.end(), 0);
    for (size_t i = 0; i < trace.size(); ++i) {
      const auto keys = trace.keys_of(i);
      if (keys.size() >= p.blocks && keys[p.blocks - 1] == last) {
        if (used && trace.lookup_keys(i).size() >= p.blocks) p.distances.push_back(p.blocks + others);
        used = true;
        others = 0;
        ++epoch;
        continue;
      }
      for (uint32_t k : keys) {
        if (in_prefix[k] || stamp[k] == epoch) continue;
        stamp[k] = epoch;
        ++others;
      }
    }
    for (uint32_t k = last; k != kNoKey; k = parent[k]) in_prefix[k] = 0;
    if (!p.distances.empty()) {
      std::vector<uint64_t> d = p.distances;
      std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>((d.size() - 1) / 2), d.end());
      p.median_distance = d[(d.size() - 1) / 2];
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace prefixsim
