// The future of a trace, for the offline policy (belady): for every block
// key (a distinct hash of an interned PreparedTrace) the ordered list of the
// requests (by their 0-based position in the replay) that look it up. Built
// once by a pre-pass over the trace and shared read-only by every replay of
// it (threads included). Indexed by key, so a policy finds a block's future
// with one load (CachedBlockInfo::key) instead of a hash-table probe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "sim/base/types.h"

namespace prefixsim {

class BlockFuture {
 public:
  static constexpr uint32_t kNever = UINT32_MAX;

  // lookup_keys(i): the keys request i's prefix lookup may hit, in order;
  // every key is below num_keys.
  static std::shared_ptr<const BlockFuture> build(
      uint32_t num_keys, size_t num_requests, const std::function<std::span<const uint32_t>(size_t)>& lookup_keys);

  // Requests that look up this key, ascending (empty for an unknown key).
  std::span<const uint32_t> uses(uint32_t key) const {
    if (key >= num_keys()) return {};
    return {uses_.data() + offsets_[key], uses_.data() + offsets_[key + 1]};
  }
  size_t num_requests() const { return num_requests_; }
  uint32_t num_keys() const { return offsets_.empty() ? 0 : static_cast<uint32_t>(offsets_.size() - 1); }

 private:
  std::vector<uint64_t> offsets_;  // CSR: uses of key k are uses_[offsets_[k] .. offsets_[k+1])
  std::vector<uint32_t> uses_;
  size_t num_requests_ = 0;
};

}  // namespace prefixsim
