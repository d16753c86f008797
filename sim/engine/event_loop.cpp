#include "sim/engine/event_loop.h"

#include <algorithm>
#include <string>
#include <xxhash.h>

#include "sim/base/error.h"

namespace prefixsim {

EventId EventLoop::schedule(TimeNs time, int32_t priority, uint32_t kind, uint64_t payload) {
  if (time < now_)
    throw InternalError("event scheduled in the past: t=" + std::to_string(time) + " < now=" + std::to_string(now_));
  const EventId id = next_id_++;
  queue_.push({time, priority, kind, payload, id});
  return id;
}

void EventLoop::cancel(EventId id) {
  if (id >= next_id_) return;
  const bool pending = queue_.any_of([id](const Event& e) { return e.id == id; });
  if (pending && std::find(cancelled_.begin(), cancelled_.end(), id) == cancelled_.end()) cancelled_.push_back(id);
}

bool EventLoop::take_cancelled(EventId id) {
  auto it = std::find(cancelled_.begin(), cancelled_.end(), id);
  if (it == cancelled_.end()) return false;
  *it = cancelled_.back();
  cancelled_.pop_back();
  return true;
}

bool EventLoop::pop(Event& out) {
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    if (!cancelled_.empty() && take_cancelled(e.id)) continue;
    now_ = e.time;
    ++processed_;
    // The id is left out: it only breaks ties, and the order already says it.
    const uint64_t words[4] = {static_cast<uint64_t>(e.time), static_cast<uint64_t>(static_cast<uint32_t>(e.priority)),
                               e.kind, e.payload};
    fingerprint_ = XXH3_64bits_withSeed(words, sizeof words, fingerprint_);
    out = e;
    return true;
  }
  return false;
}

}  // namespace prefixsim
