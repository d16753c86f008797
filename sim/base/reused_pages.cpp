#include "sim/base/reused_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace prefixsim::reused_pages {
namespace {

// What is kept, in mappings' bytes: about one large run's pools (64 TP-8
// replicas map ~0.8 GB), so the next run of a doubling search reuses the
// last one's. Kept pages count in the process's RSS; 2 GiB (tried) saved
// `plan` no more faults (322k either way).
constexpr size_t kKeepLimit = size_t{768} << 20;

struct Mapping {
  void* p;
  size_t bytes;
};

struct Kept {
  std::mutex mu;
  std::vector<Mapping> maps;  // oldest first
  size_t bytes = 0;
};
Kept& kept() {
  static Kept* k = new Kept;  // never destroyed: arrays may be released during exit
  return *k;
}

size_t page_size() {
  static const size_t p = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

bool page_is_zero(const unsigned char* p, size_t n) {
  uint64_t any = 0;
  for (size_t i = 0; i < n; i += sizeof(uint64_t)) {
    uint64_t w;
    std::memcpy(&w, p + i, sizeof w);
    any |= w;
  }
  return any == 0;
}

// Zeroes a mapping's pages that are not zero already. A resident page is
// read and written if it is not all zeros. A page that is not resident was
// either never touched (it reads as zero) or swapped out, and a swapped-out
// page comes back with its old contents: each run of such pages is dropped
// (MADV_DONTNEED: a private anonymous page reads as zero afterwards, its swap
// entry freed). Pools are used from their first block on, so a mapping has
// few such runs, mostly one tail; where nothing was ever touched the call
// finds no page to drop.
void clear_used(void* p, size_t bytes) {
  const size_t page = page_size();
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  auto* base = static_cast<unsigned char*>(p);
  if (::mincore(p, bytes, resident.data()) != 0) {  // cannot tell: clear it all
    std::memset(p, 0, bytes);
    return;
  }
  for (size_t i = 0; i < resident.size();) {
    if (resident[i] & 1) {
      unsigned char* q = base + i * page;
      const size_t n = std::min(page, bytes - i * page);
      if (!page_is_zero(q, n)) std::memset(q, 0, n);
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < resident.size() && !(resident[end] & 1)) ++end;
    if (::madvise(base + i * page, (end - i) * page, MADV_DONTNEED) != 0)
      std::memset(base + i * page, 0, std::min((end - i) * page, bytes - i * page));
    i = end;
  }
}

std::atomic<bool> g_active{false};

}  // namespace

bool active() { return g_active.load(std::memory_order_relaxed); }
void note_release() { g_active.store(true, std::memory_order_relaxed); }

void* take(size_t bytes, size_t& capacity) {
  const size_t page = page_size();
  bytes = (bytes + page - 1) / page * page;
  Kept& k = kept();
  Mapping found{nullptr, 0};
  {
    const std::lock_guard<std::mutex> lock(k.mu);
    size_t best = k.maps.size();
    for (size_t i = 0; i < k.maps.size(); ++i) {
      const size_t b = k.maps[i].bytes;
      if (b >= bytes && (best == k.maps.size() || b <= k.maps[best].bytes)) best = i;  // ties: the newest
    }
    if (best < k.maps.size()) {
      found = k.maps[best];
      k.maps.erase(k.maps.begin() + static_cast<std::ptrdiff_t>(best));
      k.bytes -= found.bytes;
    }
  }
  if (found.p) {
    clear_used(found.p, found.bytes);
    capacity = found.bytes;
    return found.p;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  capacity = bytes;
  return p;
}

void give(void* p, size_t capacity) {
  if (!p) return;
  if (capacity > kKeepLimit) {
    ::munmap(p, capacity);
    return;
  }
  Kept& k = kept();
  std::vector<Mapping> drop;
  {
    const std::lock_guard<std::mutex> lock(k.mu);
    size_t n = 0;
    while (k.bytes + capacity > kKeepLimit && n < k.maps.size()) {
      k.bytes -= k.maps[n].bytes;
      drop.push_back(k.maps[n++]);
    }
    k.maps.erase(k.maps.begin(), k.maps.begin() + static_cast<std::ptrdiff_t>(n));
    k.maps.push_back({p, capacity});
    k.bytes += capacity;
  }
  for (const Mapping& m : drop) ::munmap(m.p, m.bytes);  // outside the lock: munmap is slow
}

size_t kept_bytes() {
  Kept& k = kept();
  const std::lock_guard<std::mutex> lock(k.mu);
  return k.bytes;
}

void release_all() {
  Kept& k = kept();
  std::vector<Mapping> drop;
  {
    const std::lock_guard<std::mutex> lock(k.mu);
    drop.swap(k.maps);
    k.bytes = 0;
  }
  for (const Mapping& m : drop) ::munmap(m.p, m.bytes);
}

}  // namespace prefixsim::reused_pages
