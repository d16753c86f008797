// The hash chain: prefixes, single-token changes, salts, LoRA and multimodal
// inputs isolate exactly the blocks vLLM's extra keys isolate.
#include <catch2/catch.hpp>
#include <numeric>

#include <xxhash.h>

#include "sim/kv/block_hash.h"

using namespace prefixsim;

namespace {
std::vector<BlockHash> chain_of(const std::vector<int32_t>& tokens, const HashExtras& extras, int32_t bs = 4) {
  BlockHashChain c(bs, &extras);
  c.append_tokens(tokens);
  return c.hashes();
}
std::vector<int32_t> iota_tokens(int n, int start = 1) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}
}  // namespace

TEST_CASE("only full blocks are hashed", "[hash]") {
  HashExtras none;
  CHECK(chain_of(iota_tokens(3), none).size() == 0);
  CHECK(chain_of(iota_tokens(4), none).size() == 1);
  CHECK(chain_of(iota_tokens(11), none).size() == 2);
}

TEST_CASE("the same block tokens under different prefixes hash differently", "[hash]") {
  HashExtras none;
  auto a = chain_of({1, 2, 3, 4, 9, 9, 9, 9}, none);
  auto b = chain_of({5, 6, 7, 8, 9, 9, 9, 9}, none);
  CHECK(a[1] != b[1]);
  // ...and identical prefixes give identical chains.
  CHECK(chain_of({1, 2, 3, 4, 9, 9, 9, 9}, none) == a);
}

TEST_CASE("a one-token change alters that block and every later one", "[hash]") {
  HashExtras none;
  auto base = iota_tokens(20);
  auto changed = base;
  changed[9] = 999;  // block 2 (tokens 8..11)
  auto a = chain_of(base, none), b = chain_of(changed, none);
  REQUIRE(a.size() == 5);
  CHECK(a[0] == b[0]);
  CHECK(a[1] == b[1]);
  for (size_t i = 2; i < 5; ++i) CHECK(a[i] != b[i]);
}

TEST_CASE("a cache salt isolates every block of the chain; an empty salt is no salt", "[hash]") {
  HashExtras none, salted, empty;
  salted.salt = "tenant-a";
  empty.salt = "";
  auto t = iota_tokens(16);
  auto a = chain_of(t, none), b = chain_of(t, salted), c = chain_of(t, empty);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] != b[i]);
  CHECK(a == c);
}

TEST_CASE("a LoRA id isolates every block", "[hash]") {
  HashExtras none, lora1, lora2;
  lora1.lora = 1;
  lora2.lora = 2;
  auto t = iota_tokens(12);
  auto a = chain_of(t, none), b = chain_of(t, lora1), c = chain_of(t, lora2);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i] != b[i]);
    CHECK(b[i] != c[i]);
  }
}

TEST_CASE("a multimodal hash isolates only the blocks its range covers (and, by chaining, later ones)", "[hash]") {
  HashExtras none, img_a, img_b;
  img_a.mm.push_back({BlockHash{1, 2}, 5, 3});  // tokens 5..7: block 1 only
  img_b.mm.push_back({BlockHash{3, 4}, 5, 3});
  auto t = iota_tokens(16);
  auto plain = chain_of(t, none), a = chain_of(t, img_a), b = chain_of(t, img_b);
  CHECK(plain[0] == a[0]);  // block 0 does not overlap the image
  CHECK(a[0] == b[0]);
  CHECK(a[1] != b[1]);      // the covered block differs by image content
  CHECK(plain[1] != a[1]);
  CHECK(a[2] != b[2]);      // later blocks differ through the chain
}

TEST_CASE("appending tokens incrementally gives the chain of the whole sequence", "[hash]") {
  HashExtras e;
  e.lora = 3;
  auto t = iota_tokens(37);
  BlockHashChain inc(8, &e);
  BlockHashChain one(8, &e);
  for (int32_t x : t) {
    inc.append_tokens(std::span<const int32_t>(&x, 1));
    one.append_token(x);
  }
  CHECK(inc.hashes() == chain_of(t, e, 8));
  CHECK(one.hashes() == inc.hashes());
  CHECK(inc.num_tokens() == 37);
  CHECK(one.num_tokens() == 37);
}

