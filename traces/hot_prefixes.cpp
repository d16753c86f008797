#include "traces/hot_prefixes.h"

#include <algorithm>
#include <queue>

namespace prefixsim {

std::vector<RankedPrefix> rank_hot_prefixes(std::span<const uint32_t> parent, std::span<const uint32_t> depth,
                                            std::span<const uint64_t> reuse, int64_t block_size, size_t top_k,
                                            uint32_t none) {
  const size_t n = reuse.size();
  // Covered: a child is reused as often, so this prefix is not maximal.
  std::vector<uint8_t> covered(n, 0);
  for (size_t v = 0; v < n; ++v)
    if (reuse[v] > 0 && parent[v] != none && reuse[parent[v]] == reuse[v]) covered[parent[v]] = 1;
  // Hotter first: more tokens saved, then the lower vertex (a strict total
  // order, so the top k are one set however they are found).
  const auto hotter = [](const RankedPrefix& x, const RankedPrefix& y) {
    return x.tokens_saved != y.tokens_saved ? x.tokens_saved > y.tokens_saved : x.vertex < y.vertex;
  };
  // A heap whose top is the coldest kept: bounded memory on any trace.
  std::priority_queue<RankedPrefix, std::vector<RankedPrefix>, decltype(hotter)> kept(hotter);
  for (size_t v = 0; v < n; ++v) {
    if (reuse[v] == 0 || covered[v] || top_k == 0) continue;
    const RankedPrefix p{static_cast<int64_t>(reuse[v]) * (depth[v] + 1) * block_size, static_cast<uint32_t>(v)};
    if (kept.size() < top_k) {
      kept.push(p);
    } else if (hotter(p, kept.top())) {
      kept.pop();
      kept.push(p);
    }
  }
  std::vector<RankedPrefix> out;
  out.reserve(kept.size());
  for (; !kept.empty(); kept.pop()) out.push_back(kept.top());
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace prefixsim
