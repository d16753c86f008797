#include "traces/byte_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <isa-l/igzip_lib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sim/base/error.h"
#include "sim/base/input_limits.h"
#include "sim/base/interrupt.h"
#include "traces/read_ahead.h"

namespace prefixsim {
namespace {

constexpr size_t kChunk = 1 << 18;  // compressed input read per call

// Counts the bytes a stream yields against --max-input-bytes (a compression
// bomb, or /dev/zero, stops here instead of filling memory or disk).
void count_input(uint64_t& total, size_t got, const std::string& path) {
  total += got;
  if (total > input_limits().max_input_bytes)
    throw InputError(path + ": input larger than " + bytes_text(input_limits().max_input_bytes) +
                     " (after decompression; raise --max-input-bytes to read it)");
}

// A file descriptor ("-" = stdin).
class RawFile : public ByteStream {
 public:
  explicit RawFile(const std::string& path) : path_(path) {
    if (path == "-") {
      fd_ = 0;
    } else {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw InputError(path, 1, std::string("cannot open trace: ") + std::strerror(errno));
    }
  }
  ~RawFile() override {
    if (fd_ > 0) ::close(fd_);
  }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;

  size_t read(char* buf, size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, buf, n);
      if (got >= 0) {
        count_input(total_, static_cast<size_t>(got), path_);
        return static_cast<size_t>(got);
      }
      // A graceful Ctrl-C (sim/base/interrupt.h) interrupts a read blocked
      // on a pipe; only that stops the wait, any other signal retries.
      if (errno == EINTR) {
        throw_if_interrupted();
        continue;
      }
      // EISDIR lands here too: a directory is not a JSONL trace.
      throw InputError(path_, 1, std::string("cannot read trace: ") + std::strerror(errno));
    }
  }
  std::string name() const override { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t total_ = 0;
};

// gzip through ISA-L's inflate (igzip: ~3x zlib's speed on x86-64, the same
// bytes), header, CRC-32 and length checked; concatenated members are read
// one after another as gzip(1) does.
class GzipStream : public ByteStream {
 public:
  GzipStream(std::unique_ptr<ByteStream> in, std::string path) : in_(std::move(in)), path_(std::move(path)), inbuf_(kChunk) {
    start_member();
  }
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;
  std::string_view compression() const override { return "gzip"; }

  size_t read(char* buf, size_t n) override {
    const auto want = static_cast<uint32_t>(std::min<size_t>(n, 1u << 30));
    z_.next_out = reinterpret_cast<uint8_t*>(buf);
    z_.avail_out = want;
    while (z_.avail_out == want) {  // until some output, or the end
      if (z_.avail_in == 0) {
        const size_t got = in_->read(inbuf_.data(), inbuf_.size());
        if (got == 0) {
          if (!member_done_) throw InputError(path_, 1, "truncated gzip stream");
          break;
        }
        z_.next_in = reinterpret_cast<uint8_t*>(inbuf_.data());
        z_.avail_in = static_cast<uint32_t>(got);
      }
      if (member_done_) {  // another gzip member follows (concatenated .gz)
        uint8_t* const next_in = z_.next_in;
        const uint32_t avail_in = z_.avail_in;
        start_member();  // keeps the output position
        z_.next_in = next_in, z_.avail_in = avail_in;
      }
      const int rc = isal_inflate(&z_);
      // Negative: corrupt data; ISAL_NEED_DICT: a zlib stream with a preset
      // dictionary, which gzip never has.
      if (rc < 0 || rc == ISAL_NEED_DICT) throw InputError(path_, 1, std::string("corrupt gzip stream: ") + isal_error(rc));
      member_done_ = z_.block_state == ISAL_BLOCK_FINISH;
    }
    const auto got = static_cast<size_t>(reinterpret_cast<char*>(z_.next_out) - buf);
    count_input(total_, got, path_);
    return got;
  }
  std::string name() const override { return path_; }

