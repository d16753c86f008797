#include "sim/kv/block_hash.h"

#include "sim/base/mix.h"

#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace prefixsim {
namespace {

// Domain tags keep token blocks and identity blocks apart in the byte image.
constexpr unsigned char kTokenBlockTag = 'T';
constexpr unsigned char kIdentityBlockTag = 'I';
constexpr uint64_t kChainSeed = 0x70726566697873ULL;  // "prefixs"

// Reused buffer: hashing a block allocates nothing once it has grown.
thread_local std::vector<unsigned char> g_image;

template <typename T>
void put(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

void put_parent(std::vector<unsigned char>& out, const BlockHash* parent) {
  const BlockHash root = parent ? *parent : none_hash();
  put(out, root.lo);
  put(out, root.hi);
}

// vLLM's generate_block_hash_extra_keys: LoRA name on every block, multimodal
// hashes of inputs overlapping [start, start+len), salt on block 0 only.
void put_extras(std::vector<unsigned char>& out, const HashExtras& extras, int64_t start, int64_t len) {
  if (extras.lora != 0) {
    out.push_back('L');
    put(out, extras.lora);
  }
  for (const MultimodalInput& mm : extras.mm) {
    if (mm.offset < start + len && mm.offset + mm.length > start) {
      out.push_back('M');
      put(out, mm.hash.lo);
      put(out, mm.hash.hi);
    }
  }
  if (start == 0 && !extras.salt.empty()) {
    out.push_back('S');
    put(out, static_cast<uint64_t>(extras.salt.size()));
    out.insert(out.end(), extras.salt.begin(), extras.salt.end());
  }
}

BlockHash finish(const void* image, size_t bytes) {
  XXH128_hash_t h = XXH3_128bits(image, bytes);
  return BlockHash{h.low64, h.high64};
}
BlockHash finish(const std::vector<unsigned char>& image) { return finish(image.data(), image.size()); }

// The image's head, tag then parent, into a fixed buffer: the common case
// (no extras, a block of at most kStackTokens tokens) hashes the same bytes
// as the general path without a vector's bookkeeping per block (cache mode
// hashes millions of blocks; this was a fifth of its run).
constexpr size_t kHead = 1 + 2 * sizeof(uint64_t);
constexpr size_t kStackTokens = 64;
size_t put_head(unsigned char* out, unsigned char tag, const BlockHash* parent) {
  const BlockHash root = parent ? *parent : none_hash();
  out[0] = tag;
  std::memcpy(out + 1, &root.lo, sizeof root.lo);
  std::memcpy(out + 1 + sizeof root.lo, &root.hi, sizeof root.hi);
  return kHead;
}

}  // namespace

BlockHash none_hash() {
  static const BlockHash root = [] {
    XXH128_hash_t h = XXH3_128bits_withSeed("NONE_HASH", 9, kChainSeed);
    return BlockHash{h.low64, h.high64};
  }();
  return root;
}

BlockHash hash_token_block(const BlockHash* parent, std::span<const int32_t> tokens, int64_t start,
                           const HashExtras& extras) {
  if (extras.empty() && tokens.size() <= kStackTokens) {
    unsigned char buf[kHead + kStackTokens * sizeof(int32_t)];
    const size_t head = put_head(buf, kTokenBlockTag, parent);
    if (!tokens.empty()) std::memcpy(buf + head, tokens.data(), tokens.size_bytes());
    return finish(buf, head + tokens.size_bytes());
  }
  auto& image = g_image;
  image.clear();
  image.push_back(kTokenBlockTag);
  put_parent(image, parent);
  const auto* p = reinterpret_cast<const unsigned char*>(tokens.data());
  image.insert(image.end(), p, p + tokens.size_bytes());
  put_extras(image, extras, start, static_cast<int64_t>(tokens.size()));
  return finish(image);
}

BlockHash hash_identity_block(const BlockHash* parent, uint64_t id, uint32_t sub, int64_t start, int64_t len,
                              const HashExtras& extras) {
  if (extras.empty()) {
    unsigned char buf[kHead + sizeof id + sizeof sub];
    const size_t head = put_head(buf, kIdentityBlockTag, parent);
    std::memcpy(buf + head, &id, sizeof id);
    std::memcpy(buf + head + sizeof id, &sub, sizeof sub);
    return finish(buf, sizeof buf);
  }
  auto& image = g_image;
  image.clear();
  image.push_back(kIdentityBlockTag);
  put_parent(image, parent);
  put(image, id);
  put(image, sub);
  put_extras(image, extras, start, len);
  return finish(image);
}

std::string to_hex(const BlockHash& h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.hi),
                static_cast<unsigned long long>(h.lo));
  return buf;
}

