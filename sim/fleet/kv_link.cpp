#include "sim/fleet/kv_link.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/base/error.h"

namespace prefixsim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

KvLinks::KvLinks(uint32_t instances, const KvLinkConfig& cfg, std::vector<double> nic_bytes_per_s)
    : cfg_(cfg),
      instances_(instances),
      nic_(std::move(nic_bytes_per_s)),
      stats_(2 * size_t{instances} + 1),
      crossing_(stats_.size(), 0) {
  if (cfg.latency < 0) throw InternalError("kv links: negative latency");
  if (nic_.empty()) nic_.assign(instances, cfg.nic_bytes_per_s);
  if (nic_.size() != instances) throw InternalError("kv links: one NIC per instance");
}

double KvLinks::capacity(size_t link) const {
  const double bw = link == stats_.size() - 1 ? cfg_.fabric_bytes_per_s : nic_[link / 2];
  return bw > 0 ? bw : kInf;
}

TimeNs KvLinks::line_time(uint32_t from, uint32_t to, uint64_t bytes) const {
  double bw = std::min(capacity(2 * size_t{from}), capacity(2 * size_t{to} + 1));
  if (cfg_.fabric_bytes_per_s > 0) bw = std::min(bw, cfg_.fabric_bytes_per_s);
  const double ns = std::isinf(bw) ? 0.0 : std::ceil(static_cast<double>(bytes) * 1e9 / bw);
  return static_cast<TimeNs>(ns) + cfg_.latency;
}

uint32_t KvLinks::start(uint32_t from, uint32_t to, uint64_t bytes, TimeNs now) {
  if (from >= instances_ || to >= instances_) throw InternalError("kv links: no such instance");
  if (now < now_) throw InternalError("kv links: time went back");
  advance(now);
  Flow f;
  f.id = next_id_++;
  f.links[f.num_links++] = 2 * from;
  f.links[f.num_links++] = 2 * to + 1;
  if (cfg_.fabric_bytes_per_s > 0) f.links[f.num_links++] = static_cast<uint32_t>(stats_.size() - 1);
  f.left = static_cast<double>(bytes);
  for (uint32_t k = 0; k < f.num_links; ++k) {
    KvLinkStats& s = stats_[f.links[k]];
    ++s.transfers;
    s.bytes += bytes;
    s.max_concurrent = std::max(s.max_concurrent, ++crossing_[f.links[k]]);
  }
  active_.push_back(f);
  reshare();
  return f.id;
}

TimeNs KvLinks::next_through() const {
  if (!through_.empty()) return now_;
  TimeNs t = INT64_MAX;
  for (const Flow& f : active_) t = std::min(t, f.through);
  return t;
}

void KvLinks::account(TimeNs until) {
  const TimeNs dt = until - now_;
  if (dt <= 0) return;
  for (size_t k = 0; k < stats_.size(); ++k)
    if (crossing_[k] > 0) stats_[k].busy += dt;
  for (Flow& f : active_) f.left = std::isinf(f.rate) ? 0.0 : std::max(0.0, f.left - f.rate * static_cast<double>(dt) / 1e9);
  now_ = until;
}

void KvLinks::take_through(std::vector<uint32_t>& out) {
  out.insert(out.end(), through_.begin(), through_.end());
  through_.clear();
}

void KvLinks::advance(TimeNs now) {
  std::vector<uint32_t>& through = through_;
  if (now < now_) throw InternalError("kv links: time went back");
  account(now);
  // A flow's end is the authority (its bytes left are a float estimate); a
  // reshare can bring another's end to now, hence the loop.
  for (;;) {
    const size_t before = through.size();
    for (const Flow& f : active_)
      if (f.through <= now) through.push_back(f.id);
    if (through.size() == before) return;
    std::sort(through.begin() + static_cast<std::ptrdiff_t>(before), through.end());
    std::erase_if(active_, [&](const Flow& f) {
      if (f.through > now) return false;
      for (uint32_t k = 0; k < f.num_links; ++k) --crossing_[f.links[k]];
      return true;
    });
    reshare();
  }
}

// Progressive filling: the link whose capacity left, split among its flows
// not yet fixed, is the smallest fixes those flows at that share.
void KvLinks::reshare() {
  std::vector<double> left(stats_.size());
  std::vector<uint32_t> open(stats_.size(), 0);
  for (size_t k = 0; k < stats_.size(); ++k) left[k] = capacity(k);
  std::vector<bool> fixed(active_.size(), false);
  for (const Flow& f : active_)
    for (uint32_t k = 0; k < f.num_links; ++k) ++open[f.links[k]];
  size_t unfixed = active_.size();
  while (unfixed > 0) {
    size_t tight = stats_.size();
    double share = kInf;
    for (size_t k = 0; k < stats_.size(); ++k)
      if (open[k] > 0 && left[k] / open[k] < share) {
        share = left[k] / open[k];
        tight = k;
      }
    for (size_t i = 0; i < active_.size(); ++i) {
      Flow& f = active_[i];
      if (fixed[i]) continue;
      const bool on_tight = tight == stats_.size() || std::find(f.links, f.links + f.num_links, tight) != f.links + f.num_links;
      if (!on_tight) continue;
      f.rate = share;
      fixed[i] = true;
      --unfixed;
      for (uint32_t k = 0; k < f.num_links; ++k) {
        left[f.links[k]] = std::max(0.0, left[f.links[k]] - share);
        --open[f.links[k]];
      }
    }
  }
  for (Flow& f : active_) {
    const double ns = std::isinf(f.rate) || f.left <= 0 ? 0.0 : std::ceil(f.left * 1e9 / f.rate);
    f.through = now_ + static_cast<TimeNs>(ns);
  }
}

}  // namespace prefixsim
