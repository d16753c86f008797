#include "traces/kvcache_tester.h"

#include <archive.h>
#include <archive_entry.h>
#include <simdjson.h>
#include <zstd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <random>
#include <vector>

#include "sim/base/error.h"
#include "sim/base/front_heap.h"
#include "sim/base/input_limits.h"
#include "traces/json_scan.h"
#include "traces/json_scan_lists.h"
#include "traces/jsonl_source.h"
#include "traces/kvcache_scan.h"

namespace prefixsim {
namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;

bool is_conversation_name(std::string_view name) {
  for (std::string_view ext : {".json", ".json.gz", ".json.zst"})
    if (name.size() > ext.size() && name.substr(name.size() - ext.size()) == ext) return true;
  return false;
}

std::string base_name(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// A conversation file is held whole to be parsed: like a line of JSONL, it
// may not be longer than --max-line-bytes.
void check_conversation_size(const std::string& name, uint64_t size) {
  const uint64_t limit = input_limits().max_line_bytes;
  if (size > limit)
    throw InputError(name, 1, "conversation file larger than " + bytes_text(limit) +
                                  " (raise --max-line-bytes to read it)");
}

// Reads all of `in` into buf (with simdjson's padding after it); returns the size.
size_t slurp(ByteStream& in, std::string& buf, const std::string& name) {
  size_t len = 0;
  buf.resize(std::max<size_t>(buf.size(), 1 << 16));
  for (;;) {
    if (buf.size() - len < (1 << 16) + simdjson::SIMDJSON_PADDING) buf.resize(buf.size() * 2);
    const size_t got = in.read(buf.data() + len, buf.size() - len - simdjson::SIMDJSON_PADDING);
    if (got == 0) return len;
    len += got;
    check_conversation_size(name, len);
  }
}

std::string file_kind(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::symlink: return "a symbolic link";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

// Conversations in storage order. `name` names the file in messages (FILE
// of "FILE:LINE"), `line` the line the conversation starts on (1 but in a
// JSONL of conversations), `session` the Request::session of its requests;
// its bytes land in `buf` (padded).
struct ConversationSource {
  std::string name, session;
  long line = 1;
  // The conversation's id when it has no "id" field: the file name up to
  // its first '.', with ":LINE" in a JSONL of several.
  std::string default_id() const {
    const std::string base = base_name(name);
    const std::string stem = base.substr(0, base.find('.'));
    return session == base ? stem : stem + ":" + std::to_string(line);
  }
};
// next() hands out each conversation's text, followed by at least
// simdjson::SIMDJSON_PADDING readable bytes and valid until the next call:
// a line of a JSONL in place in the line reader's buffer (no copy), a file
// or an archive member in buf_.
class ConversationFiles {
 public:
  virtual ~ConversationFiles() = default;
  virtual bool next(ConversationSource& where, std::string_view& text) = 0;

 protected:
  std::string buf_;
};

class FolderFiles final : public ConversationFiles {
 public:
  explicit FolderFiles(const std::string& dir) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (!is_conversation_name(it->path().filename().string())) continue;
      // A *.json entry that cannot be read as a file is an error, not a
      // conversation to skip: a dangling link, a link loop, a FIFO, ...
      std::error_code sec;
      const fs::file_status st = it->status(sec);
      if (sec) throw InputError(it->path().string(), 1, "cannot read conversation file: " + sec.message());
      if (st.type() != fs::file_type::regular)
        throw InputError(it->path().string(), 1, "is " + file_kind(st.type()) + ", not a conversation file");
      paths_.push_back(it->path().string());
    }
    if (ec) throw InputError(dir, 1, "cannot read folder: " + ec.message());
    std::sort(paths_.begin(), paths_.end());
  }
  bool next(ConversationSource& where, std::string_view& text) override {
    if (next_ == paths_.size()) return false;
    where.name = paths_[next_++];
    where.session = base_name(where.name);
    where.line = 1;
    // slurp() resizes buf_ first: data() only after it (an argument's order
    // of evaluation is unspecified; clang took data() first).
    const size_t len = slurp(*open_byte_stream(where.name), buf_, where.name);
    text = std::string_view(buf_.data(), len);
    return true;
  }

 private:
  std::vector<std::string> paths_;  // one short string per file, not per request
  size_t next_ = 0;
};

class TarFiles final : public ConversationFiles {
 public:
  TarFiles(std::string path, std::unique_ptr<ByteStream> in) : path_(std::move(path)), in_(std::move(in)) {
    a_ = archive_read_new();
    archive_read_support_filter_all(a_);
    archive_read_support_format_tar(a_);
    if (archive_read_open(a_, this, nullptr, &TarFiles::read_cb, nullptr) != ARCHIVE_OK) {
      // The destructor does not run when the constructor throws: free here.
      try {
        fail("cannot open archive");
      } catch (...) {
        archive_read_free(a_);
        throw;
      }
    }
  }
  ~TarFiles() override { archive_read_free(a_); }
  TarFiles(const TarFiles&) = delete;
  TarFiles& operator=(const TarFiles&) = delete;

