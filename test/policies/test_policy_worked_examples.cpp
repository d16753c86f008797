// The papers' algorithms worked through by hand, on the real policies: ARC
// (Megiddo & Modha, FAST'03), 2Q (Johnson & Shasha, VLDB'94), S3-FIFO (Yang
// et al., SOSP'23), SIEVE (Zhang et al., NSDI'24), W-TinyLFU (Einziger et
// al., TOS'17) and LFU-DA (Arlitt et al., PER'00). Each access is a
// single-block request (test::ObjectCache), and every step states which
// object it evicts, traced by hand in the comment beside it.
//
// The pool holds one block more than the objects: each request also takes a
// scratch block (its partial last block), so a policy sized from the pool's
// capacity sees c + 1 blocks, and a block being filled ("pending") is
// counted where the policy header says so. Where that, or another paged
// adaptation, makes prefixsim choose differently from the paper, the step
// says so, asserts prefixsim's choice, and the paper's algorithm
// (reference_policies.h, checked step by step up to there) asserts the
// paper's.
#include <catch2/catch.hpp>
#include <functional>
#include <set>
#include <string>

#include "policies/arc.h"
#include "policies/lfu_da.h"
#include "policies/s3fifo.h"
#include "policies/sieve.h"
#include "policies/tinylfu.h"
#include "policies/two_q.h"
#include "test/policies/policy_test_util.h"
#include "test/policies/reference_policies.h"

using namespace prefixsim;
using test::ObjectCache;

namespace {

// Accesses objects of a cache (the real one or a reference) and tells what
// each access did: "hit", "miss" or "miss, evicts 3" (the objects cached
// before the access and not after it).
template <class Cache>
class Narrator {
 public:
  explicit Narrator(Cache& c, std::function<std::string(uint64_t)> name = [](uint64_t x) { return std::to_string(x); })
      : c_(c), name_(std::move(name)) {}
  std::string operator()(uint64_t x) {
    std::set<uint64_t> before;
    for (uint64_t y : seen_)
      if (c_.cached(y)) before.insert(y);
    const bool hit = c_.access(x);
    seen_.insert(x);
    std::string out = hit ? "hit" : "miss";
    std::string gone;
    for (uint64_t y : before)
      if (!c_.cached(y)) gone += " " + name_(y);
    return gone.empty() ? out : out + ", evicts" + gone;
  }

 private:
  Cache& c_;
  std::function<std::string(uint64_t)> name_;
  std::set<uint64_t> seen_;
};

// Both sides take the same access and must tell the same story.
template <class A, class B>
std::string both(Narrator<A>& a, Narrator<B>& b, uint64_t x) {
  const std::string sa = a(x), sb = b(x);
  INFO("object " << x);
  REQUIRE(sa == sb);
  return sa;
}

}  // namespace

