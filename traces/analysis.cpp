#include "traces/analysis.h"

#include <algorithm>
// GCC 12 reports boost::optional inside Boost.Graph's edge iterator as maybe
// uninitialized (a known false positive); silence it for these headers only.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)  // clang has no such warning (and -Werror rejects the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#pragma GCC diagnostic pop
#include <cmath>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>

#include "sim/kv/block_pool.h"
#include "sim/base/error.h"
#include "sim/engine/cache_replay.h"
#include "traces/hot_prefixes.h"

namespace prefixsim {

// Named, not anonymous: PrefixAnalyzer::Impl holds these types, and gcc
// rejects (-Wsubobject-linkage) a class with internal-linkage members when a
// unity build includes this file.
namespace analysis_internal {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// hash -> vertex id, flat open addressing with linear probing; slots hold only
// vertex ids (the key is read from the per-vertex hash vector), so a slot
// costs 4 bytes and a lookup allocates nothing.
class VertexTable {
 public:
  explicit VertexTable(const std::vector<BlockHash>& keys) : keys_(keys) { slots_.assign(1024, kNone); }
  // The vertex of h, or kNone; `slot` receives where to insert it.
  uint32_t find(const BlockHash& h, size_t& slot) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = h.lo & mask;; i = (i + 1) & mask) {
      const uint32_t v = slots_[i];
      if (v == kNone || keys_[v] == h) {
        slot = i;
        return v;
      }
    }
  }
  // keys_[v] must already hold the key.
  void insert_at(size_t slot, uint32_t v) {
    slots_[slot] = v;
    if (++size_ * 2 > slots_.size()) grow();
  }

 private:
  void grow() {
    std::vector<uint32_t> old(slots_.size() * 2, kNone);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (uint32_t v : old) {
      if (v == kNone) continue;
      size_t i = keys_[v].lo & mask;
      while (slots_[i] != kNone) i = (i + 1) & mask;
      slots_[i] = v;
    }
  }
  const std::vector<BlockHash>& keys_;
  std::vector<uint32_t> slots_;
  size_t size_ = 0;
};

// Counts of live "last access" stamps, for stack distances: the number of
// distinct blocks touched since stamp s is (live stamps > s). A Fenwick tree
// over stamps, rebuilt in O(n) when time runs past it: after the live stamps
// are renumbered 1..L when they fill at most half of it, else at twice the size.
class StampCounter {
 public:
  StampCounter() { tree_.assign(1 << 16, 0); }
  void add(uint64_t stamp, int32_t delta) {
    for (uint64_t i = stamp; i < tree_.size(); i += i & (~i + 1)) tree_[i] += delta;
  }
  int64_t prefix(uint64_t stamp) const {
    int64_t s = 0;
    for (uint64_t i = stamp; i > 0; i -= i & (~i + 1)) s += tree_[i];
    return s;
  }
  uint64_t capacity() const { return tree_.size() - 1; }
  // Rebuild with room for stamps up to `need`, from every live stamp.
  void grow(uint64_t need, const std::vector<uint64_t>& live_stamps) {
    size_t n = tree_.size();
    while (n - 1 < need) n *= 2;
    tree_.assign(n, 0);
    for (uint64_t s : live_stamps)
      if (s) ++tree_[s];
    for (size_t i = 1; i < n; ++i) {
      const size_t j = i + (i & (~i + 1));
      if (j < n) tree_[j] += tree_[i];
    }
  }

 private:
  std::vector<int32_t> tree_;
};

int bucket_of(int64_t d) {
  int k = 0;
  while (d > 0) {
    d >>= 1;
    ++k;
  }
  return k;  // 0 -> 0, 1 -> 1, 2..3 -> 2, 4..7 -> 3, ...
}

