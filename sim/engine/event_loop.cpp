#include "sim/engine/event_loop.h"

#include <algorithm>
#include <string>
#include <xxhash.h>

#include "sim/base/error.h"

namespace prefixsim {
namespace {

// Heap order: std::push_heap keeps the "largest" on top, so "later" is larger.
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time != b.time) return a.time > b.time;
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.id > b.id;
  }
};

}  // namespace

EventId EventLoop::schedule(TimeNs time, int32_t priority, uint32_t kind, uint64_t payload) {
  if (time < now_)
    throw InternalError("event scheduled in the past: t=" + std::to_string(time) + " < now=" + std::to_string(now_));
  const EventId id = next_id_++;
  const Event e{time, priority, kind, payload, id};
  if (has_front_) {
    if (Later{}(front_, e)) {  // e runs first: the old front is still before the whole heap
      push_heap(front_);
      front_ = e;
    } else {
      push_heap(e);
    }
  } else if (heap_.empty() || Later{}(heap_.front(), e)) {
    front_ = e;
    has_front_ = true;
  } else {
    push_heap(e);
  }
  return id;
}

void EventLoop::push_heap(const Event& e) {
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void EventLoop::cancel(EventId id) {
  if (id >= next_id_) return;
  const bool pending = (has_front_ && front_.id == id) ||
                       std::any_of(heap_.begin(), heap_.end(), [id](const Event& e) { return e.id == id; });
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
  for (;;) {
    Event e;
    if (has_front_) {
      e = front_;
      has_front_ = false;
    } else if (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      e = heap_.back();
      heap_.pop_back();
    } else {
      return false;
    }
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
}

}  // namespace prefixsim
