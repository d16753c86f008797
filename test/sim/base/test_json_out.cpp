// The strict UTF-8 check that guards every string bound for a JSON report.
#include <catch2/catch.hpp>

#include <string>

#include "sim/base/json_out.h"

using prefixsim::valid_utf8;

TEST_CASE("valid_utf8 accepts well-formed text of every sequence length", "[json][utf8]") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("llama-3.1-8b"));
  CHECK(valid_utf8("caf\xc3\xa9"));               // U+00E9, 2 bytes
  CHECK(valid_utf8("\xe2\x82\xac"));              // U+20AC, 3 bytes
  CHECK(valid_utf8("\xf0\x9f\x98\x80"));          // U+1F600, 4 bytes
  CHECK(valid_utf8("\xf4\x8f\xbf\xbf"));          // U+10FFFF, the last code point
}

TEST_CASE("valid_utf8 rejects what RFC 3629 forbids, not just broken lead/continuation structure",
          "[json][utf8]") {
  CHECK_FALSE(valid_utf8("\xff"));                 // never a UTF-8 byte
  CHECK_FALSE(valid_utf8("\xc3"));                 // truncated
  CHECK_FALSE(valid_utf8("\x80"));                 // a lone continuation byte
  CHECK_FALSE(valid_utf8("\xc0\xaf"));             // overlong '/'
  CHECK_FALSE(valid_utf8("\xe0\x80\xaf"));         // overlong, 3 bytes
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));         // a UTF-16 surrogate, U+D800
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));     // U+110000, past the last code point
  // Found by fuzzing the scenario YAML: a 4-byte form whose lead (0xF6) can
  // only encode values above U+10FFFF; a lead/continuation check passes it.
  CHECK_FALSE(valid_utf8("\xf6\x96\x96\x87" "0"));
}
