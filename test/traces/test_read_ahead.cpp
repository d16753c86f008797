// Compressed traces: ISA-L's inflate and the decompression thread
// (traces/read_ahead.h) give the very bytes of the plain file, in order,
// and errors after the bytes before them.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"
#include "test/support.h"
#include "traces/byte_stream.h"
#include "traces/read_ahead.h"

using namespace prefixsim;

namespace {

// Bytes i = f(i) for i < size, then the end, or an error if `fail`.
class CountingStream final : public ByteStream {
 public:
  CountingStream(uint64_t size, bool fail) : size_(size), fail_(fail) {}
  size_t read(char* buf, size_t n) override {
    if (at_ == size_) {
      if (fail_) throw InputError("counting", 1, "broken after " + std::to_string(size_) + " bytes");
      return 0;
    }
    const size_t k = static_cast<size_t>(std::min<uint64_t>(std::min<size_t>(n, 77'777), size_ - at_));
    for (size_t i = 0; i < k; ++i) buf[i] = byte(at_ + i);
    at_ += k;
    return k;
  }
  static char byte(uint64_t i) { return static_cast<char>((i * 2654435761u) >> 13); }

 private:
  uint64_t size_, at_ = 0;
  bool fail_;
};

std::string drain(ByteStream& s, size_t chunk) {
  std::string out;
  std::string buf(chunk, '\0');
  for (size_t got; (got = s.read(buf.data(), buf.size())) > 0;) out.append(buf.data(), got);
  return out;
}

// gzip of `text` in `members` concatenated members (zlib writes it).
std::string gzip(const std::string& text, int members) {
  std::string out;
  const size_t part = text.size() / members + 1;
  for (size_t at = 0; at < text.size(); at += part) {
    z_stream z{};
    REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    std::string in = text.substr(at, part), buf(deflateBound(&z, in.size()) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = static_cast<uInt>(buf.size());
    REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
    out.append(buf.data(), z.total_out);
    deflateEnd(&z);
  }
  return out;
}

// Lines of a trace-like text, `bytes` long or a little more.
std::string lines(size_t bytes) {
  std::string t;
  for (uint64_t i = 0; t.size() < bytes; ++i)
    t += "{\"timestamp\": " + std::to_string(i * 37) + ", \"input_length\": " + std::to_string(i % 9000) +
         ", \"hash_ids\": [" + std::to_string(i * 7) + ", " + std::to_string(i * 7 + 1) + "]}\n";
  return t;
}

}  // namespace

TEST_CASE("read-ahead gives the inner stream's bytes in order, whatever the read sizes", "[traces][read_ahead]") {
  const uint64_t size = 3 * ReadAheadStream::kBlock * ReadAheadStream::kSlots + 12345;
  for (size_t chunk : {size_t{1} << 20, size_t{4096}, size_t{999'983}}) {
    ReadAheadStream s(std::make_unique<CountingStream>(size, false));
    const std::string got = drain(s, chunk);
    REQUIRE(got.size() == size);
    bool same = true;
    for (uint64_t i = 0; i < size && same; ++i) same = got[i] == CountingStream::byte(i);
    CHECK(same);
    CHECK(s.read(nullptr, 0) == 0);  // stays at the end
  }
}

TEST_CASE("read-ahead delivers every byte before the inner stream's error, then the error", "[traces][read_ahead]") {
  const uint64_t size = 2 * ReadAheadStream::kBlock + 100;
  ReadAheadStream s(std::make_unique<CountingStream>(size, true));
  std::string got, buf(65536, '\0');
  try {
    for (size_t k; (k = s.read(buf.data(), buf.size())) > 0;) got.append(buf.data(), k);
    FAIL("the inner stream's error was lost");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("broken after"));
  }
  CHECK(got.size() == size);
}

TEST_CASE("read-ahead stops its worker when the reader stops early", "[traces][read_ahead]") {
  // An endless inner stream: the worker fills its slots and waits; the
  // destructor must stop it (the test would hang otherwise).
  auto s = std::make_unique<ReadAheadStream>(std::make_unique<CountingStream>(UINT64_MAX, false));
  char b[100];
  CHECK(s->read(b, sizeof b) == sizeof b);
  s.reset();
  SUCCEED();
}

TEST_CASE("gzip traces, one member or several, large enough for the read-ahead, read as the plain bytes",
          "[traces][read_ahead][gzip]") {
  const std::string dir = test::temp_dir("gzip_read_ahead");
  const std::string text = lines(6 << 20);  // ~6 MiB: over 256 KiB compressed, so on its own thread
  for (int members : {1, 3}) {
    const std::string path = dir + "/t" + std::to_string(members) + ".jsonl.gz";
    const std::string gz = gzip(text, members);
    std::ofstream(path, std::ios::binary) << gz;
    INFO(members << " member(s), " << gz.size() << " bytes compressed");
    auto s = open_byte_stream(path);
    CHECK(s->compression() == "gzip");
    CHECK(drain(*s, 1 << 16) == text);
  }
  // A flipped byte in the last member's CRC: the data check fails, after the data.
  std::string gz = gzip(text, 1);
  gz[gz.size() - 6] ^= 0x5a;
  const std::string bad = dir + "/crc.jsonl.gz";
  std::ofstream(bad, std::ios::binary) << gz;
  auto s = open_byte_stream(bad);
  CHECK_THROWS_WITH(drain(*s, 1 << 16), Catch::Contains(bad + ":1: corrupt gzip stream: incorrect data check"));
}