 private:
  void start_member() {
    uint8_t* const next_out = z_.next_out;
    const uint32_t avail_out = z_.avail_out;
    isal_inflate_init(&z_);
    z_.crc_flag = ISAL_GZIP;  // parse the gzip header, check the CRC-32 and length trailer
    z_.next_out = next_out, z_.avail_out = avail_out;
    member_done_ = false;
  }
  static const char* isal_error(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK: return "invalid deflate block";
      case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
      case ISAL_INVALID_WRAPPER: return "incorrect header check";
      case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
      case ISAL_INCORRECT_CHECKSUM: return "incorrect data check";
      case ISAL_NEED_DICT: return "needs a preset dictionary";
      default: return "inflate error";
    }
  }

  uint64_t total_ = 0;
  std::unique_ptr<ByteStream> in_;
  std::string path_;
  std::vector<char> inbuf_;
  inflate_state z_{};
  bool member_done_ = false;
};

class ZstdStream : public ByteStream {
 public:
  ZstdStream(std::unique_ptr<ByteStream> in, std::string path) : in_(std::move(in)), path_(std::move(path)), inbuf_(ZSTD_DStreamInSize()) {
    dctx_ = ZSTD_createDCtx();
    if (!dctx_) throw InternalError("ZSTD_createDCtx failed");
  }
  ~ZstdStream() override { ZSTD_freeDCtx(dctx_); }
  ZstdStream(const ZstdStream&) = delete;
  ZstdStream& operator=(const ZstdStream&) = delete;
  std::string_view compression() const override { return "zstd"; }

  size_t read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (in_pos_ == in_len_) {
        in_len_ = in_->read(inbuf_.data(), inbuf_.size());
        in_pos_ = 0;
        if (in_len_ == 0) {
          if (frame_open_) throw InputError(path_, 1, "truncated zstd stream");
          break;
        }
      }
      ZSTD_inBuffer in{inbuf_.data(), in_len_, in_pos_};
      const size_t rc = ZSTD_decompressStream(dctx_, &out, &in);
      in_pos_ = in.pos;
      if (ZSTD_isError(rc))
        throw InputError(path_, 1, std::string("corrupt zstd stream: ") + ZSTD_getErrorName(rc));
      frame_open_ = rc != 0;  // 0: a frame ended exactly here
    }
    count_input(total_, out.pos, path_);
    return out.pos;
  }
  std::string name() const override { return path_; }

 private:
  uint64_t total_ = 0;
  std::unique_ptr<ByteStream> in_;
  std::string path_;
  std::vector<char> inbuf_;
  size_t in_pos_ = 0, in_len_ = 0;
  ZSTD_DCtx* dctx_ = nullptr;
  bool frame_open_ = false;
};

}  // namespace

std::string_view PeekStream::peek(size_t n) {
  while (peeked_.size() < n) {
    char buf[4096];
    const size_t got = in_->read(buf, std::min(sizeof buf, n - peeked_.size()));
    if (got == 0) break;
    peeked_.append(buf, got);
  }
  return std::string_view(peeked_).substr(0, n);
}

size_t PeekStream::read(char* buf, size_t n) {
  if (pos_ < peeked_.size()) {
    const size_t k = std::min(n, peeked_.size() - pos_);
    std::memcpy(buf, peeked_.data() + pos_, k);
    pos_ += k;
    if (pos_ == peeked_.size()) std::string().swap(peeked_), pos_ = 0;
    return k;
  }
  return in_->read(buf, n);
}

std::unique_ptr<PeekStream> open_raw(const std::string& path) {
  return std::make_unique<PeekStream>(std::make_unique<RawFile>(path));
}

namespace {
// A compressed file this large (256 KiB) decompresses on its own thread (read_ahead.h);
// a small one (a kv-cache-tester folder holds thousands) is not worth a thread.
constexpr off_t kReadAheadBytes = off_t{1} << 18;

std::unique_ptr<PeekStream> decoded(std::unique_ptr<ByteStream> stream, const std::string& path) {
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= kReadAheadBytes)
    stream = std::make_unique<ReadAheadStream>(std::move(stream));
  return std::make_unique<PeekStream>(std::move(stream));
}
}  // namespace

