// A min-heap with its earliest element held beside it. Merges of sorted
// streams (the kv-cache-tester reader's live conversations, each with its
// next request) mostly push an element that is due before everything
// pending and pop it at once: a conversation of one request, a turn that
// follows the one just taken. That element waits in the front slot, with no
// heap push or pop; the rest go through std::priority_queue.
//
// Invariant: when the front slot is full, its element is less than every
// element of the heap (T's operator>, a strict total order: equal elements
// would make the order of pops depend on which went into the heap), so top()
// and pop() give the same sequence as one std::priority_queue of them all.
#pragma once

#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace prefixsim {

template <typename T>
class FrontHeap {
 public:
  bool empty() const { return !has_front_ && heap_.empty(); }
  size_t size() const { return heap_.size() + (has_front_ ? 1 : 0); }
  const T& top() const { return has_front_ ? front_ : heap_.top(); }
  void push(T x) {
    if (has_front_) {
      if (front_ > x) std::swap(front_, x);  // x is the earliest now: the old front goes to the heap
      heap_.push(std::move(x));
    } else if (heap_.empty() || heap_.top() > x) {
      front_ = std::move(x);
      has_front_ = true;
    } else {
      heap_.push(std::move(x));
    }
  }
  T pop() {
    if (has_front_) {
      has_front_ = false;
      return std::move(front_);
    }
    T x = heap_.top();
    heap_.pop();
    return x;
  }

 private:
  bool has_front_ = false;
  T front_{};
  std::priority_queue<T, std::vector<T>, std::greater<T>> heap_;
};

}  // namespace prefixsim
