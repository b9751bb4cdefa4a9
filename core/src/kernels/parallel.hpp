// Splits [0, n) into `threads` contiguous ranges and runs fn(lo, hi) on each,
// the calling thread taking the first; one thread (or n too small to split)
// runs fn(0, n) here. For loops whose iterations write disjoint outputs, so
// that the result does not depend on the split.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace pase::detail {

template <class Fn>
void parallel_ranges(int threads, int64_t n, Fn&& fn) {
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  if (parts == 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> helpers;
  helpers.reserve(parts - 1);
  for (int64_t k = 1; k < parts; ++k)
    helpers.emplace_back([&fn, k, n, parts] { fn(n * k / parts, n * (k + 1) / parts); });
  fn(int64_t{0}, n / parts);
  for (std::thread& h : helpers) h.join();
}

}  // namespace pase::detail
