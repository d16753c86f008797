// A fixed-size array whose elements start as all-zero bytes, from calloc:
// memory fresh from the kernel (a large first allocation, mapped) reads as
// zero and costs nothing until first touched, and glibc does not clear it
// again; memory reused from the heap (the next run of `plan` or `compare`
// in the same process) is cleared by calloc, as a vector's fill would. So a
// structure whose empty state is all zeros is reset without touching fresh
// memory, and a run pays only for the part it uses.
//
// Why: a fleet of many replicas builds a pool per replica, each sized for its
// whole KV memory (a TP-8 replica of an 8B model holds ~280k blocks), while
// a lightly loaded replica uses a fraction of it. Filling every pool's
// per-block vectors at construction was most of such a run (64 replicas of
// TP 8: ~60 % of the run in page faults and fills, perf).
//
// Not mmap for every large array (tried): each run's pools then fault their
// pages afresh, which cost `plan`'s and `compare`'s later runs more than a
// fill of reused memory (page faults are dear on this project's VMs); nor
// transparent huge pages for pools (tried: `compare`'s replays, which fill
// their pools, ran ~10 % slower). Only for trivially copyable element types.
//
// A *dense* array (reset(n, true): a hash table over all distinct blocks,
// whose entries land all over it) is the other case: every page is touched,
// so a large one is mapped with transparent huge pages asked for, one fault
// and one TLB entry per 2 MiB instead of 512. Cache mode's ideal hit rate
// table on 50k small requests (1.39 M distinct blocks): 0.70 -> 0.46 CPU s
// for the whole run, half of the table's cost being 4 KiB page faults and
// the memset of each doubled table.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

namespace prefixsim {

template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "ZeroedArray holds plain data whose zero bytes are its empty state");

 public:
  ZeroedArray() = default;
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ZeroedArray(ZeroedArray&& o) noexcept { swap(o); }
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    ZeroedArray(std::move(o)).swap(*this);
    return *this;
  }
  ~ZeroedArray() { release(); }

  // n elements, every byte zero; the old contents are dropped. `dense`:
  // the caller will touch it all over (see above).
  void reset(size_t n, bool dense = false) {
    release();
    if (n == 0) return;
    const size_t bytes = n * sizeof(T);
    if (dense && bytes >= kHugePage) {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: refused or absent is fine
#endif
      mapped_ = true;
      p_ = static_cast<T*>(p);
      n_ = n;
      return;
    }
    p_ = static_cast<T*>(std::calloc(n, sizeof(T)));
    if (!p_) throw std::bad_alloc();
    n_ = n;
  }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  void release() {
    if (!p_) return;
    if (mapped_) ::munmap(p_, n_ * sizeof(T));
    else std::free(p_);
    mapped_ = false;
    p_ = nullptr;
    n_ = 0;
  }
  void swap(ZeroedArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(mapped_, o.mapped_);
  }
  static constexpr size_t kHugePage = size_t{2} << 20;
  bool mapped_ = false;

  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace prefixsim
