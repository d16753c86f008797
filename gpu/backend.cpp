#include "gpu/backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <xxhash.h>

#include "gpu/hd.h"
#include "sim/base/error.h"
#include "sim/engine/request.h"
#include "sim/engine/token_content.h"

namespace prefixsim::gpu {

class BackendExecutor final : public Executor {
 public:
  BackendExecutor(Backend& owner, Executor& modeled, int64_t num_blocks, int32_t block_size, uint32_t replica)
      : owner_(owner), modeled_(modeled), num_blocks_(num_blocks), block_size_(block_size), replica_(replica),
        runner_(owner.make_runner_(owner.cfg_.shape, num_blocks, block_size, owner.cfg_.seed)) {}
  ModelRunner* runner() { return runner_.get(); }

  TimeNs step_time(const Batch& batch) override {
    const StepCost c = step_cost(batch);
    return c.host + c.device;
  }

  StepCost step_cost(const Batch& batch) override {
    const double measured_ms = run(batch);
    const bool need_model = !owner_.cfg_.measured_time || owner_.cfg_.shadow;
    StepCost modeled{};
    if (need_model) modeled = modeled_.step_cost(batch);
    if (owner_.cfg_.shadow) {
      ShadowStep s;
      s.replica = replica_;
      s.step = step_;
      s.modeled_ms = static_cast<double>(modeled.device) / 1e6;
      s.measured_ms = measured_ms;
      s.shape = summarize(batch);
      owner_.stats_.shadow.push_back(s);
    }
    if (!owner_.cfg_.measured_time) return modeled;
    return {modeled.host, static_cast<TimeNs>(std::llround(measured_ms * 1e6))};
  }

  TimeNs request_latency(int64_t prompt_tokens) const override { return modeled_.request_latency(prompt_tokens); }

 private:
  // Runs the step on the runner; keeps the sampled requests' last rows.
  double run(const Batch& batch) {
    ++step_;
    if (batch.origins.size() != batch.seqs.size())
      throw InternalError("backend: a batch without sequence origins (only the scheduler's batches can run)");
    const PagedBatch pb = export_paged_batch(batch, block_size_, num_blocks_);
    tags_.clear();
    rows_.clear();
    kept_.clear();
    // Admissions first: one may evict a sample another sequence of this step
    // was admitted to, so the kept rows are looked up afterwards.
    const bool sampling = owner_.cfg_.check_requests > 0;
    keys_.assign(batch.seqs.size(), 0);
    for (size_t b = 0; b < batch.seqs.size(); ++b) {
      const Request* r = batch.origins[b].request;
      if (!r) throw InternalError("backend: a scheduled sequence without its request");
      if (!sampling || batch.seqs[b].num_new_tokens == 0) continue;
      keys_[b] = Backend::sample_key(*r);
      owner_.admit_sample(*r, keys_[b], replica_);
    }
    for (size_t b = 0; b < batch.seqs.size(); ++b) {
      const ScheduledSeq& q = batch.seqs[b];
      const SeqOrigin& o = batch.origins[b];
      const size_t first_tag = tags_.size();
      for (int64_t p = q.num_computed_tokens; p < q.num_computed_tokens + q.num_new_tokens; ++p)
        tags_.push_back(static_cast<uint32_t>(token_at(*o.request, owner_.tokens_, o.token_key, p)));
      if (!sampling || q.num_new_tokens == 0) continue;
      if (Backend::Sample* s = owner_.find_sample(*o.request, keys_[b])) {
        // Its tags as far as this step reaches: the step's own positions are
        // in tags_ already, earlier ones (cache hits) are looked up.
        const int64_t end = q.num_computed_tokens + q.num_new_tokens;
        for (int64_t p = static_cast<int64_t>(s->tags.size()); p < end; ++p)
          s->tags.push_back(p >= q.num_computed_tokens
                                ? tags_[first_tag + static_cast<size_t>(p - q.num_computed_tokens)]
                                : static_cast<uint32_t>(token_at(*o.request, owner_.tokens_, o.token_key, p)));
        rows_.push_back(pb.qo_indptr[b + 1] - 1);
        kept_.push_back({s, end - 1});
      }
    }
    const double ms = runner_->forward(pb, tags_, owner_.cfg_.seed, rows_, out_);
    if (owner_.replicas_[replica_].tee) owner_.after_step(replica_, pb);
    const size_t H = static_cast<size_t>(owner_.cfg_.shape.hidden);
    for (size_t i = 0; i < kept_.size(); ++i)
      kept_[i].sample->rows.push_back(
          {kept_[i].position, step_, std::vector<float>(out_.begin() + static_cast<std::ptrdiff_t>(i * H),
                                                        out_.begin() + static_cast<std::ptrdiff_t>((i + 1) * H))});
    owner_.stats_.steps += 1;
    owner_.stats_.tokens += pb.num_tokens();
    owner_.stats_.measured_ms += ms;
    return ms;
  }