TEST_CASE("arc worked example: T1 to B1, B1 hits raise p, T2 to B2, B2 hits lower p", "[policies][arc][worked]") {
  // c = 3 objects (the pool's ARC sizes p and its ghost bounds from 4).
  // State after each step, LRU first; the paper and prefixsim agree up to
  // the last step.
  ObjectCache c("arc", 3);
  auto paper = test::reference_arc(3);
  Narrator real(c);
  Narrator ref(*paper);
  const auto& arc = c.policy<ArcPolicy>();
  auto h = [](uint64_t x) { return ObjectCache::hash(x); };

  REQUIRE(both(real, ref, 1) == "miss");  // T1 [1]
  REQUIRE(both(real, ref, 2) == "miss");  // T1 [1 2]
  REQUIRE(both(real, ref, 1) == "hit");   // T1 [2]  T2 [1]: a second use moves to T2
  REQUIRE(arc.in_t2(c.block_of(1)));
  REQUIRE(both(real, ref, 3) == "miss");  // T1 [2 3]  T2 [1]: full
  // |T1| = 2 > p = 0: REPLACE takes T1's LRU and remembers it in B1.
  REQUIRE(both(real, ref, 4) == "miss, evicts 2");  // T1 [3 4]  T2 [1]  B1 [2]
  REQUIRE(arc.b1().contains(h(2)));
  REQUIRE(arc.t1_size() == 2);
  REQUIRE(arc.t2_size() == 1);
  // B1 ghost hit (case II): recency would have paid, p += max(1, |B2|/|B1|)
  // = 1. REPLACE takes T1's LRU (|T1| = 2 > p); 2 comes back into T2.
  // (prefixsim adapts p after the eviction, with p = 0 then: the same
  // choice here.)
  REQUIRE(both(real, ref, 2) == "miss, evicts 3");  // T1 [4]  T2 [1 2]  B1 [3]
  REQUIRE(arc.target_t1() == 1);
  REQUIRE(arc.in_t2(c.block_of(2)));
  REQUIRE_FALSE(arc.b1().contains(h(2)));
  REQUIRE(arc.b1().contains(h(3)));
  REQUIRE(both(real, ref, 4) == "hit");  // T1 []  T2 [1 2 4]
  // T1 is empty: REPLACE takes T2's LRU, remembered in B2.
  REQUIRE(both(real, ref, 5) == "miss, evicts 1");  // T1 [5]  T2 [2 4]  B1 [3]  B2 [1]
  REQUIRE(arc.b2().contains(h(1)));
  // B2 ghost hit (case III): frequency would have paid, p -= max(1,
  // |B1|/|B2|) = 1, to 0. REPLACE (x in B2): |T1| = 1 > 0, T1's 5 to B1.
  // (prefixsim: evicts with p = 1, T1 + the block being filled = 2 > 1; its
  // |B1| then already holds 5, so it subtracts 2: p is clamped to 0 alike.)
  REQUIRE(both(real, ref, 1) == "miss, evicts 5");  // T1 []  T2 [2 4 1]  B1 [3 5]  B2 []
  REQUIRE(arc.target_t1() == 0);
  REQUIRE(arc.b1().contains(h(5)));
  REQUIRE_FALSE(arc.b2().contains(h(1)));
  // B1 ghost hit: p rises to 1 again; T1 is empty, so T2's LRU goes to B2.
  REQUIRE(both(real, ref, 3) == "miss, evicts 2");  // T1 []  T2 [4 1 3]  B1 [5]  B2 [2]
  REQUIRE(arc.target_t1() == 1);
  REQUIRE(arc.b2().contains(h(2)));
  REQUIRE(both(real, ref, 6) == "miss, evicts 4");  // T1 [6]  T2 [1 3]  B1 [5]  B2 [2 4]
  REQUIRE(arc.t1_size() == 1);
  REQUIRE(arc.t2_size() == 2);
  REQUIRE(arc.b2().contains(h(4)));
  // Where they part. The paper's REPLACE runs before 7 enters T1: |T1| = 1
  // is not more than p = 1, so T2's LRU, 1, goes (and |L1|+|L2| = 2c drops
  // B2's LRU first). prefixsim's T1 counts the block being filled for 7
  // (arc.h): 1 + 1 > p, so T1's 6 goes to B1.
  REQUIRE(ref(7) == "miss, evicts 1");
  REQUIRE(real(7) == "miss, evicts 6");
  REQUIRE(arc.b1().contains(h(6)));
  REQUIRE(arc.t1_size() == 1);
}

