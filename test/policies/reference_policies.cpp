#include "test/policies/reference_policies.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <list>
#include <map>
#include <set>

#include "policies/tinylfu.h"
#include "test/policies/policy_test_util.h"

namespace prefixsim::test {

namespace {

// Removes x from list l if it is there; returns whether it was.
bool erase_from(std::list<uint64_t>& l, uint64_t x) {
  auto it = std::find(l.begin(), l.end(), x);
  if (it == l.end()) return false;
  l.erase(it);
  return true;
}
bool has(const std::list<uint64_t>& l, uint64_t x) { return std::find(l.begin(), l.end(), x) != l.end(); }

// LRU: front = least recently used.
class RefLru final : public ReferenceCache {
 public:
  explicit RefLru(size_t c) : cap_(c) {}
  bool access(uint64_t x) override {
    const bool hit = erase_from(q_, x);
    if (cap_ == 0) return false;
    if (!hit && q_.size() == cap_) q_.pop_front();
    q_.push_back(x);
    return hit;
  }
  bool cached(uint64_t x) const override { return has(q_, x); }
  size_t size() const override { return q_.size(); }

 private:
  size_t cap_;
  std::list<uint64_t> q_;
};

// FIFO: front = cached longest ago; hits change nothing.
class RefFifo final : public ReferenceCache {
 public:
  explicit RefFifo(size_t c) : cap_(c) {}
  bool access(uint64_t x) override {
    if (has(q_, x)) return true;
    if (q_.size() == cap_) q_.pop_front();
    q_.push_back(x);
    return false;
  }
  bool cached(uint64_t x) const override { return has(q_, x); }
  size_t size() const override { return q_.size(); }

 private:
  size_t cap_;
  std::list<uint64_t> q_;
};

// SIEVE (NSDI 2024, Algorithm 1): queue from oldest (front) to newest, a hand
// moving towards the newest that clears visited bits and evicts the first
// unvisited object, wrapping to the oldest.
class RefSieve final : public ReferenceCache {
 public:
  explicit RefSieve(size_t c) : cap_(c) {}
  bool access(uint64_t x) override {
    for (Entry& e : q_)
      if (e.x == x) {
        e.visited = true;
        return true;
      }
    if (q_.size() == cap_) evict();
    q_.push_back({x, false});
    return false;
  }
  bool cached(uint64_t x) const override {
    return std::any_of(q_.begin(), q_.end(), [x](const Entry& e) { return e.x == x; });
  }
  size_t size() const override { return q_.size(); }

 private:
  struct Entry {
    uint64_t x;
    bool visited;
  };
  void evict() {
    auto h = hand_valid_ ? hand_ : q_.begin();
    for (;;) {
      if (h == q_.end()) h = q_.begin();
      if (!h->visited) break;
      h->visited = false;
      ++h;
    }
    hand_ = q_.erase(h);
    hand_valid_ = hand_ != q_.end();
  }
  size_t cap_;
  std::list<Entry> q_;
  std::list<Entry>::iterator hand_;
  bool hand_valid_ = false;
};

// LFU: evict the least count, ties by least recent access; counts start at 1
// when an object is cached and die with it.
class RefLfu final : public ReferenceCache {
 public:
  explicit RefLfu(size_t c) : cap_(c) {}
  bool access(uint64_t x) override {
    auto it = info_.find(x);
    const bool hit = it != info_.end();
    if (!hit && info_.size() == cap_) {
      auto victim = std::min_element(info_.begin(), info_.end(), [](const auto& a, const auto& b) {
        return std::pair(a.second.count, a.second.last) < std::pair(b.second.count, b.second.last);
      });
      info_.erase(victim);
    }
    Info& i = info_[x];
    i.count = hit ? i.count + 1 : 1;
    i.last = ++now_;
    return hit;
  }
  bool cached(uint64_t x) const override { return info_.count(x) != 0; }
  size_t size() const override { return info_.size(); }

