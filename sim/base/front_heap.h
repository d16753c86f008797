// A min-heap with its earliest element held beside it. A queue of what
// comes next mostly takes an element that is due before everything pending
// and pops it at once: the event loop's next step of a replica, scheduled at
// the instant its last one ended; the kv-cache-tester reader's conversation
// of one request, or the turn that follows the one just taken. That element
// waits in the front slot, with no heap push or pop; the rest go through a
// binary heap (std::push_heap / std::pop_heap on a vector).
//
// `After(a, b)`: a comes after b, a strict total order (equal elements would
// make the order of pops depend on which went into the heap). Invariant:
// when the front slot is full, its element comes before every element of the
// heap, so top() and pop() give the same sequence as one heap of them all.
#pragma once

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

namespace prefixsim {

template <typename T, typename After = std::greater<T>>
class FrontHeap {
 public:
  bool empty() const { return !has_front_ && heap_.empty(); }
  size_t size() const { return heap_.size() + (has_front_ ? 1 : 0); }
  const T& top() const { return has_front_ ? front_ : heap_.front(); }
  void push(const T& x) {
    if (has_front_) {
      if (After{}(front_, x)) {  // x comes first: the old front is still before the whole heap
        push_heap(front_);
        front_ = x;
      } else {
        push_heap(x);
      }
    } else if (heap_.empty() || After{}(heap_.front(), x)) {
      front_ = x;
      has_front_ = true;
    } else {
      push_heap(x);
    }
  }
  T pop() {
    if (has_front_) {
      has_front_ = false;
      return front_;
    }
    std::pop_heap(heap_.begin(), heap_.end(), After{});
    T x = std::move(heap_.back());
    heap_.pop_back();
    return x;
  }
  // Whether some pending element satisfies `pred`.
  template <class Pred>
  bool any_of(Pred pred) const {
    return (has_front_ && pred(front_)) || std::any_of(heap_.begin(), heap_.end(), pred);
  }

 private:
  void push_heap(const T& x) {
    heap_.push_back(x);
    std::push_heap(heap_.begin(), heap_.end(), After{});
  }

  std::vector<T> heap_;
  T front_{};  // valid when has_front_: comes before all of heap_
  bool has_front_ = false;
};

}  // namespace prefixsim