  // Members in name order, like a folder's files: results must not depend
  // on the order an archiver stored them in. So the whole archive is read
  // first, each conversation kept zstd-compressed in memory (JSON shrinks
  // about tenfold at level 1; the claude-code archive's 440 MiB of members
  // take tens of MiB), then handed out sorted by name.
  bool next(ConversationSource& where, std::string_view& text) override {
    if (!read_all_) {
      std::string member;
      size_t len = 0;
      while (read_member(member, buf_, len)) {
        Packed p;
        p.name = std::move(member);
        p.size = len;
        p.bytes.resize(ZSTD_compressBound(len));
        const size_t n = ZSTD_compress(p.bytes.data(), p.bytes.size(), buf_.data(), len, 1);
        if (ZSTD_isError(n)) throw InternalError(std::string("ZSTD_compress: ") + ZSTD_getErrorName(n));
        p.bytes.resize(n);
        p.bytes.shrink_to_fit();
        packed_.push_back(std::move(p));
      }
      std::stable_sort(packed_.begin(), packed_.end(), [](const Packed& a, const Packed& b) { return a.name < b.name; });
      read_all_ = true;
    }
    if (next_ == packed_.size()) return false;
    Packed& p = packed_[next_++];
    where.name = std::move(p.name);
    where.session = base_name(where.name);
    where.line = 1;
    buf_.resize(std::max(buf_.size(), p.size + simdjson::SIMDJSON_PADDING));
    const size_t n = ZSTD_decompress(buf_.data(), p.size, p.bytes.data(), p.bytes.size());
    if (ZSTD_isError(n) || n != p.size) throw InternalError("ZSTD_decompress of a buffered archive member failed");
    text = std::string_view(buf_.data(), p.size);
    std::string().swap(p.bytes);
    return true;
  }

 private:
  struct Packed {
    std::string name;
    size_t size = 0;
    std::string bytes;  // the member, zstd-compressed
  };

  // The next conversation member of the archive, in storage order.
  bool read_member(std::string& name, std::string& buf, size_t& len) {
    archive_entry* e = nullptr;
    for (;;) {
      const int rc = archive_read_next_header(a_, &e);
      if (rc == ARCHIVE_EOF) {
        // No end-of-archive blocks after the last member: the archive was
        // cut at a member boundary, and the members after it are lost.
        if (archive_filter_bytes(a_, 0) <= archive_read_header_position(a_))
          throw InputError(path_, 1, "truncated archive (no end-of-archive marker after the last member)");
        return false;
      }
      // RETRY is a damaged header that libarchive would skip past: a lost member.
      if (rc != ARCHIVE_OK) fail("corrupt archive");
      const std::string member = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
      // Every member's size counts against --max-input-bytes, skipped or not
      // (skipping still decompresses it).
      const la_int64_t declared = archive_entry_size(e);
      if (declared < 0) fail("member " + member + " has a negative size");
      total_ += static_cast<uint64_t>(declared);
      if (total_ > input_limits().max_input_bytes)
        throw InputError(path_ + "/" + member, 1,
                         "the archive's members add up to more than " + bytes_text(input_limits().max_input_bytes) +
                             " (raise --max-input-bytes to read it)");
      if (!is_conversation_name(member)) continue;
      name = path_ + "/" + member;
      if (archive_entry_filetype(e) != AE_IFREG)
        throw InputError(name, 1, "archive member is not a regular file (a link or a special file), not a conversation");
      check_conversation_size(name, static_cast<uint64_t>(declared));
      break;
    }
    if (name.ends_with(".gz") || name.ends_with(".zst"))
      throw InputError(name, 1, "compressed members inside an archive are not supported; compress the archive instead");
    // Room for the whole member at once (its size is in the header, checked
    // against the limit above), so the buffer is not doubled past it.
    const auto size = static_cast<size_t>(archive_entry_size(e));
    buf.resize(std::max(buf.size(), size + (1 << 16) + simdjson::SIMDJSON_PADDING));
    len = 0;
    for (;;) {
      if (buf.size() - len < (1 << 16) + simdjson::SIMDJSON_PADDING) buf.resize(buf.size() * 2);
      const la_ssize_t got = archive_read_data(a_, buf.data() + len, buf.size() - len - simdjson::SIMDJSON_PADDING);
      if (got < 0) fail("corrupt archive member " + name);
      if (got == 0) break;
      len += static_cast<size_t>(got);
      check_conversation_size(name, len);
    }
    if (len != size) fail("archive member " + name + " holds " + std::to_string(len) + " bytes, its header says " +
                          std::to_string(size));
    return true;
  }