TEST_CASE("2q worked example: A1in is a FIFO, A1out ghosts send returning content to Am, Am is an LRU",
          "[policies][2q][worked]") {
  // c = 4 objects. Paper: Kin = 0.25 c = 1 (A1in gives a block while it
  // holds more than 1), Kout = 0.5 c = 2 hashes. prefixsim (two_q.h): A1in's
  // count includes the block being filled, against 0.25 x 5 = 1.25; A1out
  // is a ring of floor(0.5 x 5) + 1 = 3 slots, a ghost hit leaving a dead
  // slot that still takes room until the ring wraps past it.
  ObjectCache c("2q", 4);
  auto paper = test::reference_2q(4, 1.0, 2);
  Narrator real(c);
  Narrator ref(*paper);
  const auto& q = c.policy<TwoQPolicy>();
  auto h = [](uint64_t x) { return ObjectCache::hash(x); };

  for (uint64_t x = 1; x <= 4; ++x) REQUIRE(both(real, ref, x) == "miss");  // A1in [1 2 3 4]
  // Am is empty: A1in's oldest goes, its hash to A1out.
  REQUIRE(both(real, ref, 5) == "miss, evicts 1");  // A1in [2 3 4 5]  A1out [1]
  REQUIRE(q.a1out().contains(h(1)));
  // 1 returns while remembered: it was reused after a while and enters Am.
  // Reclaiming its block takes A1in's oldest (|A1in| = 4 > Kin).
  REQUIRE(both(real, ref, 1) == "miss, evicts 2");  // A1in [3 4 5]  Am [1]  A1out [2]
  REQUIRE(q.in_am(c.block_of(1)));
  REQUIRE(both(real, ref, 6) == "miss, evicts 3");  // A1in [4 5 6]  Am [1]  A1out [2 3]
  // 3 returns: Am [1 3]. In prefixsim, pushing 4 found A1out's ring full
  // (1's dead slot, 2, 3): it dropped the dead slot and 2. The paper keeps
  // 2 (A1out [2 4]); 2 is not asked for again.
  REQUIRE(both(real, ref, 3) == "miss, evicts 4");  // A1in [5 6]  Am [1 3]
  REQUIRE(q.in_am(c.block_of(3)));
  REQUIRE(q.a1out().contains(h(4)));
  REQUIRE_FALSE(q.a1out().contains(h(2)));
  REQUIRE(both(real, ref, 1) == "hit");  // Am [3 1]: LRU order
  // |A1in| = 2 > Kin: A1in gives again (prefixsim: 2 + 1 > 1.25).
  REQUIRE(both(real, ref, 4) == "miss, evicts 5");  // A1in [6]  Am [3 1 4]
  // Where they part. The paper: |A1in| = 1 is not more than Kin = 1, so
  // Am's LRU, 3, goes (no ghost). prefixsim counts the block being filled
  // for 7 in A1in: 1 + 1 > 1.25, so A1in's 6 goes to A1out.
  REQUIRE(ref(7) == "miss, evicts 3");
  REQUIRE(real(7) == "miss, evicts 6");  // A1in [7]  Am [3 1 4]  A1out {6}
  REQUIRE(q.a1out().contains(h(6)));
  // prefixsim from here on. A hit in A1in is a correlated reference: no
  // promotion to Am.
  REQUIRE(real(7) == "hit");
  REQUIRE_FALSE(q.in_am(c.block_of(7)));
  // 6 returns from A1out into Am; A1in's 7 goes though it was hit.
  REQUIRE(real(6) == "miss, evicts 7");  // A1in []  Am [3 1 4 6]
  REQUIRE(q.in_am(c.block_of(6)));
  // A1in has no block: Am's LRU goes, and is not remembered.
  REQUIRE(real(8) == "miss, evicts 3");  // A1in [8]  Am [1 4 6]
  REQUIRE_FALSE(q.a1out().contains(h(3)));
  // So 3 comes back as new content, into A1in (whose 8 goes).
  REQUIRE(real(3) == "miss, evicts 8");
  REQUIRE_FALSE(q.in_am(c.block_of(3)));
}

