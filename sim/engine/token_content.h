// What the token at a position of a request is, as the block manager's hash
// chain sees it: the prompt's token id, the synthetic token of a trace block
// identity (identity_token), or the k-th output token of the TokenSource.
// A real backend feeds its model an input derived from this value, so two
// blocks with equal hashes hold the KV of equal inputs (barring collisions),
// and the KV a cache hit reuses is the KV a recompute would produce.
#pragma once

#include <cstdint>

#include "sim/engine/request.h"
#include "sim/engine/scheduler.h"

namespace prefixsim {

// position in [0, prompt_len + output_len); `key` is tokens.prepare(r).
int32_t token_at(const Request& r, const TokenSource& tokens, uint64_t key, int64_t position);

}  // namespace prefixsim
