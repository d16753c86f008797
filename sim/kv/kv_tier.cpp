#include "sim/kv/kv_tier.h"

#include <algorithm>
#include <cmath>

#include "sim/base/error.h"

namespace prefixsim {

namespace {
const BlockHash kNoHash{};  // keyed runs name blocks by key; their hash is not needed

TimeNs transfer_time(uint64_t bytes, double bytes_per_s) {
  if (bytes_per_s <= 0) return 0;
  return static_cast<TimeNs>(std::llround(static_cast<double>(bytes) / bytes_per_s * 1e9));
}
}  // namespace

// A bounded tier's pool tells the tier of each victim, which moves it down.
class KvTier::Forward final : public PoolListener {
 public:
  explicit Forward(KvTier& t) : t_(t) {}
  void on_pool_evicted(const BlockHash& h, uint32_t key) override {
    ++t_.stats_.evicted_blocks;
    --t_.cached_;
    if (t_.below_) {
      t_.below_->moving_from_ = &t_;
      t_.below_->store(h, key, t_.storing_ready_);
      t_.below_->moving_from_ = nullptr;
    }
    if (t_.observer_) t_.observer_->on_tier_evicted(t_, h);
  }

 private:
  KvTier& t_;
};

KvTier::KvTier(KvTierConfig cfg, std::unique_ptr<EvictionPolicy> policy, uint32_t num_keys)
    : cfg_(std::move(cfg)), keyed_(num_keys > 0) {
  if (cfg_.bytes_per_block <= 0) throw InternalError("kv tier " + cfg_.name + ": bytes per block unset");
  if (cfg_.capacity_blocks == kUnboundedTier) {
    if (keyed_) ready_.assign(num_keys, -1);
    return;
  }
  if (cfg_.capacity_blocks < 1)
    throw InputError("kv tier " + cfg_.name + ": its size holds no block of " + std::to_string(cfg_.bytes_per_block) +
                     " bytes");
  if (cfg_.capacity_blocks >= INT32_MAX)
    throw InputError("kv tier " + cfg_.name + ": " + std::to_string(cfg_.capacity_blocks) +
                     " blocks is more than a tier can hold (2^31-2)");
  check_pool_fits_memory(cfg_.capacity_blocks, "kv tier " + cfg_.name);
  if (!policy) throw InternalError("kv tier " + cfg_.name + ": no eviction policy");
  pool_ = std::make_unique<BlockPool>(static_cast<int32_t>(cfg_.capacity_blocks + 1), true, std::move(policy),
                                      num_keys);
  ready_.assign(static_cast<size_t>(cfg_.capacity_blocks + 1), 0);
  forward_ = std::make_unique<Forward>(*this);
  pool_->set_listener(forward_.get());
}

KvTier::~KvTier() = default;

BlockId KvTier::find(const BlockHash& h, uint32_t key) const {
  return keyed_ ? pool_->find_key(key) : pool_->find(h);
}

const KvTier::Slot* KvTier::find_slot(const BlockHash& h) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = BlockHashHasher{}(h) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.ready < 0) return nullptr;
    if (s.hash == h) return &s;
  }
}

void KvTier::insert_slot(const BlockHash& h, TimeNs ready) {
  if ((static_cast<size_t>(cached_) + 1) * 4 > slots_.size() * 3) {  // grow: rehash every slot
    std::vector<Slot> old(std::max<size_t>(slots_.size() * 2, 1024));
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.ready >= 0) insert_slot(s.hash, s.ready);
  }
  const size_t mask = slots_.size() - 1;
  size_t i = BlockHashHasher{}(h) & mask;
  while (slots_[i].ready >= 0) i = (i + 1) & mask;
  slots_[i] = {h, ready};
}

bool KvTier::contains(const BlockHash& h, uint32_t key) const {
  if (pool_) return find(h, key) != kNoBlock;
  if (keyed_) return ready_[key] >= 0;
  return find_slot(h) != nullptr;
}

bool KvTier::holds(const BlockHash& h, uint32_t key, TimeNs now) const {
  if (pool_) {
    const BlockId b = find(h, key);
    return b != kNoBlock && ready_[static_cast<size_t>(b)] <= now;
  }
  if (keyed_) return ready_[key] >= 0 && ready_[key] <= now;
  const Slot* slot = find_slot(h);
  return slot != nullptr && slot->ready <= now;
}

bool KvTier::touch(const BlockHash& h, uint32_t key, TimeNs now) {
  if (!pool_) return holds(h, key, now);  // never evicts: order does not matter
  const BlockId b = find(h, key);
  if (b == kNoBlock) return false;
  pool_->touch(std::span<const BlockId>(&b, 1));
  pool_->release(b);
  return ready_[static_cast<size_t>(b)] <= now;
}

