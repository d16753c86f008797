// The future of a trace, for the offline policy (belady): for every block
// hash that some request will look up, the ordered list of the requests
// (by their 0-based position in the replay) that look it up. Built once by
// a pre-pass over the trace and shared read-only by every replay of it
// (threads included).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/types.h"

namespace prefixsim {

class BlockFuture {
 public:
  static constexpr uint32_t kNoId = UINT32_MAX;
  static constexpr uint32_t kNever = UINT32_MAX;

  // lookup_hashes(i): the hashes request i's prefix lookup may hit, in order.
  static std::shared_ptr<const BlockFuture> build(
      size_t num_requests, const std::function<std::span<const BlockHash>(size_t)>& lookup_hashes);

  // Dense id of a hash that is ever looked up, else kNoId.
  uint32_t id_of(const BlockHash& h) const {
    auto it = ids_.find(h);
    return it == ids_.end() ? kNoId : it->second;
  }
  // Requests that look up the hash with this id, ascending.
  std::span<const uint32_t> uses(uint32_t id) const {
    return {uses_.data() + offsets_[id], uses_.data() + offsets_[id + 1]};
  }
  size_t num_ids() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }

 private:
  std::unordered_map<BlockHash, uint32_t, BlockHashHasher> ids_;
  std::vector<uint64_t> offsets_;  // CSR: uses of id i are uses_[offsets_[i] .. offsets_[i+1])
  std::vector<uint32_t> uses_;
};

}  // namespace prefixsim