TEST_CASE("s3fifo worked example: a 10% small queue, promotion of hit objects at its end, ghosts back into main",
          "[policies][s3fifo][worked]") {
  // c = 10 objects. S's share: the paper's 0.1 x 10 = 1 object; prefixsim's
  // 0.1 x 11 = 1.1 blocks counting the block being filled (S + 1 >= 1.1):
  // both evict from S while it holds one object or more. G holds 11 hashes
  // (the paper: as many as M), more than this example ever pushes.
  ObjectCache c("s3fifo", 10);
  auto paper = test::reference_s3fifo(10, 0.1, 10);
  Narrator real(c);
  Narrator ref(*paper);
  const auto& s3 = c.policy<S3FifoPolicy>();
  auto h = [](uint64_t x) { return ObjectCache::hash(x); };

  for (uint64_t x = 1; x <= 10; ++x) REQUIRE(both(real, ref, x) == "miss");  // S [1 .. 10]
  for (uint64_t x = 1; x <= 9; ++x) REQUIRE(both(real, ref, x) == "hit");    // freq 1 each, nothing moves
  REQUIRE(s3.in_small(c.block_of(1)));
  // S holds more than its share: S's oldest objects 1..9 were hit, each
  // moves to M with its counter reset; 10 was not, it is evicted into G.
  REQUIRE(both(real, ref, 11) == "miss, evicts 10");  // S [11]  M [1 .. 9]  G [10]
  for (uint64_t x = 1; x <= 9; ++x) REQUIRE(s3.in_main(c.block_of(x)));
  REQUIRE(s3.in_small(c.block_of(11)));
  REQUIRE(s3.ghosts().contains(h(10)));
  REQUIRE(both(real, ref, 1) == "hit");  // freq(1) = 1 in M
  // S is at its share (1 object of 10): the one-hit wonder 11 leaves
  // quickly, without ever touching M.
  REQUIRE(both(real, ref, 12) == "miss, evicts 11");  // S [12]  G [10 11]
  REQUIRE(s3.ghosts().contains(h(11)));
  REQUIRE(both(real, ref, 12) == "hit");
  // S's 12 was hit: it moves to M, and S is empty, so M evicts as a CLOCK:
  // 1 (freq 1) goes round with freq 0, 2 (freq 0) is evicted; what M
  // evicts is not remembered in G.
  REQUIRE(both(real, ref, 13) == "miss, evicts 2");  // S [13]  M [3 .. 9 12 1]
  REQUIRE(s3.in_main(c.block_of(12)));
  REQUIRE(s3.in_main(c.block_of(1)));
  REQUIRE_FALSE(s3.ghosts().contains(h(2)));
  // 10 is in G: it enters M directly; S's 13 leaves for G.
  REQUIRE(both(real, ref, 10) == "miss, evicts 13");  // S []  M [3 .. 9 12 1 10]  G [11 13]
  REQUIRE(s3.in_main(c.block_of(10)));
  REQUIRE_FALSE(s3.ghosts().contains(h(10)));
  REQUIRE(s3.ghosts().contains(h(13)));
}

TEST_CASE("sieve worked example: the authors' illustration, the hand clearing visited bits and evicting in place",
          "[policies][sieve][worked]") {
  // SIEVE's illustration (the NSDI'24 paper and its website): a cache of 7
  // objects A..G, inserted in that order, A, B and G visited. The hand
  // walks from the oldest towards the newest. prefixsim's hand walks past
  // blocks in use (none here: single-block requests release theirs).
  enum : uint64_t { A = 1, B, C, D, E, F, G, H, I, J, K };
  ObjectCache c("sieve", 7);
  Narrator real(c, [](uint64_t x) { return std::string(1, static_cast<char>('A' + x - 1)); });
  const auto& sieve = c.policy<SievePolicy>();
  auto hand_at = [&](uint64_t x) { return c.replayer().pool().hash_of(sieve.hand()) == ObjectCache::hash(x); };

  for (uint64_t x = A; x <= G; ++x) REQUIRE(real(x) == "miss");
  for (uint64_t x : {A, B, G}) REQUIRE(real(x) == "hit");
  for (uint64_t x : {A, B, G}) REQUIRE(sieve.visited(c.block_of(x)));
  // Request H: A and B are visited (cleared, kept in place), C is not: C
  // goes and the hand stops at D. Queue: A B D E F G H.
  REQUIRE(real(H) == "miss, evicts C");
  REQUIRE_FALSE(sieve.visited(c.block_of(A)));
  REQUIRE_FALSE(sieve.visited(c.block_of(B)));
  REQUIRE(sieve.visited(c.block_of(G)));
  REQUIRE(hand_at(D));
  REQUIRE(real(A) == "hit");
  REQUIRE(real(D) == "hit");
  // Request I: the hand starts at D (visited: cleared), E goes, hand at F.
  // A's new visit is behind the hand and survives.
  REQUIRE(real(I) == "miss, evicts E");
  REQUIRE(hand_at(F));
  REQUIRE(sieve.visited(c.block_of(A)));
  REQUIRE_FALSE(sieve.visited(c.block_of(D)));
  REQUIRE(real(B) == "hit");
  // Request J: F, not visited, goes at once; hand at G.
  REQUIRE(real(J) == "miss, evicts F");
  REQUIRE(hand_at(G));
  // Request K: G's visit from the start is cleared only now; H goes.
  REQUIRE(real(K) == "miss, evicts H");
  REQUIRE_FALSE(sieve.visited(c.block_of(G)));
  REQUIRE(hand_at(I));
}