// One request at a time through cache mode's replayer (sim/engine/cache_replay.h):
// the same request-alone replay as `replay --mode cache` and `compare`, so the
// LRU check and those commands cannot drift apart.
class LruReplay {
 public:
  LruReplay(int32_t block_size, int64_t num_blocks, std::unique_ptr<EvictionPolicy> policy)
      : block_size_(block_size), rep_(block_size, num_blocks, std::move(policy)) {
    r_.num_blocks = num_blocks;
  }
  void add(const Request& req) {
    chain_.reset(block_size_, &req.extras);
    req.append_prompt_to(chain_);
    const int64_t total = req.kv_len();  // the computed tokens: prompt and outputs but the last
    outputs_.resize(static_cast<size_t>(total - req.prompt_len));
    const uint64_t out_key = req.output_key();
    for (size_t k = 0; k < outputs_.size(); ++k) outputs_[k] = req.output_token(out_key, static_cast<int64_t>(k));
    chain_.append_tokens(outputs_);
    rep_.step(chain_.hashes(), req.prompt_len, req.prompt_len + req.output_len);
  }
  LruCheck result() const {
    const CacheReplayResult& t = rep_.totals();
    LruCheck r = r_;
    r.requests = t.requests;
    r.refused = t.refused_requests;  // need more blocks than the whole pool
    r.prompt_tokens = t.prompt_tokens;
    r.hit_tokens = t.hit_tokens;
    r.hit_rate = r.prompt_tokens ? static_cast<double>(r.hit_tokens) / static_cast<double>(r.prompt_tokens) : 0;
    return r;
  }

 private:
  int32_t block_size_;
  CacheReplayer rep_;
  BlockHashChain chain_;
  std::vector<int32_t> outputs_;
  LruCheck r_;
};

using Forest = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

}  // namespace analysis_internal

using namespace analysis_internal;

LruCheck lru_hit_rate(RequestSource& src, int32_t block_size, int64_t num_blocks,
                      std::unique_ptr<EvictionPolicy> policy) {
  if (num_blocks < 2) throw InputError("the LRU check needs at least 2 blocks");
  LruReplay replay(block_size, num_blocks, std::move(policy));
  Request r;
  while (src.next(r)) replay.add(r);
  return replay.result();
}

struct PrefixAnalyzer::Impl {
  AnalysisOptions opts;
  TraceAnalysis a;
  std::unique_ptr<LruReplay> lru;

  // Per vertex (distinct block), indexed by vertex id.
  std::vector<BlockHash> hash;
  std::vector<uint32_t> parent;     // kNone for a first block
  std::vector<uint32_t> depth;      // position in the chain
  std::vector<uint64_t> reuse;      // lookups that hit it
  std::vector<uint32_t> first_req;  // index of the request that created it
  std::vector<uint64_t> stamp;      // last access time, 0 = never
  std::vector<uint64_t> window_of;  // 1 + last window it was counted in
  VertexTable table{hash};
  StampCounter stamps;
  uint64_t clock = 0;
  std::vector<int64_t> hit_tokens_at_max_distance;  // the LRU curve's histogram
  std::vector<std::string> request_ids;             // only of requests that created a vertex

  // Scratch, reused across requests.
  BlockHashChain chain;
  std::vector<int32_t> outputs;
  std::vector<uint32_t> verts;
  std::vector<int64_t> dist;  // -1 = cold

  TimeNs first_arrival = 0, last_arrival = 0;
  bool have_window = false;
  uint64_t cur_window = 0;
  WindowStat win;

  Forest forest;
  uint32_t hottest_vertex = kNone;

  void add(const Request& r);
  TraceAnalysis finish();
  // Gives the live stamps the values 1..L in their order; returns L.
  uint64_t renumber_stamps() {
    std::vector<std::pair<uint64_t, uint32_t>> live;  // (stamp, vertex)
    live.reserve(stamp.size());
    for (size_t v = 0; v < stamp.size(); ++v)
      if (stamp[v]) live.emplace_back(stamp[v], static_cast<uint32_t>(v));
    std::sort(live.begin(), live.end());
    for (size_t i = 0; i < live.size(); ++i) stamp[live[i].second] = i + 1;
    return live.size();
  }
  void flush_window() {
    if (have_window) a.windows.push_back(win);
  }
};