void BlockHashChain::reset(int32_t block_size, const HashExtras* extras) {
  block_size_ = block_size;
  extras_ = extras;
  hashes_.clear();
  runs_.clear();
  partial_.clear();
  num_tokens_ = 0;
}

void BlockHashChain::complete_block() {
  static const HashExtras kNone;
  const int64_t start = static_cast<int64_t>(hashes_.size()) * block_size_;
  hashes_.push_back(hash_token_block(parent(), partial_, start, extras_ ? *extras_ : kNone));
  partial_.clear();
}

void BlockHashChain::append_tokens(std::span<const int32_t> tokens) {
  static const HashExtras kNone;
  const size_t n = tokens.size();
  if (block_size_ <= 0) {  // no block ever completes (as before: tokens only accumulate)
    partial_.insert(partial_.end(), tokens.begin(), tokens.end());
    num_tokens_ += static_cast<int64_t>(n);
    return;
  }
  const size_t bs = static_cast<size_t>(block_size_);
  size_t i = 0;
  while (i < n) {
    if (partial_.empty() && n - i >= bs) {
      // A whole block in the input: hash it in place, no copy through partial_.
      const int64_t start = static_cast<int64_t>(hashes_.size()) * block_size_;
      const BlockHash h = hash_token_block(parent(), tokens.subspan(i, bs), start, extras_ ? *extras_ : kNone);
      hashes_.push_back(h);
      i += bs;
      continue;
    }
    const size_t take = std::min(bs - partial_.size(), n - i);
    partial_.insert(partial_.end(), tokens.begin() + static_cast<std::ptrdiff_t>(i),
                    tokens.begin() + static_cast<std::ptrdiff_t>(i + take));
    i += take;
    if (partial_.size() == bs) complete_block();
  }
  num_tokens_ += static_cast<int64_t>(n);
}

namespace {

// Sub-block k of an identity run whose base hash is `base`. For a fixed k
// this maps 128 bits to 128 bits bijectively (lo is a bijection of base.lo,
// hi a shift of base.hi), so distinct bases give distinct blocks, and the
// blocks of one run differ in both halves. One multiply chain instead of an
// XXH3 call over a 45-byte image: an identity trace hashes ~30 blocks per
// trace block.
BlockHash identity_sub_block(const BlockHash& base, uint64_t k) {
  return BlockHash{mix64(base.lo + (k + 1) * 0x9e3779b97f4a7c15ULL), base.hi + (k + 1) * 0xc2b2ae3d27d4eb4fULL};
}

}  // namespace

void BlockHashChain::append_identity(uint64_t id, int64_t len) {
  static const HashExtras kNone;
  const HashExtras& extras = extras_ ? *extras_ : kNone;
  int64_t off = 0;
  if (partial_.empty() && extras.empty() && len >= block_size_) {
    // The common case (trace blocks aligned with engine blocks, no extras):
    // the run of whole engine blocks is hashed once, from (parent, id), and
    // each block derived from that base. The run is recorded so that
    // consumers may treat it as one unit (IdealHitSource).
    const BlockHash base = hash_identity_block(parent(), id, kRunSub, static_cast<int64_t>(hashes_.size()) * block_size_,
                                               0, extras);
    const int64_t n = len / block_size_;
    const size_t first = hashes_.size();
    runs_.push_back({static_cast<uint32_t>(first), static_cast<uint32_t>(n)});
    hashes_.resize(first + static_cast<size_t>(n));
    BlockHash* out = hashes_.data() + first;
    for (int64_t k = 0; k < n; ++k) out[k] = identity_sub_block(base, static_cast<uint64_t>(k));
    off = n * block_size_;
    num_tokens_ += off;
  }
  while (off < len) {
    if (partial_.empty() && len - off >= block_size_) {
      // A whole engine block inside this identity: hash the identity itself.
      const int64_t start = static_cast<int64_t>(hashes_.size()) * block_size_;
      hashes_.push_back(hash_identity_block(parent(), id, static_cast<uint32_t>(off), start, block_size_, extras));
      off += block_size_;
      num_tokens_ += block_size_;
      continue;
    }
    // A block straddling identities, or the partial tail: synthetic tokens
    // that depend only on (id, offset), so equal ids give equal content.
    partial_.push_back(identity_token(id, off));
    ++off;
    ++num_tokens_;
    if (static_cast<int32_t>(partial_.size()) == block_size_) complete_block();
  }
}

}  // namespace prefixsim