 private:
  struct Info {
    uint64_t count = 0;
    uint64_t last = 0;
  };
  size_t cap_;
  std::map<uint64_t, Info> info_;
  uint64_t now_ = 0;
};

// vLLM's LRU in a single-block stream. The free queue holds all C + 1
// blocks; a request on object y pops one block from the head (a hit: the
// scratch) or two (a miss: y's block and the scratch), dropping whatever the
// popped blocks held, and frees scratch then y to the tail; a hit unlinks y
// from where it sat. So the queue is always the last C + 1 entries of the
// sequence "scratch, y" per access with y's older entry removed: y is cached
// iff the entries after its own, one scratch per access since (j) and one
// per distinct object since (d), number at most C. Written from that rule,
// not by simulating the queue.
class RefVllmLru final : public ReferenceCache {
 public:
  explicit RefVllmLru(size_t c) : cap_(c) {}
  bool access(uint64_t x) override {
    const bool hit = cached(x);
    history_.push_back(x);
    return hit;
  }
  bool cached(uint64_t x) const override {
    // The distinct objects since x's last access, at most cap_ of them
    // before the walk stops: a small vector searched linearly (a std::set
    // allocated per call made this reference the suite's slowest test).
    since_.clear();
    size_t j = 0;
    for (size_t k = history_.size(); k-- > 0;) {
      if (history_[k] == x) return j + since_.size() <= cap_;
      ++j;
      if (std::find(since_.begin(), since_.end(), history_[k]) == since_.end()) since_.push_back(history_[k]);
      if (j + since_.size() > cap_) return false;
    }
    return false;
  }
  size_t size() const override {
    std::set<uint64_t> seen;
    size_t n = 0;
    for (size_t k = history_.size(); k-- > 0 && seen.size() <= cap_ + 1;)
      if (seen.insert(history_[k]).second && cached(history_[k])) ++n;
    return n;
  }

 private:
  size_t cap_;
  std::vector<uint64_t> history_;
  mutable std::vector<uint64_t> since_;  // cached()'s scratch
};

// GreedyDual with size 1: K = L + frequency x cost.
class RefGreedyDual final : public ReferenceCache {
 public:
  RefGreedyDual(size_t c, double cost) : cap_(c), cost_(cost) {}
  bool access(uint64_t x) override {
    auto it = info_.find(x);
    const bool hit = it != info_.end();
    if (!hit && info_.size() == cap_) {
      auto victim = std::min_element(info_.begin(), info_.end(), [](const auto& a, const auto& b) {
        return std::pair(a.second.k, a.second.last) < std::pair(b.second.k, b.second.last);
      });
      inflation_ = victim->second.k;
      info_.erase(victim);
    }
    Info& i = info_[x];
    i.freq = hit ? i.freq + 1 : 1;
    i.k = inflation_ + static_cast<double>(i.freq) * cost_;
    i.last = ++now_;
    return hit;
  }
  bool cached(uint64_t x) const override { return info_.count(x) != 0; }
  size_t size() const override { return info_.size(); }

 private:
  struct Info {
    double k = 0;
    uint64_t freq = 0;
    uint64_t last = 0;
  };
  size_t cap_;
  double cost_;
  double inflation_ = 0;
  std::map<uint64_t, Info> info_;
  uint64_t now_ = 0;
};

// Belady's MIN: evict the object whose next use is farthest; never again
// counts as farthest, least recently used first among those.
class RefBelady final : public ReferenceCache {
 public:
  RefBelady(size_t c, const std::vector<uint64_t>& stream) : cap_(c), stream_(stream) {}
  bool access(uint64_t x) override {
    const size_t now = pos_++;
    size_t next = SIZE_MAX;
    for (size_t k = now + 1; k < stream_.size(); ++k)
      if (stream_[k] == x) {
        next = k;
        break;
      }
    auto it = info_.find(x);
    const bool hit = it != info_.end();
    if (!hit && info_.size() == cap_) {
      // Farthest next use; among never-again objects the least recent.
      auto victim = std::max_element(info_.begin(), info_.end(), [](const auto& a, const auto& b) {
        return std::pair(a.second.next, SIZE_MAX - a.second.last) < std::pair(b.second.next, SIZE_MAX - b.second.last);
      });
      info_.erase(victim);
    }
    info_[x] = {next, now};
    return hit;
  }
  bool cached(uint64_t x) const override { return info_.count(x) != 0; }
  size_t size() const override { return info_.size(); }