TEST_CASE("tinylfu worked example: the admission duel keeps a frequent victim and admits a frequent candidate",
          "[policies][tinylfu][worked]") {
  // c = 9 objects: the pool's 10 blocks give a window of 10 - floor(0.99 x
  // 10) = 1 block and a protected segment of floor(0.8 x 9) = 7. The sketch
  // counts every access (no halving within 100 additions); a miss is counted
  // once its block is cached, after the eviction it caused. A duel happens
  // when the window is full and new content needs a block: the window's LRU
  // (candidate) against probation's LRU (victim), the candidate admitted
  // only if strictly more frequent.
  ObjectCache c("tinylfu:window=0.01", 9);
  Narrator real(c);
  const auto& t = c.policy<TinyLfuPolicy>();
  auto est = [&](uint64_t x) { return t.estimate(ObjectCache::hash(x)); };
  REQUIRE(t.window_max() == 1);

  REQUIRE(real(1) == "miss");
  REQUIRE(real(1) == "hit");
  REQUIRE(real(1) == "hit");  // 1 in the window, estimate 3
  // While the pool fills (never-used blocks left), the window's overflow
  // moves to probation without a duel: window [9], probation [1 2 .. 8].
  for (uint64_t x = 2; x <= 9; ++x) REQUIRE(real(x) == "miss");
  REQUIRE(t.segment(c.block_of(1)) == TinyLfuPolicy::kProbation);
  REQUIRE(est(1) == 3);
  REQUIRE(est(9) == 1);
  // A rare candidate against a frequent victim: 9 (1) > 1 (3) fails, the
  // candidate 9 goes and main is untouched.
  REQUIRE(real(10) == "miss, evicts 9");  // window [10]
  REQUIRE(t.segment(c.block_of(1)) == TinyLfuPolicy::kProbation);
  // 1 is hit in probation: promoted to protected. Probation's LRU is now 2.
  REQUIRE(real(1) == "hit");
  REQUIRE(t.segment(c.block_of(1)) == TinyLfuPolicy::kProtected);
  REQUIRE(real(10) == "hit");
  REQUIRE(real(10) == "hit");  // 10 stays in the window, estimate 3
  REQUIRE(est(10) == 3);
  REQUIRE(est(2) == 1);
  // A frequent candidate against a rare victim: 10 (3) > 2 (1), so 10 is
  // admitted to probation's MRU end and 2 is evicted.
  REQUIRE(real(11) == "miss, evicts 2");  // window [11]  probation [3 .. 8 10]  protected [1]
  REQUIRE(t.segment(c.block_of(10)) == TinyLfuPolicy::kProbation);
  REQUIRE(t.segment(c.block_of(11)) == TinyLfuPolicy::kWindow);
  // A tie keeps the resident: 11 (1) > 3 (1) fails, the candidate 11 goes.
  REQUIRE(est(11) == 1);
  REQUIRE(est(3) == 1);
  REQUIRE(real(12) == "miss, evicts 11");
  REQUIRE(c.cached(3));
}

