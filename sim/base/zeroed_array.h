// A fixed-size array whose elements start as all-zero bytes without being
// written: memory fresh from the kernel reads as zero and costs nothing until
// first touched. So a structure whose empty state is all zeros is reset
// without touching fresh memory, and a run pays only for the part it uses.
//
// Why: a fleet of many replicas builds a pool per replica, each sized for its
// whole KV memory (a TP-8 replica of an 8B model holds ~280k blocks), while
// a lightly loaded replica uses a fraction of it. Filling every pool's
// per-block vectors at construction was most of such a run (64 replicas of
// TP 8: ~60 % of the run in page faults and fills, perf).
//
// Three sources, by size and use:
// - small (under 256 KiB): calloc;
// - large and *sparse* (a pool's per-block arrays, touched from the low ids
//   up as far as the run gets): once the process has released one (plan,
//   compare and sweep build pools run after run), a mapping from
//   reused_pages.h, which keeps the mappings of finished runs and clears
//   only the pages they used, so later runs do not fault their pages afresh
//   (faults are dear on this project's VMs); before that, calloc (which may
//   reuse heap memory the process holds: a lone replay's RSS). Not
//   transparent huge pages (tried: `compare`'s replays ran ~10 % slower,
//   2 MiB cleared per fault of which a sparse array used a part);
// - large and *dense* (reset(n, true): a hash table whose entries land all
//   over it, like the ideal hit rate's table or a pool's hash buckets): every
//   page is touched, so it is mapped with transparent huge pages asked for,
//   one fault and one TLB entry per 2 MiB instead of 512. Cache mode's ideal
//   hit rate table on 50k small requests (1.39 M distinct blocks): 0.70 ->
//   0.46 CPU s for the whole run.
// Only for trivially copyable element types.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

#include "sim/base/reused_pages.h"

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
    dense_ = dense;
    const size_t bytes = n * sizeof(T);
    if (dense && bytes >= kHugePage) {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: refused or absent is fine
#endif
      source_ = Source::kMapped;
      p_ = static_cast<T*>(p);
      capacity_ = bytes;
      n_ = n;
      return;
    }
    if (bytes >= kReuseMin && reused_pages::active()) {
      p_ = static_cast<T*>(reused_pages::take(bytes, capacity_));
      source_ = Source::kReused;
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
    switch (source_) {
      case Source::kCalloc:
        if (!dense_ && bytes() >= kReuseMin) reused_pages::note_release();  // a sparse one: a pool's
        std::free(p_);
        break;
      case Source::kMapped: ::munmap(p_, capacity_); break;
      case Source::kReused: reused_pages::give(p_, capacity_); break;
    }
    source_ = Source::kCalloc;
    capacity_ = 0;
    p_ = nullptr;
    n_ = 0;
  }
  void swap(ZeroedArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(source_, o.source_);
    std::swap(dense_, o.dense_);
    std::swap(capacity_, o.capacity_);
  }
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kReuseMin = size_t{256} << 10;
  enum class Source : uint8_t { kCalloc, kMapped, kReused };
  Source source_ = Source::kCalloc;
  bool dense_ = false;
  size_t capacity_ = 0;  // bytes mapped (kMapped, kReused)

  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace prefixsim
