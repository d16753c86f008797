// parallel_for(n, threads, fn): fn(i) for every i in [0, n), spread over
// `threads` threads (the caller's among them), each taking the next index as
// it finishes the last, so uneven items (compare's policy x size pairs, some
// ten times slower than others) still keep every thread busy. fn must not
// throw: a caller that can fail records the error per item and rethrows
// after (as compare does), so no thread is left running.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace prefixsim {

template <class F>
void parallel_for(size_t n, int threads, F&& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  const size_t extra = static_cast<size_t>(std::max(threads, 1)) - 1;
  for (size_t t = 0; t < std::min(extra, n > 0 ? n - 1 : 0); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

// Indices 0..n-1 by descending weight(i), ties in index order. Handed to
// parallel_for in this order, the heaviest items start first and the light
// ones fill the end, so no thread idles long while another finishes a big
// one (longest-processing-time-first; Graham 1969).
template <class W>
std::vector<size_t> heaviest_first(size_t n, W&& weight) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight(a) > weight(b); });
  return order;
}

}  // namespace prefixsim