 private:
  struct Info {
    size_t next;
    size_t last;
  };
  size_t cap_;
  std::vector<uint64_t> stream_;
  size_t pos_ = 0;
  std::map<uint64_t, Info> info_;
};

// ARC, Megiddo & Modha Figure 4. Lists: front = LRU.
class RefArc final : public ReferenceCache {
 public:
  explicit RefArc(size_t c) : c_(c) {}
  bool access(uint64_t x) override {
    if (erase_from(t1_, x) || erase_from(t2_, x)) {  // case I
      t2_.push_back(x);
      return true;
    }
    const double c = static_cast<double>(c_);
    if (has(b1_, x)) {  // case II
      p_ = std::min(p_ + std::max(1.0, static_cast<double>(b2_.size()) / static_cast<double>(b1_.size())), c);
      replace(false);
      erase_from(b1_, x);
      t2_.push_back(x);
      return false;
    }
    if (has(b2_, x)) {  // case III
      p_ = std::max(p_ - std::max(1.0, static_cast<double>(b1_.size()) / static_cast<double>(b2_.size())), 0.0);
      replace(true);
      erase_from(b2_, x);
      t2_.push_back(x);
      return false;
    }
    const size_t l1 = t1_.size() + b1_.size(), l2 = t2_.size() + b2_.size();  // case IV
    if (l1 == c_) {
      if (t1_.size() < c_) {
        b1_.pop_front();
        replace(false);
      } else {
        t1_.pop_front();
      }
    } else if (l1 + l2 >= c_) {
      if (l1 + l2 == 2 * c_) b2_.pop_front();
      replace(false);
    }
    t1_.push_back(x);
    return false;
  }
  bool cached(uint64_t x) const override { return has(t1_, x) || has(t2_, x); }
  size_t size() const override { return t1_.size() + t2_.size(); }

 private:
  void replace(bool in_b2) {
    const double t1 = static_cast<double>(t1_.size());
    if (!t1_.empty() && ((in_b2 && t1 == p_) || t1 > p_)) {
      b1_.push_back(t1_.front());
      t1_.pop_front();
    } else if (!t2_.empty()) {
      b2_.push_back(t2_.front());
      t2_.pop_front();
    }
  }
  size_t c_;
  double p_ = 0;
  std::list<uint64_t> t1_, t2_, b1_, b2_;
};

// Full 2Q, Johnson & Shasha. Lists: front = oldest / LRU.
class Ref2Q final : public ReferenceCache {
 public:
  Ref2Q(size_t c, double kin_blocks, size_t kout_hashes) : c_(c), kin_(kin_blocks), kout_(kout_hashes) {}
  bool access(uint64_t x) override {
    if (erase_from(am_, x)) {
      am_.push_back(x);
      return true;
    }
    if (has(a1in_, x)) return true;  // correlated reference: no promotion
    const bool ghost = erase_from(a1out_, x);
    if (size() == c_) reclaim();
    (ghost ? am_ : a1in_).push_back(x);
    return false;
  }
  bool cached(uint64_t x) const override { return has(am_, x) || has(a1in_, x); }
  size_t size() const override { return am_.size() + a1in_.size(); }

