#include "sim/kv/ops_runner.h"

#include <istream>
#include <ostream>
#include <unordered_map>

#include "sim/kv/block_hash.h"
#include "sim/base/json_fields.h"
#include "sim/base/json_out.h"
#include "sim/kv/kv_cache_manager.h"

namespace prefixsim {
namespace {

constexpr int64_t kMaxBlockSize = 4096;
constexpr int64_t kMaxNumBlocks = int64_t{1} << 28;  // 268M blocks: past any real GPU pool

struct LiveRequest {
  HashExtras extras;
  BlockHashChain chain;
  int64_t num_tokens = 0;
  int64_t num_computed = 0;
  KvSeq seq;
};

void append_state(std::string& out, const KvSeq& seq, const BlockPool& pool, bool with_blocks) {
  if (with_blocks) {
    out += ",\"blocks\":";
    append_int_array<BlockId>(out, seq.blocks);
  }
  out += ",\"num_free\":";
  append_int(out, pool.num_free());
  out += ",\"usage\":";
  append_double(out, pool.usage());
}

}  // namespace

OpsResult run_ops(std::istream& in, const std::string& file, std::ostream& out, const OpsOptions& opts) {
  std::unique_ptr<BlockPool> pool;
  std::unique_ptr<KvCacheManager> kv;
  std::unordered_map<std::string, LiveRequest> live;
  uint64_t admitted_queries = 0, admitted_hits = 0;
  int32_t block_size = 0;
  std::vector<int32_t> tokens;
  std::string buf;  // the whole output; written only if the script is good
  OpsResult result;

  for_each_json_line(in, file, [&](const JsonLine& line) {
    const std::string op = line.get_string("op");
    if (op == "config") {
      if (pool) line.fail("a second config line (config must be the first line, once)");
      line.reject_unknown_keys({"op", "num_blocks", "block_size", "enable_caching"});
      const int64_t n = line.get_int("num_blocks", 2, kMaxNumBlocks);
      block_size = static_cast<int32_t>(line.get_int("block_size", 1, kMaxBlockSize));
      const bool caching = line.has("enable_caching") ? line.get_bool("enable_caching") : true;
      pool = std::make_unique<BlockPool>(static_cast<int32_t>(n), caching, opts.make_policy());
      kv = std::make_unique<KvCacheManager>(block_size, *pool);
      buf += "{\"op\":\"config\",\"num_blocks\":";
      append_int(buf, n);
      buf += ",\"block_size\":";
      append_int(buf, block_size);
      buf += caching ? ",\"enable_caching\":true}\n" : ",\"enable_caching\":false}\n";
    } else if (!pool) {
      line.fail("the first line must be the config op");
    } else if (op == "arrive") {
      line.reject_unknown_keys({"op", "req", "tokens", "salt", "lora"});
      const std::string id = line.get_string("req");
      if (live.count(id)) line.fail("request '" + id + "' arrived again while it is still live");
      line.get_tokens("tokens", tokens);
      if (tokens.empty()) line.fail("field 'tokens' must not be empty");
      LiveRequest r;
      if (line.has("salt")) r.extras.salt = line.get_string("salt");
      if (line.has("lora")) r.extras.lora = static_cast<int32_t>(line.get_int("lora", 0, 0x7fffffff));
      auto [it, inserted] = live.emplace(id, std::move(r));
      LiveRequest& req = it->second;
      req.chain.reset(block_size, &req.extras);
      if (pool->caching_enabled()) req.chain.append_tokens(tokens);
      req.num_tokens = static_cast<int64_t>(tokens.size());
      const LookupResult hit = kv->lookup(req.chain, req.num_tokens, false);
      const bool ok = kv->allocate(req.seq, req.chain, req.num_tokens, 0, req.num_tokens - hit.hit_tokens, hit.blocks,
                                   hit.hit_tokens, true);
      buf += "{\"op\":\"arrive\",\"req\":";
      append_json_string(buf, id);
      buf += ",\"cached_tokens\":";
      append_int(buf, hit.hit_tokens);
      append_state(buf, req.seq, *pool, true);
      buf += ok ? ",\"rejected\":false}\n" : ",\"rejected\":true}\n";
      if (ok) {
        req.num_computed = req.num_tokens;
        if (pool->caching_enabled()) {
          admitted_queries += static_cast<uint64_t>(req.num_tokens);
          admitted_hits += static_cast<uint64_t>(hit.hit_tokens);
        }
      } else {
        live.erase(it);  // a rejected arrive leaves no state
      }
    } else if (op == "append") {
      line.reject_unknown_keys({"op", "req", "tokens"});
      const std::string id = line.get_string("req");
      auto it = live.find(id);
      if (it == live.end()) line.fail("append to request '" + id + "', which is not live");
      line.get_tokens("tokens", tokens);
      LiveRequest& req = it->second;
      if (pool->caching_enabled()) req.chain.append_tokens(tokens);
      req.num_tokens += static_cast<int64_t>(tokens.size());
      const bool ok = kv->allocate(req.seq, req.chain, req.num_tokens, req.num_computed,
                                   req.num_tokens - req.num_computed, {}, 0, false);
      if (ok) req.num_computed = req.num_tokens;
      buf += "{\"op\":\"append\",\"req\":";
      append_json_string(buf, id);
      append_state(buf, req.seq, *pool, true);
      buf += ok ? ",\"rejected\":false}\n" : ",\"rejected\":true}\n";
    } else if (op == "finish") {
      line.reject_unknown_keys({"op", "req"});
      const std::string id = line.get_string("req");
      auto it = live.find(id);
      if (it != live.end()) {  // finishing an unknown id does nothing
        kv->free(it->second.seq);
        live.erase(it);
      }
      buf += "{\"op\":\"finish\",\"req\":";
      append_json_string(buf, id);
      KvSeq none;
      append_state(buf, none, *pool, false);
      buf += "}\n";
    } else {
      line.fail("unknown op '" + op + "' (expected config, arrive, append or finish)");
    }
    ++result.ops;
    if (opts.check_invariants) {
      const std::string broken = pool->check_invariants();
      if (!broken.empty())
        throw InternalError(line.where() + ": block pool invariant violated after op '" + op +
                            "': " + broken);
    }
  });
  if (!pool) throw InputError(file + ":1: empty script (the first line must be the config op)");
  const PrefixCacheStats& s = kv->stats();
  buf += "{\"op\":\"summary\",\"queries\":";
  append_int(buf, static_cast<int64_t>(s.queries));
  buf += ",\"hits\":";
  append_int(buf, static_cast<int64_t>(s.hits));
  buf += ",\"requests\":";
  append_int(buf, static_cast<int64_t>(s.requests));
  buf += ",\"evictions\":";
  append_int(buf, static_cast<int64_t>(pool->evictions()));
  buf += ",\"admitted_queries\":";
  append_int(buf, static_cast<int64_t>(admitted_queries));
  buf += ",\"admitted_hits\":";
  append_int(buf, static_cast<int64_t>(admitted_hits));
  buf += "}\n";
  out << buf;
  out.flush();
  return result;
}

}  // namespace prefixsim
