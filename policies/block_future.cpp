#include "policies/block_future.h"

#include "sim/base/error.h"

namespace prefixsim {

std::shared_ptr<const BlockFuture> BlockFuture::build(
    uint32_t num_keys, size_t num_requests, const std::function<std::span<const uint32_t>(size_t)>& lookup_keys) {
  auto f = std::make_shared<BlockFuture>();
  f->num_requests_ = num_requests;
  // Pass 1: use counts. Pass 2: fill the CSR in request order, so each
  // key's uses come out ascending.
  std::vector<uint64_t> counts(num_keys, 0);
  for (size_t i = 0; i < num_requests; ++i)
    for (uint32_t k : lookup_keys(i)) {
      if (k >= num_keys) throw InternalError("block future: key " + std::to_string(k) + " out of range");
      ++counts[k];
    }
  f->offsets_.assign(static_cast<size_t>(num_keys) + 1, 0);
  for (uint32_t k = 0; k < num_keys; ++k) f->offsets_[k + 1] = f->offsets_[k] + counts[k];
  f->uses_.assign(f->offsets_.back(), 0);
  std::vector<uint64_t> fill(f->offsets_.begin(), f->offsets_.end() - 1);
  for (size_t i = 0; i < num_requests; ++i)
    for (uint32_t k : lookup_keys(i)) f->uses_[fill[k]++] = static_cast<uint32_t>(i);
  return f;
}

}  // namespace prefixsim
