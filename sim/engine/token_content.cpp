#include "sim/engine/token_content.h"

#include "sim/base/error.h"
#include "sim/kv/block_hash.h"

namespace prefixsim {

int32_t token_at(const Request& r, const TokenSource& tokens, uint64_t key, int64_t position) {
  if (position < 0) throw InternalError("token_at: negative position");
  if (position >= r.prompt_len) return tokens.token(r, key, position - r.prompt_len);
  if (!r.identity_form()) return r.tokens[static_cast<size_t>(position)];
  const int64_t tbs = r.trace_block_size;
  return identity_token(r.hash_ids[static_cast<size_t>(position / tbs)], position % tbs);
}

}  // namespace prefixsim