  // libarchive pulls bytes through this C callback; an exception must not
  // cross it, so it is kept and rethrown once libarchive returns.
  static la_ssize_t read_cb(archive* a, void* self_, const void** out) {
    auto* self = static_cast<TarFiles*>(self_);
    try {
      const size_t got = self->in_->read(self->chunk_.data(), self->chunk_.size());
      *out = self->chunk_.data();
      return static_cast<la_ssize_t>(got);
    } catch (...) {
      self->error_ = std::current_exception();
      archive_set_error(a, EIO, "read error");
      return -1;
    }
  }
  [[noreturn]] void fail(const std::string& what) {
    if (error_) std::rethrow_exception(error_);
    const char* why = archive_error_string(a_);
    throw InputError(path_, 1, what + (why ? std::string(": ") + why : std::string()));
  }

  std::string path_;
  std::unique_ptr<ByteStream> in_;
  std::vector<char> chunk_ = std::vector<char>(1 << 18);
  archive* a_ = nullptr;
  std::exception_ptr error_;
  uint64_t total_ = 0;  // the members' sizes so far
  std::vector<Packed> packed_;
  size_t next_ = 0;
  bool read_all_ = false;
};

class SingleFile final : public ConversationFiles {
 public:
  SingleFile(std::string path, std::unique_ptr<ByteStream> in) : path_(std::move(path)), in_(std::move(in)) {}
  bool next(ConversationSource& where, std::string_view& text) override {
    if (!in_) return false;
    where.name = path_;
    where.session = base_name(path_);
    where.line = 1;
    const size_t len = slurp(*in_, buf_, path_);  // resizes buf_: data() after it
    text = std::string_view(buf_.data(), len);
    in_.reset();
    return true;
  }

 private:
  std::string path_;
  std::unique_ptr<ByteStream> in_;
};

// A JSONL of conversations, one per line: how the WEKA / SemiAnalysis
// coding-agent traces are published (Hugging Face datasets
// semianalysisai/cc-traces-weka-*, one row per trace with the fields of a
// kv-cache-tester file). Read a line at a time, when the replay's clock
// reaches the conversation. Each line is one trace with its own hash scope
// (namespaced like a file of a folder). Sessions: the file's name, with
// ":LINE" when the file holds more than one conversation.
class JsonlConversations final : public ConversationFiles {
 public:
  JsonlConversations(std::string path, std::unique_ptr<LineReader> lines)
      : path_(std::move(path)), lines_(std::move(lines)) {}
  // The line reader pads every line with simdjson's padding, and a line
  // stays in place until the next is read.
  bool next(ConversationSource& where, std::string_view& text) override {
    if (!next_nonblank(text)) return false;
    if (where.name != path_) where.name = path_;
    where.line = lines_->line_number();
    if (!looked_ahead_) {  // a second conversation after the first?
      looked_ahead_ = true;
      // Reading ahead may move the first line in the reader's buffer: it is
      // copied out first (once per file).
      buf_.assign(text.data(), text.size());
      buf_.resize(text.size() + simdjson::SIMDJSON_PADDING);
      text = std::string_view(buf_.data(), text.size());
      std::string_view ahead;
      if (next_nonblank(ahead)) {
        several_ = true;
        lines_->unread();
      }
      base_ = base_name(path_);
    }
    // The session's text rebuilt in place: no allocation per conversation.
    where.session.assign(base_);
    if (several_) {
      char num[24];
      const auto [end, ec] = std::to_chars(num, num + sizeof num, where.line);
      (void)ec;
      where.session.push_back(':');
      where.session.append(num, end);
    }
    return true;
  }