PrefixAnalyzer::PrefixAnalyzer(const AnalysisOptions& opts, std::unique_ptr<EvictionPolicy> lru_policy)
    : impl_(std::make_unique<Impl>()) {
  if (opts.block_size <= 0) throw InputError("--block-size must be positive");
  if (!(opts.window_s > 0)) throw InputError("the working-set window must be positive");
  impl_->opts = opts;
  impl_->a.block_size = opts.block_size;
  impl_->a.window_s = opts.window_s;
  if (opts.lru_num_blocks > 0) {
    if (!lru_policy) throw InternalError("PrefixAnalyzer: lru_num_blocks without a policy");
    if (opts.lru_num_blocks < 2) throw InputError("the LRU check needs at least 2 blocks");
    impl_->lru = std::make_unique<LruReplay>(opts.block_size, opts.lru_num_blocks, std::move(lru_policy));
  }
}

PrefixAnalyzer::~PrefixAnalyzer() = default;

void PrefixAnalyzer::add(const Request& r) { impl_->add(r); }
TraceAnalysis PrefixAnalyzer::finish() { return impl_->finish(); }

void PrefixAnalyzer::Impl::add(const Request& r) {
  const int64_t B = opts.block_size;
  if (a.requests_not_analyzed > 0) {  // past the memory cap: counted, not analyzed
    ++a.requests_not_analyzed;
    return;
  }
  // The blocks the request computes, as the ideal hit rate and cache mode
  // count them (Request::kv_len): its prompt, then its outputs but the last,
  // so a conversation re-sending an earlier answer hits it.
  chain.reset(opts.block_size, &r.extras);
  r.append_prompt_to(chain);
  outputs.resize(static_cast<size_t>(r.kv_len() - r.prompt_len));
  const uint64_t out_key = r.output_key();
  for (size_t k = 0; k < outputs.size(); ++k) outputs[k] = r.output_token(out_key, static_cast<int64_t>(k));
  chain.append_tokens(outputs);
  const auto& hs = chain.hashes();
  const size_t nf = hs.size();
  if (hash.size() + nf > opts.max_distinct_blocks) {  // near the cap: count the blocks it would create
    size_t fresh = 0;
    for (const BlockHash& h : hs) {
      size_t slot = 0;
      fresh += table.find(h, slot) == kNone ? 1 : 0;  // a block repeated within the request counts twice: safe side
    }
    if (hash.size() + fresh > opts.max_distinct_blocks) {
      a.requests_not_analyzed = 1;
      return;
    }
  }

  const uint64_t req_index = a.requests++;
  if (req_index == 0) first_arrival = r.arrival;
  last_arrival = std::max(last_arrival, r.arrival);
  a.prompt_tokens += r.prompt_len;
  a.output_tokens += r.output_len;
  a.prompt_blocks += static_cast<uint64_t>((r.prompt_len + B - 1) / B);
  a.largest_request_blocks = std::max(a.largest_request_blocks, (r.kv_len() + B - 1) / B);
  if (lru) lru->add(r);
  const size_t max_hit = r.prompt_len > 0 ? std::min(nf, static_cast<size_t>((r.prompt_len - 1) / B)) : 0;
  a.block_accesses += nf;

  // Find or create the vertices; the ideal cache hits the leading ones that
  // existed before this request.
  verts.resize(nf);
  dist.resize(nf);
  size_t hits = 0;
  bool run = true, created = false;
  const int64_t live_before = static_cast<int64_t>(hash.size());
  for (size_t i = 0; i < nf; ++i) {
    size_t slot = 0;
    uint32_t v = table.find(hs[i], slot);
    if (v == kNone) {
      v = static_cast<uint32_t>(hash.size());
      hash.push_back(hs[i]);
      parent.push_back(i ? verts[i - 1] : kNone);
      depth.push_back(static_cast<uint32_t>(i));
      reuse.push_back(0);
      first_req.push_back(0);
      stamp.push_back(0);
      window_of.push_back(0);
      table.insert_at(slot, v);
      if (!created) request_ids.push_back(r.id);  // ids kept only of requests that created blocks
      created = true;
      first_req.back() = static_cast<uint32_t>(request_ids.size() - 1);
      run = false;
    } else if (run && i < max_hit) {
      ++hits;
      ++reuse[v];
    } else {
      run = false;
    }
    verts[i] = v;
    // Stack distance against the state before this request.
    dist[i] = stamp[v] ? live_before - stamps.prefix(stamp[v]) : -1;
  }
  a.ideal_hit_blocks += hits;
  a.ideal_hit_tokens += static_cast<int64_t>(hits) * B;

  // Reuse distances of every access; the LRU curve counts block i of the
  // lookup as a hit at capacity C when max(d_0..d_i) < C.
  int64_t running_max = 0;
  bool reachable = true;
  for (size_t i = 0; i < nf; ++i) {
    if (dist[i] < 0) {
      ++a.cold_accesses;
      reachable = false;
      continue;
    }
    const size_t b = static_cast<size_t>(bucket_of(dist[i]));
    if (a.reuse_distance_log2.size() <= b) a.reuse_distance_log2.resize(b + 1, 0);
    ++a.reuse_distance_log2[b];
    if (!reachable || i >= max_hit) continue;
    running_max = std::max(running_max, dist[i]);
    const size_t m = static_cast<size_t>(running_max);
    if (hit_tokens_at_max_distance.size() <= m) hit_tokens_at_max_distance.resize(m + 1, 0);
    hit_tokens_at_max_distance[m] += B;
  }

  // New stamps, last block first: block 0 ends up most recent (vLLM frees a
  // block table last to first, so a request's tail is evicted first).
  if (clock + nf > stamps.capacity()) {
    // Time runs on with every access (377 M on the claude-code trace) while
    // the live stamps are one per distinct block (14 M there): renumber them
    // 1..L in order instead of growing the tree with the clock. Only the
    // order of stamps enters a stack distance, so results are unchanged and
    // the tree stays within ~4x the distinct blocks (it was sized by the
    // number of accesses: 2 GiB of the 5.9 GB analyze took on that trace).
    if ((static_cast<uint64_t>(hash.size()) + nf) * 2 <= stamps.capacity()) clock = renumber_stamps();
    stamps.grow(clock + nf, stamp);  // rebuilds at the same size after a renumbering
  }
  for (size_t i = nf; i-- > 0;) {
    const uint32_t v = verts[i];
    if (stamp[v]) stamps.add(stamp[v], -1);
    stamp[v] = ++clock;
    stamps.add(stamp[v], +1);
  }

  // Working set per window.
  const double t = static_cast<double>(r.arrival - first_arrival) * 1e-9;
  const uint64_t w = static_cast<uint64_t>(std::max(0.0, std::floor(t / opts.window_s)));
  if (!have_window || w > cur_window) {
    flush_window();
    have_window = true;
    cur_window = w;
    win = WindowStat{static_cast<double>(w) * opts.window_s, 0, 0};
  }
  ++win.requests;
  for (uint32_t v : verts) {
    if (window_of[v] != cur_window + 1) {
      window_of[v] = cur_window + 1;
      ++win.blocks;
    }
  }
}