  struct Kept {
    Backend::Sample* sample;
    int64_t position;
  };
  Backend& owner_;
  Executor& modeled_;
  int64_t num_blocks_;
  int32_t block_size_;
  uint32_t replica_;
  std::unique_ptr<ModelRunner> runner_;
  uint64_t step_ = 0;
  std::vector<uint64_t> tags_;
  std::vector<uint64_t> keys_;  // sample_key of each sequence of the step (when sampling)
  std::vector<int64_t> rows_;
  std::vector<Kept> kept_;
  std::vector<float> out_;
};

Backend::Backend(BackendConfig cfg, RunnerFactory make_runner) : cfg_(std::move(cfg)), make_runner_(std::move(make_runner)) {
  cfg_.shape.validate();
  if (cfg_.check_requests < 0) throw InputError("--backend-check: must not be negative");
}

Backend::~Backend() = default;

std::unique_ptr<Executor> Backend::wrap(Executor& modeled, BlockPool& pool, int32_t block_size, uint32_t replica) {
  block_size_ = block_size;
  auto exec = std::make_unique<BackendExecutor>(*this, modeled, pool.num_blocks(), block_size, replica);
  if (replicas_.size() <= replica) replicas_.resize(replica + 1);
  Replica& rep = replicas_[replica];
  rep.pool = &pool;
  rep.runner = exec->runner();
  rep.complete.assign(static_cast<size_t>(pool.num_blocks()), 0);
  return exec;
}

// Ahead of a replica pool's listener: which GPU block holds each cached
// hash. An evicted block's pending tier copies are taken before the block is
// reused, and an evict-mode tier behind copies it while `evicting` says so.
class BackendPoolTee final : public PoolListener {
 public:
  BackendPoolTee(Backend& owner, Backend::Replica& rep, PoolListener* next) : owner_(owner), rep_(rep), next_(next) {}
  void on_pool_cached(const BlockHash& h, uint32_t key) override {
    rep_.block_of[h] = rep_.pool->find(h);
    if (next_) next_->on_pool_cached(h, key);
  }
  void on_pool_evicted(const BlockHash& h, uint32_t key) override {
    auto it = rep_.block_of.find(h);
    const BlockId b = it == rep_.block_of.end() ? kNoBlock : it->second;
    if (b != kNoBlock) owner_.resolve_pending(rep_, [b](const Backend::Replica::Pending& p) { return p.block == b; });
    rep_.evicting = b;
    if (next_) next_->on_pool_evicted(h, key);
    rep_.evicting = kNoBlock;
    if (b != kNoBlock) rep_.complete[static_cast<size_t>(b)] = 0;  // about to hold other KV
    rep_.block_of.erase(h);
  }

