#include "traces/read_ahead.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstring>

namespace prefixsim {

ReadAheadStream::ReadAheadStream(std::unique_ptr<ByteStream> in)
    : in_(std::move(in)), compression_(in_->compression()), name_(in_->name()) {
  for (Slot& s : slots_) s.data.resize(kBlock);
  worker_ = std::thread([this] { produce(); });
}

ReadAheadStream::~ReadAheadStream() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

bool ReadAheadStream::fill(Slot& s) {
  s.len = 0;
  while (s.len < kBlock) {
    const size_t got = in_->read(s.data.data() + s.len, kBlock - s.len);
    if (got == 0) return false;
    s.len += got;
  }
  return true;
}

void ReadAheadStream::produce() {
  // Signals (Ctrl-C) go to the reader's thread, where the run checks them.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    Slot* s;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || produced_ - consumed_ < kSlots; });
      if (stop_) return;
      s = &slots_[produced_ % kSlots];
    }
    bool more = false;
    std::exception_ptr error;
    try {
      more = fill(*s);
    } catch (...) {
      error = std::current_exception();  // the bytes before it still go out first
    }
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (s->len > 0) ++produced_;
      if (!more) done_ = true, error_ = error;
    }
    cv_.notify_all();
    if (!more) return;
  }
}

size_t ReadAheadStream::read(char* buf, size_t n) {
  for (;;) {
    if (cur_ && pos_ < cur_->len) {
      const size_t k = std::min(n, cur_->len - pos_);
      std::memcpy(buf, cur_->data.data() + pos_, k);
      pos_ += k;
      return k;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (cur_) {  // the block is read: its slot is the worker's again
      cur_ = nullptr;
      ++consumed_;
      cv_.notify_all();
    }
    cv_.wait(lock, [this] { return produced_ > consumed_ || done_; });
    if (produced_ > consumed_) {
      cur_ = &slots_[consumed_ % kSlots];
      pos_ = 0;
      continue;
    }
    if (error_) std::rethrow_exception(error_);
    return 0;
  }
}

}  // namespace prefixsim
