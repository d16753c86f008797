// A fixed-size array whose elements start as all-zero bytes without being
// written: large arrays are mapped from the kernel (anonymous memory reads as
// zero, and a page costs nothing until first touched), small ones come from
// calloc. So a structure whose empty state is all zeros is reset in O(1)
// touched memory, and a run pays only for the part it uses.
//
// Why: a fleet of many replicas builds a pool per replica, each sized for its
// whole KV memory (a TP-8 replica of an 8B model holds ~280k blocks), while
// a lightly loaded replica uses a fraction of it. Filling every pool's
// per-block vectors at construction was most of such a run (`plan`'s
// 64-replica probes: ~60 % of the run in page faults and fills, perf).
//
// Large mappings ask for transparent huge pages where the kernel offers them
// by madvise: one fault per 2 MiB instead of 512 (arrays indexed by hash are
// touched all over). Only for trivially copyable element types.
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

  // n elements, every byte zero; the old contents are dropped.
  void reset(size_t n) {
    release();
    if (n == 0) return;
    const size_t bytes = n * sizeof(T);
    if (bytes >= kMapBytes) {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: refused or absent is fine
#endif
      mapped_ = true;
      p_ = static_cast<T*>(p);
    } else {
      p_ = static_cast<T*>(std::calloc(n, sizeof(T)));
      if (!p_) throw std::bad_alloc();
    }
    n_ = n;
  }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  static constexpr size_t kMapBytes = size_t{256} << 10;
  void release() {
    if (!p_) return;
    if (mapped_)
      ::munmap(p_, n_ * sizeof(T));
    else
      std::free(p_);
    p_ = nullptr;
    n_ = 0;
    mapped_ = false;
  }
  void swap(ZeroedArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(mapped_, o.mapped_);
  }

  T* p_ = nullptr;
  size_t n_ = 0;
  bool mapped_ = false;
};

}  // namespace prefixsim