TraceAnalysis PrefixAnalyzer::Impl::finish() {
  flush_window();
  have_window = false;
  const int64_t B = opts.block_size;
  a.unique_blocks = hash.size();
  a.ideal_hit_rate =
      a.prompt_tokens ? static_cast<double>(a.ideal_hit_tokens) / static_cast<double>(a.prompt_tokens) : 0;
  a.ideal_block_hit_rate =
      a.prompt_blocks ? static_cast<double>(a.ideal_hit_blocks) / static_cast<double>(a.prompt_blocks) : 0;
  a.span_s = static_cast<double>(last_arrival - first_arrival) * 1e-9;

  // The prefix forest: edge parent -> child for every non-first block.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  edges.reserve(hash.size());
  for (uint32_t v = 0; v < hash.size(); ++v)
    if (parent[v] != kNone) edges.emplace_back(parent[v], v);
  forest = Forest(edges.begin(), edges.end(), hash.size());
  std::vector<std::pair<uint32_t, uint32_t>>().swap(edges);

  // Hottest prefixes: maximal ones, by tokens saved (traces/hot_prefixes.h).
  const std::vector<RankedPrefix> best = rank_hot_prefixes(parent, depth, reuse, B, opts.top_k, kNone);
  for (const auto& [saved, v] : best) {  // tokens saved, the prefix's last vertex
    HotPrefix h;
    h.depth_blocks = depth[v] + 1;
    h.tokens = static_cast<int64_t>(h.depth_blocks) * B;
    h.reuse = reuse[v];
    h.tokens_saved = saved;
    h.first_request = request_ids[first_req[v]];
    h.hash = to_hex(hash[v]);
    a.hottest.push_back(h);
  }
  hottest_vertex = best.empty() ? kNone : best.front().vertex;

  // LRU curve: hit tokens at capacity C = sum of the histogram below C.
  const auto& hist = hit_tokens_at_max_distance;
  std::vector<int64_t> cum(hist.size() + 1, 0);  // cum[C] = hit tokens with C blocks
  for (size_t i = 0; i < hist.size(); ++i) cum[i + 1] = cum[i] + hist[i];
  auto rate_at = [&](size_t c) {
    const int64_t h = cum[std::min(c, cum.size() - 1)];
    return a.prompt_tokens ? static_cast<double>(h) / static_cast<double>(a.prompt_tokens) : 0.0;
  };
  // Powers of two up to the capacity where the curve saturates (no larger
  // cache hits more), then that capacity itself.
  const size_t saturation = std::max<size_t>(cum.size() - 1, 1);
  for (size_t c = 1; c < saturation; c *= 2) a.lru_curve.push_back({static_cast<int64_t>(c), rate_at(c)});
  a.lru_curve.push_back({static_cast<int64_t>(saturation), rate_at(saturation)});
  if (opts.tier_gpu_blocks > 0) {  // CPU tiers of 0, G/4, G/2, G, 2G, ... until nothing more hits
    const size_t g = static_cast<size_t>(opts.tier_gpu_blocks);
    a.tier_gpu_blocks = opts.tier_gpu_blocks;
    a.tier_curve.push_back({0, rate_at(g), rate_at(g)});
    for (size_t c = std::max<size_t>(g / 4, 1);; c *= 2) {
      a.tier_curve.push_back({static_cast<int64_t>(c), rate_at(std::max(g, c)), rate_at(g + c)});
      if (g + c >= saturation && c >= saturation) break;
    }
  }
  auto budget = [&](double target, double need_tokens) {
    BudgetPoint p;
    p.target = target;
    if (a.prompt_tokens > 0) {
      auto it = std::lower_bound(cum.begin(), cum.end(), need_tokens,
                                 [](int64_t h, double x) { return static_cast<double>(h) < x; });
      if (it != cum.end()) {
        p.cache_blocks = static_cast<int64_t>(it - cum.begin());
        // A pool holds a running request's blocks all at once (vLLM refuses
        // a larger request): no budget is below the largest one.
        if (*p.cache_blocks < a.largest_request_blocks) {
          p.cache_blocks = a.largest_request_blocks;
          p.raised_to_largest_request = true;
        }
      }
    }
    return p;
  };
  for (double target : opts.targets) {
    a.kv_budget.push_back(budget(target, target * static_cast<double>(a.prompt_tokens)));
    a.kv_budget_of_ideal.push_back(budget(target, target * static_cast<double>(a.ideal_hit_tokens)));
  }
  if (lru) a.lru_check = lru->result();
  return a;
}