TEST_CASE("trace identities chain like tokens: equal ids give equal blocks, the tail is partial", "[hash][identity]") {
  HashExtras none;
  // Two requests sharing their first trace block (512 tokens) at engine block size 16.
  BlockHashChain a(16, &none), b(16, &none);
  a.append_identity(7, 512);
  a.append_identity(8, 100);
  b.append_identity(7, 512);
  b.append_identity(9, 512);
  REQUIRE(a.num_full_blocks() == 32 + 6);  // 100 = 6 full engine blocks + 4 tokens
  REQUIRE(b.num_full_blocks() == 64);
  for (int i = 0; i < 32; ++i) CHECK(a.hashes()[i] == b.hashes()[i]);
  CHECK(a.hashes()[32] != b.hashes()[32]);
  CHECK(a.num_tokens() == 612);
  // Decode tokens complete the partial tail by content.
  std::vector<int32_t> out(12, 5);
  a.append_tokens(out);
  CHECK(a.num_full_blocks() == 39);
}

TEST_CASE("an aligned identity is one run: its blocks depend on the run's first block alone", "[hash][identity]") {
  HashExtras none;
  BlockHashChain a(16, &none), b(16, &none), c(16, &none);
  a.append_identity(7, 512);
  a.append_identity(8, 100);  // partial: a run of 6 blocks, then 4 tokens
  b.append_identity(7, 512);
  b.append_identity(8, 512);
  c.append_identity(9, 512);
  c.append_identity(8, 512);  // same id under another parent
  REQUIRE(a.runs().size() == 2);
  CHECK(a.runs()[1].first == 32);
  CHECK(a.runs()[1].count == 6);
  for (int i = 0; i < 38; ++i) CHECK(a.hashes()[i] == b.hashes()[i]);
  CHECK(c.hashes()[32] != b.hashes()[32]);
  // b and c share no block.
  std::vector<BlockHash> all = b.hashes();
  all.insert(all.end(), c.hashes().begin(), c.hashes().end());
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      CHECK(all[i] != all[j]);
}

TEST_CASE("identities straddling engine blocks, or with extras, are hashed block by block, not as runs",
          "[hash][identity]") {
  HashExtras none, lora;
  lora.lora = 2;
  BlockHashChain misaligned(48, &none), extras(16, &lora), again(48, &none);
  misaligned.append_identity(7, 512);  // 10 blocks + 32 tokens: a run of 10
  misaligned.append_identity(8, 512);  // starts inside a block: no run
  again.append_identity(7, 512);
  again.append_identity(8, 512);
  extras.append_identity(7, 512);
  CHECK(misaligned.runs().size() == 1);
  CHECK(misaligned.hashes() == again.hashes());
  CHECK(misaligned.num_full_blocks() == 1024 / 48);
  CHECK(extras.runs().empty());
  CHECK(extras.num_full_blocks() == 32);
}

// The byte image a block hash covers is part of what users store (exported
// hashes, KV events): the fixed-buffer path taken without extras must hash
// exactly the image the general path builds, written out here by hand.
TEST_CASE("a block's hash is XXH3-128 of its tag, parent and content, with or without the fixed-buffer path",
          "[hash]") {
  auto image_hash = [](std::vector<unsigned char> image) {
    const XXH128_hash_t h = XXH3_128bits(image.data(), image.size());
    return BlockHash{h.low64, h.high64};
  };
  auto put = [](std::vector<unsigned char>& out, const auto& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  };
  const BlockHash parent{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  const HashExtras none;
  for (const uint32_t sub : {0u, 16u, UINT32_MAX}) {  // UINT32_MAX: a run's base
    std::vector<unsigned char> image = {'I'};
    put(image, parent.lo);
    put(image, parent.hi);
    put(image, uint64_t{1234567890123456789ULL});
    put(image, sub);
    CHECK(hash_identity_block(&parent, 1234567890123456789ULL, sub, 32, 16, none) == image_hash(image));
  }
  for (const int n : {1, 16, 64, 65, 200}) {  // 65 and 200 tokens: past the fixed buffer
    const auto tokens = iota_tokens(n, 7);
    std::vector<unsigned char> image = {'T'};
    put(image, none_hash().lo);
    put(image, none_hash().hi);
    for (const int32_t t : tokens) put(image, t);
    CHECK(hash_token_block(nullptr, tokens, 0, none) == image_hash(image));
  }
  // With extras, the image carries them after the content (LoRA here).
  HashExtras lora;
  lora.lora = 3;
  std::vector<unsigned char> image = {'T'};
  put(image, parent.lo);
  put(image, parent.hi);
  for (const int32_t t : iota_tokens(4)) put(image, t);
  image.push_back('L');
  put(image, int32_t{3});
  CHECK(hash_token_block(&parent, iota_tokens(4), 4, lora) == image_hash(image));
}
