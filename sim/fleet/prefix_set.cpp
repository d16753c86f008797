#include "sim/fleet/prefix_set.h"

#include <algorithm>

#include "sim/base/error.h"

namespace prefixsim {

PrefixSet::PrefixSet(int32_t max_blocks) : max_blocks_(max_blocks) {
  if (max_blocks < 1) throw InternalError("PrefixSet: max_blocks must be positive");
  capacity_ = std::min<int32_t>(max_blocks, 1024);
  hashes_.resize(static_cast<size_t>(capacity_));
  index_.reset(capacity_, hashes_.data());
  lru_.reset(capacity_);
}

size_t PrefixSet::match(std::span<const BlockHash> prompt) const {
  size_t n = 0;
  while (n < prompt.size() && index_.find(prompt[n]) != kNoBlock) ++n;
  return n;
}

void PrefixSet::grow() {
  // Rebuild at twice the slots, keeping the recency order.
  std::vector<BlockId> order;
  order.reserve(static_cast<size_t>(lru_.size()));
  for (BlockId b = lru_.front(); b != kNoBlock; b = lru_.next(b)) order.push_back(b);
  std::vector<BlockHash> old = std::move(hashes_);
  capacity_ = static_cast<int32_t>(std::min<int64_t>(int64_t{capacity_} * 2, max_blocks_));
  hashes_.assign(static_cast<size_t>(capacity_), BlockHash{});
  index_.reset(capacity_, hashes_.data());
  lru_.reset(capacity_);
  BlockId slot = 0;
  for (BlockId b : order) {
    hashes_[static_cast<size_t>(slot)] = old[static_cast<size_t>(b)];
    index_.insert(slot);
    lru_.push_back(slot);
    ++slot;
  }
  unused_ = slot;
}

void PrefixSet::insert_one(const BlockHash& h) {
  const BlockId found = index_.find(h);
  if (found != kNoBlock) {
    lru_.move_to_back(found);
    return;
  }
  if (unused_ == capacity_ && capacity_ < max_blocks_) grow();
  BlockId slot;
  if (unused_ < capacity_) {
    slot = unused_++;
  } else {
    slot = lru_.pop_front();  // the least recently used hash makes room
    index_.erase(slot);
  }
  hashes_[static_cast<size_t>(slot)] = h;
  index_.insert(slot);
  lru_.push_back(slot);
}

void PrefixSet::insert(std::span<const BlockHash> prompt) {
  for (size_t i = prompt.size(); i-- > 0;) insert_one(prompt[i]);
}

void PrefixSet::insert_root_first(std::span<const BlockHash> prompt) {
  for (const BlockHash& h : prompt) insert_one(h);
}

}  // namespace prefixsim
