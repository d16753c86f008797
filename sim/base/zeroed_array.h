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
// transparent huge pages (tried: `compare`'s replays, which fill their
// pools, ran ~10 % slower). Only for trivially copyable element types.
#pragma once

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
    std::free(p_);
    p_ = nullptr;
    n_ = 0;
  }
  void swap(ZeroedArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }

  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace prefixsim