void PrefixAnalyzer::write_graphviz(std::ostream& out, size_t max_nodes) const {
  const Impl& m = *impl_;
  const int64_t B = m.opts.block_size;
  using Drawn = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Drawn g;
  std::vector<std::string> labels;
  if (m.hottest_vertex == kNone) {
    boost::write_graphviz(out, g);
    return;
  }
  uint32_t root = m.hottest_vertex;
  while (m.parent[root] != kNone) root = m.parent[root];

  auto hot_children = [&](uint32_t v, std::vector<uint32_t>& hot, uint64_t& cold) {
    hot.clear();
    cold = 0;
    for (auto [e, end] = boost::out_edges(v, m.forest); e != end; ++e) {
      const uint32_t c = static_cast<uint32_t>(boost::target(*e, m.forest));
      if (m.reuse[c] > 0) hot.push_back(c);
      else ++cold;
    }
    std::sort(hot.begin(), hot.end(), [&](uint32_t x, uint32_t y) {
      return m.reuse[x] != m.reuse[y] ? m.reuse[x] > m.reuse[y] : x < y;
    });
  };
  // Breadth first from the root; each drawn node is a unary chain of equal reuse.
  std::queue<std::pair<uint32_t, size_t>> todo;  // (first vertex of chain, drawn parent or -1)
  todo.emplace(root, SIZE_MAX);
  std::vector<uint32_t> hot;
  uint64_t cold = 0;
  while (!todo.empty()) {
    auto [start, from] = todo.front();
    todo.pop();
    uint32_t end = start;
    for (;;) {
      hot_children(end, hot, cold);
      if (hot.size() == 1 && cold == 0 && m.reuse[hot[0]] == m.reuse[start]) end = hot[0];
      else break;
    }
    const size_t node = boost::add_vertex(g);
    std::ostringstream l;
    const uint32_t d0 = m.depth[start], d1 = m.depth[end];
    l << "blocks " << d0 << (d1 > d0 ? "-" + std::to_string(d1) : "") << " (tokens " << d0 * B << "-"
      << (d1 + 1) * B - 1 << ")\\nreuse " << m.reuse[start];
    labels.push_back(l.str());
    if (from != SIZE_MAX) boost::add_edge(from, node, g);
    // Chain nodes already queued are always drawn; extra nodes only while the
    // drawing is under max_nodes, so it stays readable.
    auto room = [&](size_t extra) { return boost::num_vertices(g) + todo.size() + extra <= max_nodes; };
    if (cold > 0 && room(1)) {
      const size_t c = boost::add_vertex(g);
      labels.push_back(std::to_string(cold) + " unshared continuation" + (cold > 1 ? "s" : ""));
      boost::add_edge(node, c, g);
    }
    size_t skipped = 0;
    for (uint32_t h : hot) {
      if (room(2)) todo.emplace(h, node);  // keep one slot for a "not drawn" marker
      else ++skipped;
    }
    if (skipped > 0 && room(1)) {
      const size_t more = boost::add_vertex(g);
      labels.push_back(std::to_string(skipped) + " shared branch" + (skipped > 1 ? "es" : "") + " not drawn");
      boost::add_edge(node, more, g);
    }
  }
  boost::write_graphviz(out, g, boost::make_label_writer(labels.data()));
}

TraceAnalysis analyze_trace(RequestSource& src, const AnalysisOptions& opts,
                            std::unique_ptr<EvictionPolicy> lru_policy) {
  PrefixAnalyzer an(opts, std::move(lru_policy));
  Request r;
  while (src.next(r)) an.add(r);
  return an.finish();
}

}  // namespace prefixsim