 private:
  void reclaim() {
    if (!a1in_.empty() && (static_cast<double>(a1in_.size()) > kin_ || am_.empty())) {
      a1out_.push_back(a1in_.front());
      a1in_.pop_front();
      while (a1out_.size() > kout_) a1out_.pop_front();
    } else {
      am_.pop_front();
    }
  }
  size_t c_;
  double kin_;
  size_t kout_;
  std::list<uint64_t> a1in_, a1out_, am_;
};

// S3-FIFO, Yang et al. Algorithm 1. Queues: front = oldest.
class RefS3Fifo final : public ReferenceCache {
 public:
  RefS3Fifo(size_t c, double small, size_t ghosts) : c_(c), small_(small * static_cast<double>(c)), g_(ghosts) {}
  bool access(uint64_t x) override {
    auto it = freq_.find(x);
    if (it != freq_.end()) {
      it->second = std::min(it->second + 1, 3);
      return true;
    }
    while (freq_.size() >= c_ && c_ > 0) evict();
    if (erase_from(ghost_, x)) m_.push_back(x);
    else s_.push_back(x);
    freq_[x] = 0;
    return false;
  }
  bool cached(uint64_t x) const override { return freq_.count(x) != 0; }
  size_t size() const override { return freq_.size(); }

 private:
  void evict() {
    if (static_cast<double>(s_.size()) >= small_ || m_.empty()) {
      while (!s_.empty()) {  // evictS
        const uint64_t t = s_.front();
        s_.pop_front();
        if (freq_[t] >= 1) {
          freq_[t] = 0;
          m_.push_back(t);
        } else {
          freq_.erase(t);
          ghost_.push_back(t);
          while (ghost_.size() > g_) ghost_.pop_front();
          return;
        }
      }
    }
    while (!m_.empty()) {  // evictM
      const uint64_t t = m_.front();
      m_.pop_front();
      if (freq_[t] > 0) {
        --freq_[t];
        m_.push_back(t);
      } else {
        freq_.erase(t);
        return;
      }
    }
  }
  size_t c_;
  double small_;
  size_t g_;
  std::map<uint64_t, int> freq_;
  std::list<uint64_t> s_, m_, ghost_;
};

// W-TinyLFU as in Caffeine's BoundedLocalCache (see policies/tinylfu.h).
// Order of counting: a hit is counted before it moves; a miss is counted
// after the eviction it causes, as the pool learns the new block's hash only
// once it is cached.
class RefTinyLfu final : public ClimbingReference {
 public:
  RefTinyLfu(size_t c, size_t w, size_t p, std::unique_ptr<FrequencyOracle> f)
      : cap_(c), wmax_(w), pmax_(p), freq_(std::move(f)) {}
  // With the hill climber.
  RefTinyLfu(size_t c, size_t w, size_t p, int64_t maximum, int64_t sample_size, std::unique_ptr<FrequencyOracle> f)
      : RefTinyLfu(c, w, p, std::move(f)) {
    climbs_ = true;
    maximum_ = maximum;
    sample_size_ = sample_size;
    step_ = -0.0625 * static_cast<double>(maximum);
  }
  size_t window_max() const override { return wmax_; }
  size_t protected_max() const override { return pmax_; }
  // The accessed object is "held" (counted in its segment, in no list)
  // until the access ends, then joins its segment's MRU end: a paged cache
  // holds the block in use and links it when it is released, so what the
  // climber moves meanwhile goes before it, and the climber cannot move it.
  bool access(uint64_t x) override {
    const bool hit = access_lists(x);
    if (climbs_) climb(hit);
    held_->push_back(x);
    held_ = nullptr;
    while (window_.size() > wmax_) {  // a window of 0 (nothing else to move)
      probation_.push_back(window_.front());
      window_.pop_front();
    }
    return hit;
  }

