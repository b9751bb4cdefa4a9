// The divisors of a count, for the searches over degrees that must divide
// it (the layout search, the engines' nearest accepted layout and the
// layout found again in a plan).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pase {

// Every divisor of n >= 1, ascending; O(sqrt(n)).
inline std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

}  // namespace pase