bool KvTier::store(const BlockHash& h, uint32_t key, TimeNs ready_at) {
  if (contains(h, key)) return false;
  if (!pool_) {
    if (keyed_)
      ready_[key] = ready_at;
    else
      insert_slot(h, ready_at);
    ++cached_;
  } else {
    // Tier blocks are never held, so one is always free to reuse.
    storing_ready_ = ready_at;
    scratch_.clear();
    pool_->allocate(1, scratch_);  // evicts the policy's victim, which moves down
    const BlockId b = scratch_[0];
    CachedBlockInfo info;  // a tier sees blocks without their chains
    info.hash = h;
    info.key = key;
    pool_->cache(b, info);
    pool_->release(b);
    ready_[static_cast<size_t>(b)] = ready_at;
    ++cached_;
  }
  ++stats_.stored_blocks;
  stats_.bytes_written += static_cast<uint64_t>(cfg_.bytes_per_block);
  if (observer_) observer_->on_tier_stored(*this, h, moving_from_, storing_replica_);
  stats_.max_occupancy = std::max(stats_.max_occupancy, cached_);
  return true;
}

std::string KvTier::check_invariants() const {
  std::string err = pool_ ? pool_->check_invariants() : "";
  if (cfg_.capacity_blocks != kUnboundedTier && cached_ > cfg_.capacity_blocks)
    err += "tier " + cfg_.name + " holds " + std::to_string(cached_) + " blocks, above its capacity " +
           std::to_string(cfg_.capacity_blocks) + "; ";
  if (stats_.stored_blocks - stats_.evicted_blocks != static_cast<uint64_t>(cached_))
    err += "tier " + cfg_.name + ": stored - evicted != held; ";
  return err;
}

KvTierStack::KvTierStack(std::vector<KvTier*> tiers)
    : tiers_(std::move(tiers)), links_(tiers_.size()), found_(tiers_.size(), 0) {
  for (size_t k = 1; k < tiers_.size(); ++k)
    if (tiers_[k]->config().store == TierStoreRule::kOnEvict) tiers_[k - 1]->set_below(tiers_[k]);
  gpu_evicts_down_ = !tiers_.empty() && tiers_[0]->config().store == TierStoreRule::kOnEvict;
}

void KvTierStack::attach(BlockPool& gpu) { gpu.set_listener(this); }

size_t KvTierStack::lookup(std::span<const BlockHash> hashes, std::span<const uint32_t> keys, size_t from,
                           size_t to, TimeNs now) {
  std::fill(found_.begin(), found_.end(), 0);
  lookup_from_ = from;
  const bool keyed = !keys.empty();
  const size_t n = keyed ? keys.size() : hashes.size();
  auto hash = [&](size_t i) -> const BlockHash& { return keyed ? kNoHash : hashes[i]; };
  auto key = [&](size_t i) { return keyed ? keys[i] : kNoKey; };
  // vLLM's touch(): the request's blocks, last to first, so its prefix ends
  // up the most recently used; the same finds say which tier serves each
  // block of [from, to).
  const size_t end = std::max(from, std::min(to, n));
  const auto none = static_cast<uint32_t>(tiers_.size());
  serving_.assign(end - from, none);
  for (size_t i = n; i-- > 0;)
    for (uint32_t k = 0; k < tiers_.size(); ++k)
      if (tiers_[k]->touch(hash(i), key(i), now) && i >= from && i < end && serving_[i - from] == none)
        serving_[i - from] = k;
  size_t i = from;
  for (; i < end && serving_[i - from] != none; ++i) ++found_[serving_[i - from]];
  return i - from;
}

TimeNs KvTierStack::load(TimeNs now) {
  TimeNs done = now;
  for (size_t k = 0; k < tiers_.size(); ++k) {
    if (found_[k] == 0) continue;
    KvTier& t = *tiers_[k];
    t.count_hits(found_[k]);
    if (!timed_) continue;
    const TimeNs d = transfer_time(found_[k] * static_cast<uint64_t>(t.config().bytes_per_block),
                                   t.config().read_bytes_per_s);
    Link& l = links_[k];
    l.read_free = std::max(now, l.read_free) + d;
    read_busy_ += d;
    done = std::max(done, l.read_free + t.config().latency);
  }
  std::fill(found_.begin(), found_.end(), 0);
  return done;
}

void KvTierStack::write(size_t k, const BlockHash& h, uint32_t key) {
  KvTier& t = *tiers_[k];
  Link& l = links_[k];
  // Readable when the write is done; the link is taken only if the tier
  // takes the block (one already there is not written again).
  const TimeNs done =
      timed_ ? std::max(now_, l.write_free) +
                   transfer_time(static_cast<uint64_t>(t.config().bytes_per_block), t.config().write_bytes_per_s)
             : now_;
  t.storing_replica_ = replica_;
  if (t.store(h, key, done) && timed_) l.write_free = done;
}

void KvTierStack::offer(std::span<const BlockHash> hashes, std::span<const uint32_t> keys, size_t from, size_t to) {
  const bool keyed = !keys.empty();
  for (size_t i = from; i < to; ++i) on_pool_cached(keyed ? kNoHash : hashes[i], keyed ? keys[i] : kNoKey);
}

void KvTierStack::on_pool_cached(const BlockHash& h, uint32_t key) {
  for (size_t k = 0; k < tiers_.size(); ++k)
    if (tiers_[k]->config().store == TierStoreRule::kOnCompute) write(k, h, key);
}

void KvTierStack::on_pool_evicted(const BlockHash& h, uint32_t key) {
  if (gpu_evicts_down_) write(0, h, key);
}

}  // namespace prefixsim