TEST_CASE("tinylfu worked example: the hill climber grows the window after the hit rate falls, then keeps growing it",
          "[policies][tinylfu][worked]") {
  // c = 31 objects, pool capacity 32 (Caffeine's maximum): window 32 -
  // floor(0.99 x 32) = 1, protected floor(0.8 x 31) = 24; a sample is 10 x
  // 32 = 320 accesses; the step starts at -0.0625 x 32 = -2 (towards a
  // smaller window). The sample starts once 16 objects are cached.
  ObjectCache c("tinylfu", 31);
  const auto& t = c.policy<TinyLfuPolicy>();
  REQUIRE(t.adaptive());
  REQUIRE(t.window_max() == 1);
  REQUIRE(t.protected_max() == 24);
  for (uint64_t x = 1; x <= 16; ++x) REQUIRE_FALSE(c.access(x));  // the 16th miss opens the sample
  // 319 hits on 1..8: sample 1 = 319 / 320 = 0.997, up 0.997 from 0: the
  // adjustment is the step, -2, but the window is 1 already (shrinking
  // stops at 1); the change is >= 0.05, so the next step is 0.0625 x 32 in
  // the same direction: -2.
  for (int i = 0; i < 319; ++i) REQUIRE(c.access(1 + static_cast<uint64_t>(i % 8)));
  REQUIRE(t.climbs() == 1);
  REQUIRE(t.window_max() == 1);
  REQUIRE(t.step() == -2.0);
  // 320 one-offs: sample 2's hit rate is 0, down 0.997: the climber turns,
  // the adjustment is +2: the window takes 2 from protected's maximum (and
  // probation's 2 LRU blocks); the change is >= 0.05, the next step +2.
  uint64_t next = 1000;
  for (int i = 0; i < 320; ++i) REQUIRE_FALSE(c.access(next++));
  REQUIRE(t.climbs() == 2);
  REQUIRE(t.window_max() == 3);
  REQUIRE(t.protected_max() == 22);
  REQUIRE(t.step() == 2.0);
  // Sample 3: 0 again, a change of 0 (>= 0: the same direction): +2, and
  // the step decays to 0.98 x 2 = 1.96.
  for (int i = 0; i < 320; ++i) REQUIRE_FALSE(c.access(next++));
  REQUIRE(t.window_max() == 5);
  REQUIRE(t.step() == Approx(1.96));
  // Sample 4: +1 (1.96 truncated), the step 0.98 x 1.96.
  for (int i = 0; i < 320; ++i) REQUIRE_FALSE(c.access(next++));
  REQUIRE(t.window_max() == 6);
  REQUIRE(t.protected_max() == 19);
  REQUIRE(t.step() == Approx(1.9208));
  // The window is an LRU of 6 now: six objects cycled are all hits.
  for (uint64_t x = 1; x <= 6; ++x) REQUIRE_FALSE(c.access(5000 + x));
  for (int i = 0; i < 12; ++i) REQUIRE(c.access(5001 + static_cast<uint64_t>(i % 6)));
}

TEST_CASE("lfu-da worked example: the cache age L rises to each evicted priority, and old counts age out",
          "[policies][lfu-da][worked]") {
  // c = 3 objects. Arlitt et al.'s key with cost = size = 1: K = L + F,
  // set at every access with the L of that moment; the least K goes and L
  // becomes that K. The paper leaves ties open: prefixsim evicts the block
  // released longest ago (here: accessed longest ago).
  ObjectCache c("lfu-da", 3);
  Narrator real(c);
  const auto& da = c.policy<LfuDaPolicy>();
  auto k = [&](uint64_t x) { return da.priority(c.block_of(x)); };

  REQUIRE(real(1) == "miss");
  REQUIRE(real(1) == "hit");
  REQUIRE(real(1) == "hit");   // K(1) = 0 + 3
  REQUIRE(real(2) == "miss");  // K(2) = 0 + 1
  REQUIRE(real(3) == "miss");
  REQUIRE(real(3) == "hit");   // K(3) = 0 + 2
  REQUIRE(k(1) == 3);
  REQUIRE(k(2) == 1);
  REQUIRE(k(3) == 2);
  REQUIRE(da.inflation() == 0);
  REQUIRE(real(4) == "miss, evicts 2");  // least K = 1: L = 1, K(4) = 1 + 1
  REQUIRE(da.inflation() == 1);
  REQUIRE(k(4) == 2);
  REQUIRE(real(5) == "miss, evicts 3");  // K 2 = K(4); 3 went longer ago: L = 2, K(5) = 3
  REQUIRE(da.inflation() == 2);
  REQUIRE(k(5) == 3);
  REQUIRE(real(4) == "hit");  // K(4) = L + F = 2 + 2: today's L, not that of its insertion
  REQUIRE(k(4) == 4);
  // 1's three uses, made when L was 0, weigh no more than 5's one use at
  // L = 2 (K = 3 both); 1 went longer ago and goes.
  REQUIRE(real(6) == "miss, evicts 1");  // L = 3, K(6) = 4
  REQUIRE(da.inflation() == 3);
  REQUIRE(real(7) == "miss, evicts 5");  // K 3: L stays 3, K(7) = 4
  REQUIRE(da.inflation() == 3);
  REQUIRE(real(8) == "miss, evicts 4");  // K 4 all three; 4 went longest ago: L = 4
  REQUIRE(da.inflation() == 4);
}
