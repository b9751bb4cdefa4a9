// Configuration enumeration (core/docs/cost-model.md section 2).
#pragma once

#include <cstdint>
#include <vector>

#include "pase/graph.hpp"
#include "pase/plan.hpp"

namespace pase {

// The configurations of one vertex, stored flat: configuration i is
// data[i * dims .. (i + 1) * dims).
struct ConfigSet {
  int dims = 0;
  std::vector<int64_t> data;
  size_t size() const { return dims ? data.size() / dims : 0; }
  const int64_t* at(size_t i) const { return data.data() + i * dims; }
};

// Enumerates vertex `vertex` of `g` (cutoff g.cutoff): per dimension the divisors e of d with d / e
// >= cutoff (or just 1), pinned dimensions 1, tuples with product <= devices (== devices with
// all_devices), first dimension outermost, splits ascending; Ravel and Unravel keep only contiguous
// configurations. Errors: more than kMaxConfigurations, or none left by the options.
Result<ConfigSet> enumerate_vertex(const Graph& g, int vertex, int64_t devices,
                                   const EnumOptions& options);

// Every vertex of the graph; errors name the layer ("layers[3]"). Refused
// ("max_memory") once the configurations take more than `max_bytes` (0: no
// limit).
Result<std::vector<ConfigSet>> enumerate_all(const Graph& g, int64_t devices,
                                             const EnumOptions& options, uint64_t max_bytes = 0);

}  // namespace pase