 private:
  size_t held_in(const std::list<uint64_t>& l) const { return held_ == &l ? 1 : 0; }
  // Caffeine's climb(), line for line (the 1,000-move limit never binds here).
  void climb(bool hit) {
    ++(hit ? hits_ : misses_);
    if (!initialized_) {
      if (static_cast<int64_t>(size()) < maximum_ / 2) {
        hits_ = misses_ = 0;
        previous_ = 0;
        return;
      }
      initialized_ = true;
    }
    if (hits_ + misses_ >= sample_size_) {
      const double rate = static_cast<double>(hits_) / static_cast<double>(hits_ + misses_);
      const double change = rate - previous_;
      const double amount = change >= 0 ? step_ : -step_;
      step_ = std::abs(change) >= 0.05 ? 0.0625 * static_cast<double>(maximum_) * (amount >= 0 ? 1 : -1) : 0.98 * amount;
      previous_ = rate;
      adjustment_ = static_cast<int64_t>(amount);
      hits_ = misses_ = 0;
    }
    if (adjustment_ > 0 && pmax_ > 0) {  // increaseWindow
      auto quota = std::min<int64_t>(adjustment_, static_cast<int64_t>(pmax_));
      pmax_ -= static_cast<size_t>(quota);
      wmax_ += static_cast<size_t>(quota);
      while (protected_.size() + held_in(protected_) > pmax_ && !protected_.empty()) {
        probation_.push_back(protected_.front());
        protected_.pop_front();
      }
      for (; quota > 0; --quota) {
        std::list<uint64_t>& from = !probation_.empty() ? probation_ : protected_;
        if (from.empty()) break;
        window_.push_back(from.front());
        from.pop_front();
      }
      pmax_ += static_cast<size_t>(quota);
      wmax_ -= static_cast<size_t>(quota);
      adjustment_ = quota;
    } else if (adjustment_ < 0 && wmax_ > 1) {  // decreaseWindow
      auto quota = std::min<int64_t>(-adjustment_, static_cast<int64_t>(wmax_) - 1);
      pmax_ += static_cast<size_t>(quota);
      wmax_ -= static_cast<size_t>(quota);
      for (; quota > 0 && !window_.empty(); --quota) {
        probation_.push_back(window_.front());
        window_.pop_front();
      }
      pmax_ -= static_cast<size_t>(quota);
      wmax_ += static_cast<size_t>(quota);
      adjustment_ = -quota;
    }
  }
  // Sets held_ to x's segment; x is in no list on return.
  bool access_lists(uint64_t x) {
    if (cached(x)) {
      freq_->add(x);
      if (erase_from(window_, x)) {
        held_ = &window_;
      } else if (erase_from(probation_, x)) {
        held_ = &protected_;
        while (protected_.size() + 1 > pmax_ && !protected_.empty()) {
          probation_.push_back(protected_.front());
          protected_.pop_front();
        }
      } else {
        erase_from(protected_, x);
        held_ = &protected_;
      }
      return true;
    }
    if (size() == cap_) evict();
    freq_->add(x);
    held_ = &window_;
    while (window_.size() + 1 > wmax_ && !window_.empty()) {
      probation_.push_back(window_.front());
      window_.pop_front();
    }
    return false;
  }

 public:
  bool cached(uint64_t x) const override { return has(window_, x) || has(probation_, x) || has(protected_, x); }
  size_t size() const override {
    return window_.size() + probation_.size() + protected_.size() + (held_ != nullptr ? 1 : 0);
  }

