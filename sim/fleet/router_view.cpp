#include "sim/fleet/router_view.h"

namespace prefixsim {

void LaggedCacheIndex::on_pool_cached(const BlockHash& h, uint32_t key) {
  pending_.push_back({loop_.now() + lag_, h, true});
  if (next_) next_->on_pool_cached(h, key);
}

void LaggedCacheIndex::on_pool_evicted(const BlockHash& h, uint32_t key) {
  pending_.push_back({loop_.now() + lag_, h, false});
  if (next_) next_->on_pool_evicted(h, key);
}

void LaggedCacheIndex::deliver(TimeNs now) {
  // Events were recorded in time order with one lag, so delivery keeps it.
  while (!pending_.empty() && pending_.front().at <= now) {
    const Event& e = pending_.front();
    if (e.stored) {
      ++held_[e.hash];
    } else {
      auto it = held_.find(e.hash);
      if (it != held_.end() && --it->second <= 0) held_.erase(it);
    }
    pending_.pop_front();
  }
}

size_t LaggedCacheIndex::leading(std::span<const BlockHash> prompt, TimeNs now) {
  deliver(now);
  size_t n = 0;
  while (n < prompt.size() && held_.count(prompt[n])) ++n;
  return n;
}

}  // namespace prefixsim