std::unique_ptr<PeekStream> decompressed(std::unique_ptr<PeekStream> raw, const std::string& path) {
  const std::string_view magic = raw->peek(4);
  if (magic.size() >= 2 && magic[0] == '\x1f' && magic[1] == '\x8b')
    return decoded(std::make_unique<GzipStream>(std::move(raw), path), path);
  if (magic == std::string_view("\x28\xb5\x2f\xfd", 4))
    return decoded(std::make_unique<ZstdStream>(std::move(raw), path), path);
  return raw;
}

std::unique_ptr<PeekStream> open_byte_stream(const std::string& path) { return decompressed(open_raw(path), path); }

namespace {

// The first '\n' in [p, end), or nullptr. Sixteen bytes a step (SSE2):
// lines of a few hundred bytes cost glibc's memchr more in its call and
// set-up than in the search (~8% of reading a Mooncake trace). Reads up
// to 15 bytes past `end`: LineReader's buffer has that slack.
const char* find_newline(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  for (; p < end; p += 16) {
    const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), nl)));
    if (m) {
      const char* q = p + __builtin_ctz(m);
      return q < end ? q : nullptr;
    }
  }
  return nullptr;
#else
  return static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
#endif
}

constexpr size_t kNewlineSlack = 16;  // find_newline's reads past the data

}  // namespace

LineReader::LineReader(std::unique_ptr<ByteStream> in, size_t padding)
    : in_(std::move(in)), padding_(std::max(padding, kNewlineSlack)), cap_(1 << 20) {
  buf_ = std::make_unique_for_overwrite<char[]>(cap_ + padding_);
}

bool LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep the unread tail, drop what was consumed
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == cap_) {  // a line longer than the buffer: grow, up to the limit
    const uint64_t limit = input_limits().max_line_bytes;
    if (cap_ >= limit) {
      const std::string file = in_->name();
      throw InputError(file.empty() ? "input" : file, line_no_ + 1,
                       "line longer than " + bytes_text(limit) + " (raise --max-line-bytes to read it)");
    }
    const size_t cap = static_cast<size_t>(std::min<uint64_t>(uint64_t{cap_} * 2, limit));
    auto bigger = std::make_unique_for_overwrite<char[]>(cap + padding_);
    std::memcpy(bigger.get(), buf_.get(), end_);
    buf_ = std::move(bigger);
    cap_ = cap;
  }
  const size_t got = in_->read(buf_.get() + end_, cap_ - end_);
  if (got == 0) eof_ = true;
  end_ += got;
  return got > 0;
}

bool LineReader::next(std::string_view& line) {
  size_t scanned = begin_;
  for (;;) {
    const char* nl = find_newline(buf_.get() + scanned, buf_.get() + end_);
    if (nl) {
      const size_t pos = static_cast<size_t>(nl - buf_.get());
      size_t len = pos - begin_;
      if (len > 0 && buf_[begin_ + len - 1] == '\r') --len;
      line = std::string_view(buf_.get() + begin_, len);
      last_ = begin_;
      begin_ = pos + 1;
      ++line_no_;
      unterminated_ = false;
      check_length(line.size());
      return true;
    }
    const size_t consumed = begin_;
    scanned = end_;
    if (!fill()) break;
    scanned -= consumed;  // fill() moved the tail to the front
  }
  if (begin_ == end_) return false;
  line = std::string_view(buf_.get() + begin_, end_ - begin_);
  last_ = begin_;
  begin_ = end_;
  ++line_no_;
  unterminated_ = true;
  check_length(line.size());
  return true;
}

void LineReader::check_length(size_t len) const {
  const uint64_t limit = input_limits().max_line_bytes;
  if (len <= limit) return;
  const std::string file = in_->name();
  throw InputError(file.empty() ? "input" : file, line_no_,
                   "line longer than " + bytes_text(limit) + " (raise --max-line-bytes to read it)");
}

size_t LineReader::read_rest(char* buf, size_t n) {
  if (begin_ < end_) {
    const size_t k = std::min(n, end_ - begin_);
    std::memcpy(buf, buf_.get() + begin_, k);
    begin_ += k;
    return k;
  }
  return eof_ ? 0 : in_->read(buf, n);
}

void LineReader::unread() {
  begin_ = last_;
  --line_no_;
}

}  // namespace prefixsim