 private:
  void evict() {
    std::list<uint64_t>& main = !probation_.empty() ? probation_ : protected_;
    if (window_.size() + 1 > wmax_ && !window_.empty()) {
      const uint64_t candidate = window_.front();
      window_.pop_front();
      if (!main.empty() && freq_->estimate(candidate) > freq_->estimate(main.front())) {
        main.pop_front();  // the victim goes; the candidate joins probation
        probation_.push_back(candidate);
      }
      return;  // else the candidate itself was evicted
    }
    if (!main.empty()) main.pop_front();
    else window_.pop_front();
  }
  size_t cap_, wmax_, pmax_;
  std::unique_ptr<FrequencyOracle> freq_;
  std::list<uint64_t> window_, probation_, protected_;  // front = LRU
  std::list<uint64_t>* held_ = nullptr;  // the accessed object's segment, during an access
  bool climbs_ = false, initialized_ = false;
  int64_t maximum_ = 0, sample_size_ = 0, hits_ = 0, misses_ = 0, adjustment_ = 0;
  double previous_ = 0, step_ = 0;
};

class ExactAgedCounts final : public FrequencyOracle {
 public:
  explicit ExactAgedCounts(int64_t period) : period_(period) {}
  void add(uint64_t x) override {
    uint32_t& c = counts_[x];
    if (c < 15) ++c;
    if (++added_ >= period_) {
      for (auto& [k, v] : counts_) v /= 2;
      added_ = 0;
    }
  }
  uint32_t estimate(uint64_t x) const override {
    auto it = counts_.find(x);
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  int64_t period_;
  int64_t added_ = 0;
  std::map<uint64_t, uint32_t> counts_;
};

class CountMinOracle final : public FrequencyOracle {
 public:
  CountMinOracle(int64_t capacity, int64_t sample) { sketch_.reset(capacity, sample); }
  void add(uint64_t x) override { sketch_.add(ObjectCache::hash(x)); }
  uint32_t estimate(uint64_t x) const override { return sketch_.estimate(ObjectCache::hash(x)); }

 private:
  CountMinSketch sketch_;
};

}  // namespace

std::unique_ptr<FrequencyOracle> exact_aged_counts(int64_t period) {
  return std::make_unique<ExactAgedCounts>(std::max<int64_t>(period, 16));
}
std::unique_ptr<FrequencyOracle> count_min_oracle(int64_t capacity, int64_t sample) {
  return std::make_unique<CountMinOracle>(capacity, sample);
}
std::unique_ptr<ReferenceCache> reference_lru(size_t capacity) { return std::make_unique<RefLru>(capacity); }
std::unique_ptr<ReferenceCache> reference_vllm_lru(size_t capacity) { return std::make_unique<RefVllmLru>(capacity); }
std::unique_ptr<ReferenceCache> reference_greedy_dual(size_t capacity, double cost) {
  return std::make_unique<RefGreedyDual>(capacity, cost);
}
std::unique_ptr<ReferenceCache> reference_belady(size_t capacity, const std::vector<uint64_t>& stream) {
  return std::make_unique<RefBelady>(capacity, stream);
}
std::unique_ptr<ReferenceCache> reference_arc(size_t capacity) { return std::make_unique<RefArc>(capacity); }
std::unique_ptr<ReferenceCache> reference_2q(size_t capacity, double kin_blocks, size_t kout_hashes) {
  return std::make_unique<Ref2Q>(capacity, kin_blocks, kout_hashes);
}
std::unique_ptr<ReferenceCache> reference_s3fifo(size_t capacity, double small, size_t ghosts) {
  return std::make_unique<RefS3Fifo>(capacity, small, ghosts);
}
std::unique_ptr<ReferenceCache> reference_fifo(size_t capacity) { return std::make_unique<RefFifo>(capacity); }
std::unique_ptr<ReferenceCache> reference_sieve(size_t capacity) { return std::make_unique<RefSieve>(capacity); }
std::unique_ptr<ReferenceCache> reference_lfu(size_t capacity) { return std::make_unique<RefLfu>(capacity); }
std::unique_ptr<ReferenceCache> reference_tinylfu(size_t capacity, size_t window_max, size_t protected_max,
                                                  std::unique_ptr<FrequencyOracle> oracle) {
  return std::make_unique<RefTinyLfu>(capacity, window_max, protected_max, std::move(oracle));
}
std::unique_ptr<ClimbingReference> reference_tinylfu_climbing(size_t capacity, size_t window_max, size_t protected_max,
                                                              int64_t maximum, int64_t sample_size,
                                                              std::unique_ptr<FrequencyOracle> oracle) {
  return std::make_unique<RefTinyLfu>(capacity, window_max, protected_max, maximum, sample_size, std::move(oracle));
}

}  // namespace prefixsim::test
