#include "traces/native_writer.h"

#include <charconv>
#include <span>

#include "sim/base/error.h"
#include "sim/base/json_out.h"

namespace prefixsim {

void append_seconds(std::string& out, TimeNs ns) {
  uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out.push_back('-');
  append_int(out, static_cast<int64_t>(mag / 1000000000ULL));
  uint64_t frac = mag % 1000000000ULL;
  out.push_back('.');
  if (frac == 0) {
    out.push_back('0');
    return;
  }
  char digits[9];
  for (int i = 8; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  int len = 9;
  while (len > 1 && digits[len - 1] == '0') --len;  // "0.125", not "0.125000000"
  out.append(digits, static_cast<size_t>(len));
}

namespace {
// Ids are full 64-bit values (namespaced ids use the top bits), so they are
// written unsigned: append_int_array would print them as negative int64.
void append_ids(std::string& out, const std::vector<uint64_t>& ids) {
  out.push_back('[');
  char buf[24];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out.push_back(',');
    const auto [p, ec] = std::to_chars(buf, buf + sizeof buf, ids[i]);
    (void)ec;
    out.append(buf, p);
  }
  out.push_back(']');
}
}  // namespace

void append_native_json(std::string& out, const Request& r) {
  out += "{\"id\":";
  append_json_string(out, r.id);
  out += ",\"t\":";
  append_seconds(out, r.arrival);
  if (r.identity_form()) {
    out += ",\"hash_ids\":";
    append_ids(out, r.hash_ids);
    out += ",\"block_size\":";
    append_int(out, r.trace_block_size);
    out += ",\"prompt_len\":";
    append_int(out, r.prompt_len);
  } else {
    out += ",\"tokens\":";
    append_int_array(out, std::span<const int32_t>(r.tokens));
  }
  out += ",\"output_len\":";
  append_int(out, r.output_len);
  if (!r.output_tokens.empty()) {
    out += ",\"output_tokens\":";
    append_int_array(out, std::span<const int32_t>(r.output_tokens));
  }
  if (!r.session.empty()) {
    out += ",\"session\":";
    append_json_string(out, r.session);
  }
  if (!r.extras.salt.empty()) {
    out += ",\"salt\":";
    append_json_string(out, r.extras.salt);
  }
  if (r.extras.lora != 0) {
    out += ",\"lora\":";
    append_int(out, r.extras.lora);
  }
  if (!r.extras.mm.empty()) {
    out += ",\"mm\":[";
    for (size_t i = 0; i < r.extras.mm.size(); ++i) {
      const MultimodalInput& m = r.extras.mm[i];
      if (i) out.push_back(',');
      out += "{\"hash\":";
      append_json_string(out, to_hex(m.hash));
      out += ",\"offset\":";
      append_int(out, m.offset);
      out += ",\"length\":";
      append_int(out, m.length);
      out.push_back('}');
    }
    out.push_back(']');
  }
  out.push_back('}');
}

void NativeJsonlWriter::write(const Request& r) {
  line_.clear();
  append_native_json(line_, r);
  line_.push_back('\n');
  out_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
  if (!out_) throw InputError("cannot write trace output (request " + r.id + ")");
  ++written_;
}

uint64_t write_native_jsonl(RequestSource& src, std::ostream& out) {
  NativeJsonlWriter writer(out);
  Request r;
  while (src.next(r)) writer.write(r);
  return writer.written();
}

}  // namespace prefixsim