 private:
  bool next_nonblank(std::string_view& line) {
    while (lines_->next(line))
      if (line.find_first_not_of(" \t\r") != std::string_view::npos) return true;
    return false;
  }

  std::string path_, base_;
  std::unique_ptr<LineReader> lines_;
  bool looked_ahead_ = false, several_ = false;
};

// One request of a conversation, delta-encoded against the one before it.
struct ConvRequest {
  TimeNs t = 0;          // offset from the conversation's start
  int64_t in = 0;        // prompt tokens
  int64_t out = 0;       // output tokens
  uint32_t seq = 0;      // position in the file (request id)
  uint32_t shared = 0;   // leading ids equal to the previous request's
  uint32_t begin = 0;    // its other ids: pool[begin, begin + count)
  uint32_t count = 0;
};

struct Conversation {
  std::string session;  // the file name
  std::string id;       // the file's "id" (or its name): request ids are id#seq
  TimeNs start = 0;
  int32_t block_size = 64;
  std::vector<ConvRequest> reqs;
  std::vector<uint64_t> pool;
  std::vector<uint64_t> cur;  // ids of the request last emitted
  size_t next = 0;
};

// A request of the file before sorting: its ids still point into the DOM.
struct RawRequest {
  TimeNs t;
  int64_t in, out;
  uint32_t seq;
  simdjson::dom::array ids;
  std::string at;  // "requests[3].requests[1]", for messages
};

constexpr uint64_t kTailBit = 1ULL << 63;
// Times closer than this are one instant (aiperf's join epsilon).
constexpr double kSameInstantS = 1e-6;
constexpr int kFileShift = 40;

class KvCacheTesterSource final : public RequestSource {
 public:
  KvCacheTesterSource(std::string path, std::unique_ptr<ConversationFiles> files, const TraceOptions& opts)
      : path_(std::move(path)), files_(std::move(files)), opts_(opts), rng_(opts.seed) {}

  std::string format() const override { return "kvcache-tester"; }
  std::string origin() const override { return path_; }

  bool next(Request& out) override {
    while (!files_done_ && (pending_.empty() || next_start_ < pending_.top().arrival)) load_next();
    if (pending_.empty()) {
      if (loaded_ == 0) throw InputError(path_, 1, "empty trace: no conversation files (*.json)");
      if (emitted_ == 0) throw InputError(path_, 1, "empty trace: the conversations hold no requests");
      return false;
    }
    const Pending p = pending_.pop();
    Conversation& c = *convs_[p.conv];
    const ConvRequest& r = c.reqs[c.next++];
    const bool last = c.next == c.reqs.size();
    out.clear();
    // Filled in place: the strings and the id vector keep their buffers
    // from the caller's previous request.
    out.id.assign(c.id);
    out.id.push_back('#');
    char num[16];
    out.id.append(num, std::to_chars(num, num + sizeof num, r.seq).ptr);
    out.arrival = p.arrival;
    const auto fresh = c.pool.begin() + r.begin;
    if (last) {  // no request after it needs c.cur
      out.hash_ids.assign(c.cur.begin(), c.cur.begin() + r.shared);
      out.hash_ids.insert(out.hash_ids.end(), fresh, fresh + r.count);
    } else {
      c.cur.resize(r.shared);
      c.cur.insert(c.cur.end(), fresh, fresh + r.count);
      out.hash_ids.assign(c.cur.begin(), c.cur.end());
    }
    out.trace_block_size = c.block_size;
    out.prompt_len = r.in;
    out.output_len = r.out;
    out.session.assign(c.session);
    ++emitted_;
    if (!last)
      pending_.push({c.start + c.reqs[c.next].t, p.conv});
    else
      recycle(std::move(convs_[p.conv]));  // finished
    return true;
  }

 private:
  struct Pending {
    TimeNs arrival;
    uint32_t conv;
    // min-heap on (arrival, conversation): ties go to the earlier conversation
    bool operator>(const Pending& o) const { return arrival != o.arrival ? arrival > o.arrival : conv > o.conv; }
  };

