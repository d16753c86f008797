// Large zeroed mappings kept between the runs of one process (`plan`,
// `sweep` and `compare` run dozens of fleets, each building its pools
// afresh), so that a later run reuses the pages an earlier one faulted in
// instead of faulting them again.
//
// Why: a page fault costs ~5-7 us on this project's VMs (a trap to the
// hypervisor, then the kernel's clear of the page), ten times the memset of
// the same 4 KiB. `plan` on the Mooncake trace took 470k faults, 3.9 of its
// 29 CPU seconds in the kernel: each run's pools (a TP-8 replica holds
// ~280k blocks, 64 replicas ~0.8 GB of per-block arrays) touched pages the
// run before had just returned.
//
// A mapping handed back is kept whole (up to a limit on what is kept). One
// taken again is cleared where it was used: mincore() says which of its
// pages are resident, and of those only the ones not already all zero are
// written; the runs of pages not resident are dropped with MADV_DONTNEED
// (one of them may have been swapped out, and would come back with its old
// contents), which costs nothing where a page was never touched. So a
// reused mapping reads as zeros exactly as a fresh one does, and a run pays
// for the pages it used, not for the mapping's size.
#pragma once

#include <cstddef>

namespace prefixsim::reused_pages {

// A mapping of at least `bytes` bytes, every byte zero; `capacity` is set to
// its size (what give() takes back). Throws std::bad_alloc.
void* take(size_t bytes, size_t& capacity);
// Hands back a mapping from take(): kept for a later take() while what is
// kept stays under the limit (the oldest are unmapped first), else unmapped.
void give(void* p, size_t capacity);
// Whether mappings are worth keeping in this process: true once a large
// array has been released (note_release), i.e. in a process that builds
// its pools again (plan, compare, sweep). Until then large arrays come from
// calloc, which may place them in heap memory the process already holds: a
// lone replay's peak RSS stays what it was (3.5 MiB less on the Mooncake
// replay than with a fresh mapping per array).
bool active();
void note_release();
// What is kept now, in bytes of mappings (for tests and the bench).
size_t kept_bytes();
// Unmaps everything kept.
void release_all();

}  // namespace prefixsim::reused_pages
