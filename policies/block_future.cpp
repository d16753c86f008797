#include "policies/block_future.h"

namespace prefixsim {

std::shared_ptr<const BlockFuture> BlockFuture::build(
    size_t num_requests, const std::function<std::span<const BlockHash>(size_t)>& lookup_hashes) {
  auto f = std::make_shared<BlockFuture>();
  // Pass 1: dense ids and use counts. Pass 2: fill the CSR in request order,
  // so each hash's uses come out ascending.
  std::vector<uint32_t> counts;
  for (size_t i = 0; i < num_requests; ++i) {
    for (const BlockHash& h : lookup_hashes(i)) {
      auto [it, fresh] = f->ids_.try_emplace(h, static_cast<uint32_t>(counts.size()));
      if (fresh) counts.push_back(0);
      ++counts[it->second];
    }
  }
  f->offsets_.assign(counts.size() + 1, 0);
  for (size_t id = 0; id < counts.size(); ++id) f->offsets_[id + 1] = f->offsets_[id] + counts[id];
  f->uses_.assign(f->offsets_.back(), 0);
  std::vector<uint64_t> fill(f->offsets_.begin(), f->offsets_.end() - 1);
  for (size_t i = 0; i < num_requests; ++i) {
    for (const BlockHash& h : lookup_hashes(i)) {
      const uint32_t id = f->ids_.find(h)->second;
      f->uses_[fill[id]++] = static_cast<uint32_t>(i);
    }
  }
  return f;
}

}  // namespace prefixsim