  // A finished conversation's object is kept for the next one (its
  // vectors' and strings' buffers with it), unless it is large: memory
  // stays about the live conversations' distinct ids.
  void recycle(std::unique_ptr<Conversation> c) {
    constexpr size_t kMaxKeptIds = 4096, kMaxKept = 64;
    if (spare_.size() < kMaxKept && c->pool.capacity() <= kMaxKeptIds && c->cur.capacity() <= kMaxKeptIds &&
        c->reqs.capacity() <= kMaxKeptIds) {
      c->reqs.clear();
      c->pool.clear();
      c->cur.clear();
      c->next = 0;
      spare_.push_back(std::move(c));
    }
  }

  void load_next() {
    ConversationSource& where = where_;
    std::string_view text;
    if (!files_->next(where, text)) {
      files_done_ = true;
      return;
    }
    const uint32_t k = static_cast<uint32_t>(loaded_++);
    if (k + 1 >= (1u << 22)) throw InputError(where.name, where.line, "too many conversations (more than 4 million)");
    std::unique_ptr<Conversation> c;
    if (spare_.empty()) {
      c = std::make_unique<Conversation>();
    } else {
      c = std::move(spare_.back());
      spare_.pop_back();
    }
    if (next_start_ == std::numeric_limits<TimeNs>::max()) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "%g", opts_.conversation_rate);
      throw InputError(where.name, where.line,
                       std::string("--conversation-rate ") + rate +
                           " starts this conversation past the simulated clock's range; raise the rate");
    }
    c->start = next_start_;
    parse(where, text, k, *c);
    for (const auto& r : c->reqs)  // start + offset must stay on the clock too
      if (r.t > std::numeric_limits<TimeNs>::max() - c->start)
        throw InputError(where.name, where.line,
                         "a request arrives past the simulated clock's range (the conversation starts at " +
                             std::to_string(c->start / 1'000'000'000) + " s); raise --conversation-rate");
    // The next conversation starts an exponential gap later (Poisson process).
    const double u = (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53;
    start_s_ += -std::log(u) / opts_.conversation_rate;
    // Checked before the conversion (past the ns clock's range it would be
    // undefined behaviour: a tiny rate puts the next start centuries away);
    // an error only if a conversation is really loaded there.
    next_start_ = start_s_ <= json_scan::kMaxSeconds ? static_cast<TimeNs>(std::llround(start_s_ * 1e9))
                                                     : std::numeric_limits<TimeNs>::max();
    if (c->reqs.empty()) return;
    pending_.push({c->start + c->reqs[0].t, k});
    if (convs_.size() <= k) convs_.resize(k + 1);
    convs_[k] = std::move(c);
  }

  // `text` is followed by simdjson's padding.
  void parse(const ConversationSource& where, std::string_view text, uint32_t k, Conversation& c) {
    const JsonFields f(where.name, where.line);
    c.session.assign(where.session);
    if (opts_.fast_scan && parse_fast(where, text, k, c)) return;
    c.reqs.clear();
    c.pool.clear();
    element doc;
    if (const auto err = parser_.parse(text.data(), text.size(), false).get(doc))
      f.fail(std::string("invalid JSON: ") + simdjson::error_message(err));
    simdjson::dom::object top;
    if (doc.get_object().get(top)) f.fail("expected a JSON object (one conversation)");
    c.id = where.default_id();
    bool global = false, have_requests = false;
    c.block_size = opts_.trace_block_size > 0 ? opts_.trace_block_size : 64;
    simdjson::dom::array requests;
    // Other top-level keys (models, tool_tokens, system_tokens, totals) are
    // descriptive metadata that no simulation result depends on.
    for (auto field : top) {
      const std::string_view key = field.key;
      if (key == "id") {
        c.id = std::string(f.get_string(field.value, key));
      } else if (key == "block_size") {
        const auto bs = static_cast<int32_t>(f.get_int(field.value, key, 1, 1 << 20));
        if (opts_.trace_block_size > 0 && bs != opts_.trace_block_size)
          f.fail("field \"block_size\" is " + std::to_string(bs) + " but --trace-block-size is " +
                 std::to_string(opts_.trace_block_size));
        c.block_size = bs;
      } else if (key == "hash_id_scope") {
        const std::string_view scope = f.get_string(field.value, key);
        if (scope != "local" && scope != "global")
          f.fail("field \"hash_id_scope\": expected \"local\" or \"global\", got \"" + std::string(scope) + "\"");
        global = scope == "global";
      } else if (key == "requests") {
        requests = f.get_array(field.value, key);
        have_requests = true;
      }
    }
    if (!have_requests) f.fail("missing field \"requests\" (not a kv-cache-tester conversation)");
    raw_.clear();
    uint32_t seq = 0;
    collect(f, requests, "requests", 0.0, c.block_size, seq);
    // Already in time order, as files mostly are: no sort (std::stable_sort
    // allocates a buffer on every call).
    const auto raw_earlier = [](const RawRequest& a, const RawRequest& b) { return a.t < b.t; };
    if (!std::is_sorted(raw_.begin(), raw_.end(), raw_earlier)) std::stable_sort(raw_.begin(), raw_.end(), raw_earlier);

    const uint64_t file_ns = static_cast<uint64_t>(k + 1) << kFileShift;
    prev_.clear();
    for (const RawRequest& r : raw_) {
      ids_.clear();
      for (element x : r.ids) {
        uint64_t id = 0;
        if (x.get_uint64().get(id))
          f.fail("field \"" + r.at + ".hash_ids[" + std::to_string(ids_.size()) + "]\": expected a non-negative integer");
        if (id >= (global ? kTailBit : (1ULL << kFileShift)))
          f.fail("field \"" + r.at + ".hash_ids[" + std::to_string(ids_.size()) + "]\": " + std::to_string(id) +
                 (global ? " is too large (limit 2^63)" : " is too large to namespace by file (limit 2^40)"));
        ids_.push_back(global ? id : (file_ns | id));
      }
      append_request(c, {r.t, r.in, r.out, r.seq}, file_ns);
    }
    finish(f, c);
  }

  // The next request of c in time order, its ids (namespaced) in ids_: the
  // unknown tail gets its own id, then the ids are delta-encoded against
  // the request before.
  void append_request(Conversation& c, ConvRequest r, uint64_t file_ns) {
    const int64_t full = r.in / c.block_size;
    if (static_cast<int64_t>(ids_.size()) == full && r.in % c.block_size != 0)
      ids_.push_back(kTailBit | file_ns | r.seq);  // the unknown tail: unique
    size_t shared = 0;
    while (shared < ids_.size() && shared < prev_.size() && ids_[shared] == prev_[shared]) ++shared;
    r.shared = static_cast<uint32_t>(shared);
    r.begin = static_cast<uint32_t>(c.pool.size());
    r.count = static_cast<uint32_t>(ids_.size() - shared);
    c.reqs.push_back(r);
    c.pool.insert(c.pool.end(), ids_.begin() + static_cast<std::ptrdiff_t>(shared), ids_.end());
    prev_.swap(ids_);
  }
  void finish(const JsonFields& f, Conversation& c) {
    if (c.pool.size() >= (1ULL << 32)) f.fail("conversation too large (over 2^32 distinct ids)");
    // Held until the conversation ends: no slack worth a copy (a small one
    // is kept for the next conversation instead, see recycle()).
    if (c.pool.capacity() > 2 * c.pool.size() + 4096) c.pool.shrink_to_fit();
  }

  // The plain conversation through the scanner (kvcache_scan.h); false for
  // one it declines or whose fields fail a check, which the DOM path then
  // reads and reports as ever. The delta encoding is taken straight from
  // the scanned ids (no copy per request): namespacing by file is one OR on
  // ids below 2^40, so two raw ids are equal exactly when their namespaced
  // forms are, and a tail id equals no other.
  bool parse_fast(const ConversationSource& where, std::string_view text, uint32_t k, Conversation& c) {
    static_assert(json_scan::kScanPadding <= simdjson::SIMDJSON_PADDING);
    if (!scan_kvcache_conversation(text, scan_)) return false;
    const KvScanConversation& sc = scan_;
    if (opts_.trace_block_size > 0 && sc.has_block_size && sc.block_size != opts_.trace_block_size) return false;
    const int64_t bs = sc.has_block_size ? sc.block_size : opts_.trace_block_size > 0 ? opts_.trace_block_size : 64;
    fast_.clear();
    uint32_t seq = 0;
    for (const KvScanRequest& r : sc.requests) {
      const int64_t n = r.num_ids, full = r.in / bs;
      const bool partial = r.in != full * bs;  // a partial last block
      if (n != full && n != full + partial) return false;
      fast_.push_back({static_cast<TimeNs>(std::llround(r.t * 1e9)), seq++, partial && n == full, &r});
    }
    if (sc.has_id)
      c.id.assign(sc.id);
    else
      c.id = where.default_id();
    c.block_size = static_cast<int32_t>(bs);
    const auto earlier = [](const FastRequest& a, const FastRequest& b) { return a.t < b.t; };
    if (!std::is_sorted(fast_.begin(), fast_.end(), earlier)) std::stable_sort(fast_.begin(), fast_.end(), earlier);
    const uint64_t file_ns = static_cast<uint64_t>(k + 1) << kFileShift;
    const uint64_t ns = sc.global ? 0 : file_ns;
    uint64_t any = 0;  // every scanned id ORed: one compare against the limit
    // Sized for the most it can take (every id, a tail per request), filled
    // through plain pointers, then cut to what it holds.
    c.reqs.resize(fast_.size());
    c.pool.resize(sc.ids.size() + fast_.size());
    uint64_t* const pool = c.pool.data();
    size_t used = 0;
    const uint64_t* prev = nullptr;  // the request before's scanned ids
    size_t prev_n = 0;
    for (size_t j = 0; j < fast_.size(); ++j) {
      const FastRequest& q = fast_[j];
      const uint64_t* ids = sc.ids.data() + q.r->first_id;
      const size_t n = q.r->num_ids;
      size_t shared = 0;
      while (shared < n && shared < prev_n && ids[shared] == prev[shared]) ++shared;
      ConvRequest& r = c.reqs[j];
      r = {q.t, q.r->in, q.r->out, q.seq};
      r.shared = static_cast<uint32_t>(shared);
      r.begin = static_cast<uint32_t>(used);
      // The ids before `shared` are the request before's: ORed into `any`
      // there (or before it), so every scanned id is.
      for (size_t i = shared; i < n; ++i) {
        any |= ids[i];
        pool[used++] = ids[i] | ns;
      }
      if (q.tail) pool[used++] = kTailBit | file_ns | q.seq;  // the unknown tail: unique
      r.count = static_cast<uint32_t>(used - r.begin);
      prev = ids;
      prev_n = n;
    }
    if (any >= (sc.global ? kTailBit : (1ULL << kFileShift))) return false;
    c.pool.resize(used);
    finish(JsonFields(where.name, where.line), c);
    return true;
  }

  // The earliest "t" among the objects of `arr` (their own; not nested
  // deeper), or +inf; values are checked where the requests are collected.
  static double earliest_t(simdjson::dom::array arr) {
    double first = std::numeric_limits<double>::infinity();
    for (element item : arr) {
      double t = 0;
      if (item["t"].get_double().get(t) == simdjson::SUCCESS) first = std::min(first, t);
      int64_t ti = 0;
      if (item["t"].get_int64().get(ti) == simdjson::SUCCESS) first = std::min(first, static_cast<double>(ti));
    }
    return first;
  }

  // Gathers the requests of `arr` (recursing into subagents, whose nested
  // requests are timed from `base`: the subagent's start or, for absolute
  // nested times, the parent's own base).
  void collect(const JsonFields& f, simdjson::dom::array arr, const std::string& where, double base, int64_t bs,
               uint32_t& seq) {
    size_t i = 0;
    for (element item : arr) {
      const std::string at = where + "[" + std::to_string(i++) + "]";
      simdjson::dom::object o;
      if (item.get_object().get(o)) f.fail(at + ": expected an object");
      double t = -1;
      int64_t in = -1, out = -1;
      bool subagent = false, have_ids = false;
      simdjson::dom::array ids, nested;
      bool have_nested = false;
      for (auto field : o) {
        const std::string_view key = field.key;
        if (key == "t") t = f.get_nonneg_number(field.value, at + ".t");
        else if (key == "in") in = f.get_int(field.value, at + ".in", 1, kMaxTokens);
        else if (key == "out") out = f.get_int(field.value, at + ".out", 0, kMaxTokens);
        else if (key == "hash_ids") ids = f.get_array(field.value, at + ".hash_ids"), have_ids = true;
        else if (key == "type") subagent = f.get_string(field.value, at + ".type") == "subagent";
        else if (key == "requests") nested = f.get_array(field.value, at + ".requests"), have_nested = true;
      }
      if (t < 0) f.fail("missing field \"" + at + ".t\"");
      if (t > 9.2e9) f.fail("field \"" + at + ".t\": absurdly late");
      if (subagent) {
        if (!have_nested) f.fail("missing field \"" + at + ".requests\" of a subagent");
        // Nested times: relative to the subagent's start in kv-cache-tester's
        // claude-code files (the first is 0), on the parent's clock in WEKA's
        // captures (none before the spawn). The rule of SemiAnalysis's aiperf
        // WEKA loader (weka_trace.py): a nested time before the spawn means
        // relative. Decided per subagent, from its earliest nested time.
        const double first = earliest_t(nested);
        const bool relative = first + kSameInstantS < t;
        collect(f, nested, at + ".requests", relative ? base + t : base, bs, seq);
        continue;
      }
      if (in < 0) f.fail("missing field \"" + at + ".in\"");
      if (out < 0) f.fail("missing field \"" + at + ".out\"");
      if (!have_ids) f.fail("missing field \"" + at + ".hash_ids\"");
      const size_t n = ids.size();  // O(1); the ids themselves are checked in parse()
      // The ids cover the full blocks, and the partial tail only sometimes.
      const int64_t full = in / bs, all = (in + bs - 1) / bs;
      if (static_cast<int64_t>(n) != full && static_cast<int64_t>(n) != all)
        f.fail("field \"" + at + ".hash_ids\" has " + std::to_string(n) + " ids but \"in\" = " + std::to_string(in) +
               " tokens needs " + std::to_string(full) + " (full " + std::to_string(bs) + "-token blocks) or " +
               std::to_string(all));
      if (!(base + t <= json_scan::kMaxSeconds))
        f.fail("field \"" + at + ".t\": the request arrives past the simulated clock's range");
      raw_.push_back({static_cast<TimeNs>(std::llround((base + t) * 1e9)), in, out, seq++, ids, at});
    }
  }

  std::string path_;
  std::unique_ptr<ConversationFiles> files_;
  TraceOptions opts_;
  std::mt19937_64 rng_;
  simdjson::dom::parser parser_;
  ConversationSource where_;  // the conversation being read (its strings' buffers reused)
  std::vector<RawRequest> raw_;
  struct FastRequest {
    TimeNs t;
    uint32_t seq;
    bool tail;  // its ids cover only its full blocks, and it has a partial one
    const KvScanRequest* r;
  };
  KvScanConversation scan_;  // the fast path's
  std::vector<FastRequest> fast_;
  std::vector<uint64_t> ids_, prev_;
  std::vector<std::unique_ptr<Conversation>> convs_;  // by load order; null once finished
  std::vector<std::unique_ptr<Conversation>> spare_;  // finished, kept for reuse (recycle())
  // One per live conversation: most are taken back at once (front_heap.h).
  FrontHeap<Pending> pending_;
  double start_s_ = 0;
  TimeNs next_start_ = 0;
  bool files_done_ = false;
  size_t loaded_ = 0;
  uint64_t emitted_ = 0;
};

}  // namespace

std::unique_ptr<RequestSource> open_kvcache_folder(const std::string& path, const TraceOptions& opts) {
  return std::make_unique<KvCacheTesterSource>(path, std::make_unique<FolderFiles>(path), opts);
}

std::unique_ptr<RequestSource> open_kvcache_tar(const std::string& path, std::unique_ptr<ByteStream> bytes,
                                                const TraceOptions& opts) {
  return std::make_unique<KvCacheTesterSource>(path, std::make_unique<TarFiles>(path, std::move(bytes)), opts);
}

std::unique_ptr<RequestSource> open_kvcache_jsonl(const std::string& path, std::unique_ptr<LineReader> lines,
                                                  const TraceOptions& opts) {
  return std::make_unique<KvCacheTesterSource>(path, std::make_unique<JsonlConversations>(path, std::move(lines)),
                                               opts);
}

std::unique_ptr<RequestSource> open_kvcache_file(const std::string& path, std::unique_ptr<ByteStream> bytes,
                                                 const TraceOptions& opts) {
  return std::make_unique<KvCacheTesterSource>(path, std::make_unique<SingleFile>(path, std::move(bytes)), opts);
}

}  // namespace prefixsim
