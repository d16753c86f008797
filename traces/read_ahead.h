// Decompression on its own thread: a compressed trace's inflate (gzip) or
// decode (zstd) runs ahead of the parser in fixed blocks, so on two cores a
// read takes about the slower of the two instead of their sum. The bytes are
// the inner stream's, in order; an error the inner stream throws reaches the
// reader after every byte produced before it, as it would without the thread.
//
// Only for a file (not stdin): the reader's destructor stops the worker and
// waits for it, which a read blocked on a pipe could hold up indefinitely.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "traces/byte_stream.h"

namespace prefixsim {

class ReadAheadStream final : public ByteStream {
 public:
  static constexpr size_t kBlock = size_t{1} << 18;
  static constexpr size_t kSlots = 8;  // blocks decoded ahead at most

  explicit ReadAheadStream(std::unique_ptr<ByteStream> in);
  ~ReadAheadStream() override;
  ReadAheadStream(const ReadAheadStream&) = delete;
  ReadAheadStream& operator=(const ReadAheadStream&) = delete;

  size_t read(char* buf, size_t n) override;
  std::string_view compression() const override { return compression_; }
  std::string name() const override { return name_; }

 private:
  struct Slot {
    std::vector<char> data;
    size_t len = 0;
  };
  void produce();
  bool fill(Slot& s);  // false at the end of the inner stream

  std::unique_ptr<ByteStream> in_;
  std::string_view compression_;
  std::string name_;
  std::array<Slot, kSlots> slots_;
  // Shared with the worker, under mu_: blocks produced and consumed so far
  // (slot i % kSlots), the end, the worker's error, the stop request.
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t produced_ = 0, consumed_ = 0;
  bool done_ = false, stop_ = false;
  std::exception_ptr error_;
  // The reader's own: the block it is reading and how far.
  const Slot* cur_ = nullptr;
  size_t pos_ = 0;
  std::thread worker_;  // last: starts once everything above exists
};

}  // namespace prefixsim