 private:
  Backend& owner_;
  Backend::Replica& rep_;
  PoolListener* next_;
};

void Backend::listen_to_pools() {
  for (Replica& rep : replicas_) {
    if (rep.tee || !rep.pool) continue;
    rep.tee = std::make_unique<BackendPoolTee>(*this, rep, rep.pool->listener());
    rep.pool->set_listener(rep.tee.get());
  }
}

std::shared_ptr<const std::vector<float>> Backend::copy_block(Replica& rep, BlockId b) {
  auto data = std::make_shared<std::vector<float>>();
  rep.runner->read_block(b, *data);
  return data;
}

void Backend::resolve_pending(Replica& rep, const std::function<bool(const Replica::Pending&)>& which) {
  std::vector<Replica::Pending> left;
  for (const Replica::Pending& p : rep.pending) {
    if (!which(p)) {
      left.push_back(p);
      continue;
    }
    auto it = mirror_[p.tier].find(p.hash);
    if (it == mirror_[p.tier].end() || it->second) continue;  // evicted from the tier, or filled since
    it->second = copy_block(rep, p.block);
  }
  rep.pending.swap(left);
}

void Backend::after_step(uint32_t r, const PagedBatch& pb) {
  Replica& rep = replicas_[r];
  // A block is whole once a step has written its last slot (its slots are
  // written in order from slot 0: hits and loads are whole blocks).
  for (int64_t slot : pb.slot_mapping)
    rep.complete[static_cast<size_t>(slot / block_size_)] = slot % block_size_ == block_size_ - 1;
  // Every copy waiting for this step: its block holds the hash's KV now.
  resolve_pending(rep, [](const Replica::Pending&) { return true; });
}

void Backend::on_tier_stored(const KvTier& t, const BlockHash& h, const KvTier* from, uint32_t replica) {
  ++stats_.tier_stores;
  if (from) {  // moved down: the tier above still holds its copy (its eviction is told next)
    const Mirror& above = mirror_[from];
    auto it = above.find(h);
    if (it != above.end()) mirror_[&t][h] = it->second;
    return;
  }
  if (replica >= replicas_.size()) return;
  Replica& rep = replicas_[replica];
  auto it = rep.block_of.find(h);
  if (it == rep.block_of.end() || it->second == kNoBlock) return;  // no GPU block holds it: the tier gets no KV
  const BlockId b = it->second;
  if (b == rep.evicting) {  // evict-mode: the block is reused by the step about to run; copy it now
    mirror_[&t][h] = copy_block(rep, b);
    return;
  }
  // Cached by the step about to run (or a hit, or cached after its step):
  // copied once that step has run, or when the block is evicted first.
  mirror_[&t][h] = nullptr;
  rep.pending.push_back({b, &t, h});
}

void Backend::on_tier_evicted(const KvTier& t, const BlockHash& h) { mirror_[&t].erase(h); }

void Backend::on_tier_loaded(const KvTier& t, const BlockHash& h, BlockId b, uint32_t replica) {
  ++stats_.tier_loads;
  Replica& rep = replicas_.at(replica);
  const Mirror& m = mirror_[&t];
  auto it = m.find(h);
  if (it != m.end() && !it->second) {  // pending: its block may be whole already (cached after its step)
    for (Replica& src : replicas_)
      resolve_pending(src, [&](const Replica::Pending& p) {
        if (p.tier != &t || !(p.hash == h) || !src.complete[static_cast<size_t>(p.block)]) return false;
        auto at = src.block_of.find(h);
        return at != src.block_of.end() && at->second == p.block;
      });
  }
  if (it != m.end() && it->second) {
    rep.runner->write_block(b, *it->second);
  } else {
    const KvPoolLayout one = pool_layout_for(1, block_size_, cfg_.shape);  // a block's K and V of every layer
    rep.runner->write_block(b, std::vector<float>(static_cast<size_t>(2 * one.num_layers * one.block_elems()),
                                                  std::numeric_limits<float>::quiet_NaN()));
    if (stats_.tier_missing++ == 0) {
      char hash[40];
      std::snprintf(hash, sizeof hash, "%016llx%016llx", static_cast<unsigned long long>(h.hi),
                    static_cast<unsigned long long>(h.lo));
      stats_.first_missing = "replica " + std::to_string(replica) + " loaded block " + hash + " from tier " +
                             t.config().name + " into GPU block " + std::to_string(b) + ", but the tier was " +
                             (it != m.end() ? "given it before the step computing it had run"
                                            : "never given its KV (no GPU block held it, or it was evicted)");
    }
  }
  rep.complete[static_cast<size_t>(b)] = 1;
}

uint64_t Backend::sample_key(const Request& r) {
  uint64_t k = XXH3_64bits_withSeed(r.id.data(), r.id.size(), 0x636865636bULL);  // "check"
  k ^= static_cast<uint64_t>(r.arrival) * 0x9e3779b97f4a7c15ULL;
  k ^= static_cast<uint64_t>(r.prompt_len) * 0xbf58476d1ce4e5b9ULL;
  return splitmix64(k);
}

void Backend::admit_sample(const Request& r, uint64_t key, uint32_t replica) {
  if (samples_.count(key)) return;
  // Keys only leave from the top, so a request refused once stays refused.
  if (static_cast<int64_t>(samples_.size()) >= cfg_.check_requests) {
    if (key > samples_.rbegin()->first) return;
    samples_.erase(std::prev(samples_.end()));
  }
  Sample& s = samples_[key];
  s.id = r.id;
  s.replica = replica;
}

Backend::Sample* Backend::find_sample(const Request& r, uint64_t key) {
  auto it = samples_.find(key);
  return it != samples_.end() && it->second.id == r.id ? &it->second : nullptr;
}

void Backend::check_samples_shape(const ModelShape& shape) {
  std::string model;
  int tp = 0;
  if (!shape_catalog_model(shape, model, tp))
    throw InputError("--shadow-samples: shape " + shape.name + " is no catalog model's, so its samples could " +
                     "not calibrate one (use --backend-shape llama-3.1-8b or llama-3.1-70b-tp4)");
}

std::string Backend::shadow_samples_text(int32_t block_size, const std::string& date, const std::string& source) const {
  check_samples_shape(cfg_.shape);
  SamplesHeader h;
  shape_catalog_model(cfg_.shape, h.model, h.tp);
  h.gpu_name = cfg_.device.name;
  h.sm_count = cfg_.device.sm_count;
  h.cuda = cfg_.device.cuda;
  h.block_size = block_size;
  h.date = date;
  // One shard timed alone (shards_timed 1, the default): `calibrate` adds the all-reduce.
  h.runner = "prefixsim replay --backend " + cfg_.kind + " --shadow: random-weight " + cfg_.shape.name +
             " forward of each step as the replay scheduled it (no CUDA graphs, no lm_head or sampling), device " +
             "time of that one run, no L2 flush; " + source;
  std::string out = samples_header_text(h);
  for (const ShadowStep& s : stats_.shadow)
    if (s.measured_ms > 0) out += sample_row_text(to_string(step_kind_of(s.shape)), s.shape, s.measured_ms);
  return out;
}

BackendCheckResult Backend::check() {
  BackendCheckResult res;
  int64_t longest = 0;
  for (const auto& [key, s] : samples_) longest = std::max<int64_t>(longest, static_cast<int64_t>(s.tags.size()));
  if (stats_.tier_missing > 0)
    res.failure = "KV tier: " + stats_.first_missing + " (" + std::to_string(stats_.tier_missing) + " such loads)";
  if (samples_.empty() || longest == 0) return res;
  const int32_t bs = block_size_;
  const int64_t blocks = (longest + bs - 1) / bs + 1;  // and the null block
  std::unique_ptr<ModelRunner> fresh = make_runner_(cfg_.shape, blocks, bs, cfg_.seed);
  std::vector<BlockId> table;
  std::vector<float> out;
  const size_t H = static_cast<size_t>(cfg_.shape.hidden);
  for (const auto& [key, s] : samples_) {
    if (s.rows.empty()) continue;
    ++res.requests;
    res.ids.push_back(s.id);
    const int64_t len = static_cast<int64_t>(s.tags.size());
    table.clear();
    for (int64_t b = 1; b <= (len + bs - 1) / bs; ++b) table.push_back(static_cast<BlockId>(b));
    Batch one;
    one.seqs.push_back({len, 0, table});
    const PagedBatch pb = export_paged_batch(one, bs, blocks);
    std::vector<int64_t> rows;
    for (const Sample::Row& r : s.rows) rows.push_back(r.position);
    fresh->forward(pb, s.tags, cfg_.seed, rows, out);
    for (size_t i = 0; i < s.rows.size(); ++i) {
      const float* ref = out.data() + i * H;
      const std::vector<float>& got = s.rows[i].hidden;
      double num = 0, den = 0;
      for (size_t j = 0; j < H; ++j) {
        const double d = static_cast<double>(got[j]) - ref[j];
        num += d * d;
        den += static_cast<double>(ref[j]) * ref[j];
      }
      const double err = std::sqrt(num / std::max(den, 1e-30));
      ++res.rows;
      res.max_rel_error = std::max(res.max_rel_error, std::isnan(err) ? INFINITY : err);
      if (res.failure.empty() && !(err <= cfg_.tolerance)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.3g", err);
        char tol[32];
        std::snprintf(tol, sizeof tol, "%.3g", cfg_.tolerance);
        res.failure = "request " + s.id + " (replica " + std::to_string(s.replica) + "): the hidden state of position " +
                      std::to_string(s.rows[i].position) + ", computed in step " + std::to_string(s.rows[i].step) +
                      ", differs from the recompute without the cache by " + buf + " (relative L2; tolerance " + tol + ")";
      }
    }
  }
  return res;
}

}  // namespace prefixsim::gpu
