// The discrete-event loop: integer nanoseconds, events ordered by
// (time, priority, sequence) so that equal times resolve the same way on
// every run. Cancellation is lazy: a cancelled event stays in the heap and is
// skipped when it reaches the top. Every processed event is folded into a
// 64-bit fingerprint of (time, priority, kind, payload), in order, so a whole
// run can be pinned by one number in a regression test.
//
// Memory: one heap vector; no allocation per event beyond its growth.
//
// The queue is a FrontHeap (sim/base/front_heap.h): an event scheduled to
// run before everything pending (a replica's next step, scheduled at the
// instant its last one ended, is the common case in a fleet) waits in a slot
// beside the heap instead of being pushed and popped through it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/base/front_heap.h"
#include "sim/base/types.h"

namespace prefixsim {

using EventId = uint64_t;  // the event's sequence number

struct Event {
  TimeNs time = 0;
  int32_t priority = 0;  // lower runs first at equal times
  uint32_t kind = 0;     // what the owner dispatches on
  uint64_t payload = 0;  // owner-defined (a slot, a step number, ...)
  EventId id = 0;        // insertion sequence: the last tie-breaker
};

class EventLoop {
 public:
  TimeNs now() const { return now_; }

  // Schedules an event; `time` must not lie before now().
  EventId schedule(TimeNs time, int32_t priority, uint32_t kind, uint64_t payload);
  // Marks a pending event as cancelled; it is skipped when popped. Cancelling
  // an event already processed or cancelled does nothing.
  void cancel(EventId id);

  // Pops the next live event, advances now() to its time and folds it into
  // the fingerprint. False when no live event is left.
  bool pop(Event& out);

  // Pending events, cancelled ones included until they are popped.
  size_t pending() const { return queue_.size(); }
  uint64_t processed() const { return processed_; }
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  // Queue order: (time, priority, id); "later" comes after.
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.id > b.id;
    }
  };
  bool take_cancelled(EventId id);

  FrontHeap<Event, Later> queue_;
  // Ids cancelled but not yet popped. Cancels are rare (a handful in flight),
  // so a linear scan beats any node-based set and never allocates per event.
  std::vector<EventId> cancelled_;
  TimeNs now_ = 0;
  EventId next_id_ = 0;
  uint64_t processed_ = 0;
  uint64_t fingerprint_ = 0x9e3779b97f4a7c15ULL;
};

}  // namespace prefixsim
