// Tallies of the block manager's work, for the benchmarks' "engine block
// operations per CPU second" (`prefixsim bench replay_mooncake`). One
// operation is one block:
//   looked up  a hash probed in the index by a prefix lookup (the hits, and
//              the miss that ends the walk)
//   allocated  a block taken for a request: a new one popped from the free
//              set (evicting its old hash if cached) or a hit one touched
//   cached     a newly full block's hash inserted into the index
//   freed      a block's reference released when its request ends or is
//              preempted
// Prompt and output blocks alike. Counted per call, not per block, so the
// cost is a few additions per request step. Per thread: each of compare's
// threads keeps its own.
#pragma once

#include <cstdint>

namespace prefixsim {

struct BlockOpCounts {
  uint64_t looked_up = 0, allocated = 0, cached = 0, freed = 0;
  uint64_t total() const { return looked_up + allocated + cached + freed; }
};

// This thread's tallies since it started.
BlockOpCounts& block_op_counts();

}  // namespace prefixsim
