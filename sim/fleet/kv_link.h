// The links KV crosses between the instances of a disaggregated fleet
// (disagg.h): each instance's NIC, one direction out (tx) and one in (rx),
// and optionally a fabric every transfer crosses (a switch's or a spine's
// bisection limit). A transfer is a fluid flow over three links (the
// sender's tx, the receiver's rx, the fabric); the flows crossing a link at
// once share it max-min fairly (progressive filling: the most constrained
// link's share is given to its flows, which are then fixed, and so on), the
// bandwidth sharing TCP and RDMA congestion control converge to. Rates are
// recomputed whenever a transfer starts or ends, so a transfer slows down
// while others cross its links: contention, not line rate.
//
// A transfer's bytes are through when its flow has carried them all; it is
// done `latency` later (the completion notice: NIXL's notification, the
// round trip). A link of bandwidth <= 0 is infinitely fast: a transfer over
// it alone takes only the latency.
//
// Integer time: a flow's end is rounded up to the next nanosecond, and the
// bytes it has carried are recomputed from its rate at each event, so the
// order of ends is deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/base/types.h"

namespace prefixsim {

struct KvLinkConfig {
  double nic_bytes_per_s = 0;     // per instance and direction; <= 0: infinitely fast (see KvLinks)
  double fabric_bytes_per_s = 0;  // shared by every transfer; <= 0: no fabric limit
  TimeNs latency = 0;             // added to each transfer
};

// One link's account over a run.
struct KvLinkStats {
  uint64_t transfers = 0;
  uint64_t bytes = 0;
  TimeNs busy = 0;           // time at least one transfer crossed it
  uint32_t max_concurrent = 0;
};

class KvLinks {
 public:
  // `nic_bytes_per_s`, when given, is each instance's NIC (both
  // directions) in place of cfg.nic_bytes_per_s.
  KvLinks(uint32_t instances, const KvLinkConfig& cfg, std::vector<double> nic_bytes_per_s = {});

  const KvLinkConfig& config() const { return cfg_; }
  // Starts moving `bytes` from instance `from` to instance `to` at `now`
  // (no earlier than the last advance). Returns the transfer's id.
  uint32_t start(uint32_t from, uint32_t to, uint64_t bytes, TimeNs now);
  // When the earliest transfer's bytes are through (INT64_MAX: none; the
  // clock's time when some are through and not taken yet).
  TimeNs next_through() const;
  // Moves the clock to `now`: the transfers whose bytes are through by then
  // leave the links (start() advances the clock too).
  void advance(TimeNs now);
  // The ids of the transfers through since the last call, in the order
  // they got through (ids in order within one instant).
  void take_through(std::vector<uint32_t>& out);
  // Transfers on the links now.
  size_t active() const { return active_.size(); }
  // How long `bytes` alone on idle links from `from` to `to` take, latency
  // included (a lower bound).
  TimeNs line_time(uint32_t from, uint32_t to, uint64_t bytes) const;

  // Links: 2i is instance i's tx, 2i + 1 its rx, and 2 * instances the fabric.
  size_t num_links() const { return stats_.size(); }
  const KvLinkStats& link(size_t k) const { return stats_[k]; }
  const KvLinkStats& tx(uint32_t i) const { return stats_[2 * i]; }
  const KvLinkStats& rx(uint32_t i) const { return stats_[2 * i + 1]; }
  const KvLinkStats& fabric() const { return stats_.back(); }

 private:
  struct Flow {
    uint32_t id = 0;
    uint32_t links[3] = {0, 0, 0};
    uint32_t num_links = 0;
    double left = 0;   // bytes not through yet
    double rate = 0;   // bytes/s; infinite when every link is infinitely fast
    TimeNs through = 0;
  };
  double capacity(size_t link) const;
  void reshare();  // max-min fair rates, then each flow's end
  void account(TimeNs until);

  KvLinkConfig cfg_;
  uint32_t instances_;
  std::vector<double> nic_;  // by instance
  std::vector<Flow> active_;
  std::vector<uint32_t> through_;  // through, not taken yet
  std::vector<KvLinkStats> stats_;
  std::vector<uint32_t> crossing_;  // flows on each link now
  TimeNs now_ = 0;
  uint32_t next_id_ = 0;
};

}  // namespace prefixsim
