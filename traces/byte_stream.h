// Bytes of a trace file, decompressed on the fly. gzip and zstd are detected
// by their magic bytes, so a compressed trace needs no flag and no temporary
// file; decompression streams through fixed-size buffers (memory does not
// depend on the file's size).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace prefixsim {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to n bytes into buf; 0 at the end. Throws InputError (naming
  // the file) on a read or decompression error.
  virtual size_t read(char* buf, size_t n) = 0;
  // "gzip", "zstd" or "" (plain).
  virtual std::string_view compression() const { return {}; }
  // The file, for messages ("" when unknown).
  virtual std::string name() const { return {}; }
};

// A stream whose first bytes can be looked at before they are read (format
// and compression detection without seeking: stdin cannot seek).
class PeekStream : public ByteStream {
 public:
  explicit PeekStream(std::unique_ptr<ByteStream> in) : in_(std::move(in)) {}
  // Up to n first bytes (fewer for a shorter stream). Only before read().
  std::string_view peek(size_t n);
  size_t read(char* buf, size_t n) override;
  std::string_view compression() const override { return in_->compression(); }
  std::string name() const override { return in_->name(); }

 private:
  std::unique_ptr<ByteStream> in_;
  std::string peeked_;
  size_t pos_ = 0;
};

// The bytes of `path` ("-" = stdin), as stored. Throws InputError
// ("FILE:1: cannot open trace: ...") when it cannot be opened. Plain and
// decompressed streams alike end with InputError past
// input_limits().max_input_bytes (sim/base/input_limits.h).
std::unique_ptr<PeekStream> open_raw(const std::string& path);
// `raw` decompressed when its magic bytes say gzip or zstd, else `raw`.
std::unique_ptr<PeekStream> decompressed(std::unique_ptr<PeekStream> raw, const std::string& path);
// open_raw + decompressed.
std::unique_ptr<PeekStream> open_byte_stream(const std::string& path);

// Splits a byte stream into lines without copying each one. A line view
// stays valid until the next call to next(), and is followed in memory by at
// least `padding` readable bytes (what simdjson needs to parse in place).
// Memory: one buffer as large as the longest line (at least 1 MiB); a line
// longer than input_limits().max_line_bytes is an InputError naming the
// file and line.
class LineReader {
 public:
  LineReader(std::unique_ptr<ByteStream> in, size_t padding);
  // The next line without its '\n' (and '\r'); false at the end of input.
  bool next(std::string_view& line);
  // The bytes not yet returned as lines, raw (to hand the rest of a stream
  // to a parser that is not line-oriented); 0 at the end.
  size_t read_rest(char* buf, size_t n);
  // Makes the next call to next() return the last line again.
  void unread();
  // 1-based number of the line last returned.
  long line_number() const { return line_no_; }
  // Whether the last line returned had no terminating newline (end of file).
  bool last_line_unterminated() const { return unterminated_; }

 private:
  bool fill();  // moves the unread tail to the front and reads more
  void check_length(size_t len) const;  // InputError past --max-line-bytes

  std::unique_ptr<ByteStream> in_;
  size_t padding_;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;    // usable bytes (buf_ holds cap_ + padding_)
  size_t begin_ = 0;  // first unread byte
  size_t last_ = 0;   // start of the line last returned
  size_t end_ = 0;    // one past the last valid byte
  bool eof_ = false;
  bool unterminated_ = false;
  long line_no_ = 0;
};

}  // namespace prefixsim
