// Configuration enumeration (core/docs/cost-model.md section 2): cartesian product of
// per-dimension split candidates, bounded by the device count.
#include "cost/configurations.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "model/cost_model.hpp"
#include "util/text.hpp"

namespace pase {

namespace {

bool is_pow2(int64_t x) { return (x & (x - 1)) == 0; }

std::vector<int64_t> candidates(int64_t d, bool pinned, int64_t cutoff, int64_t devices,
                                bool pow2_only) {
  std::vector<int64_t> out;
  if (!pinned) {
    for (int64_t e = 1; e <= devices && e <= d; ++e)
      if (d % e == 0 && d / e >= cutoff && (!pow2_only || is_pow2(e))) out.push_back(e);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

// Ravel / Unravel: leading dimensions fully split (split == size), then one
// free dimension, then only 1s.
bool contiguous(const Vertex& v, const int64_t* c) {
  size_t i = 0;
  while (i < v.dom.size() && c[i] == v.dom[i]) ++i;
  for (size_t j = i + 1; j < v.dom.size(); ++j)
    if (c[j] != 1) return false;
  return true;
}

// all_devices: reach[k][j] says whether dimensions k.. can multiply to exactly
// divisors[j] (a divisor of `devices`). O(dims * candidates * divisors).
std::vector<std::vector<char>> exact_products(const std::vector<std::vector<int64_t>>& cand,
                                              const std::vector<int64_t>& divisors) {
  auto index = [&](int64_t d) {
    return static_cast<size_t>(std::lower_bound(divisors.begin(), divisors.end(), d) -
                               divisors.begin());
  };
  std::vector<std::vector<char>> reach(cand.size() + 1, std::vector<char>(divisors.size(), 0));
  reach[cand.size()][0] = 1;  // divisors[0] == 1: the empty product
  for (size_t k = cand.size(); k-- > 0;) {
    for (size_t j = 0; j < divisors.size(); ++j) {
      if (!reach[k + 1][j]) continue;
      for (int64_t e : cand[k]) {
        const int64_t p = divisors[j] * e;  // both <= devices: no overflow
        if (p > divisors.back()) break;     // candidates ascend
        if (divisors.back() % p == 0) reach[k][index(p)] = 1;
      }
    }
  }
  return reach;
}

}  // namespace

Result<ConfigSet> enumerate_vertex(const Graph& g, int vertex, int64_t devices,
                                   const EnumOptions& options) {
  const Vertex& v = g.vertices[vertex];
  const VertexModel& model = model_of(g, vertex);
  const int64_t cutoff = g.cutoff;
  size_t n = v.dom.size();
  std::vector<std::vector<int64_t>> cand(n);
  for (size_t i = 0; i < n; ++i)
    cand[i] = candidates(v.dom[i], model.pinned[i], cutoff, devices, options.pow2_only);
  ConfigSet set;
  set.dims = static_cast<int>(n);
  std::vector<int64_t> cur(n, 1);
  bool filter = model.contiguous_only;
  // The depth-first search below skips only subtrees that hold no kept tuple,
  // so order and result are those of the plain product. Without the pruning, a
  // Ravel of many dimensions, or all_devices with a device count the sizes
  // cannot make, visits every tuple with product <= devices (billions) to keep
  // a handful, and planning hangs.
  std::vector<int64_t> divisors;
  std::vector<std::vector<char>> reach;
  if (options.all_devices) {
    for (int64_t d = 1; d <= devices; ++d)
      if (devices % d == 0) divisors.push_back(d);
    reach = exact_products(cand, divisors);
  }
  auto can_finish = [&](size_t k, int64_t prod) {
    // A product that does not divide the devices never will, times more.
    if (options.mesh_only && devices % prod != 0) return false;
    if (!options.all_devices) return true;
    if (devices % prod != 0) return false;
    const int64_t rest = devices / prod;
    auto it = std::lower_bound(divisors.begin(), divisors.end(), rest);
    return reach[k][static_cast<size_t>(it - divisors.begin())] != 0;
  };
  // Depth-first over the tuple, pruning on the running product. `broken`:
  // some earlier split of a Ravel/Unravel is not its full size, so every later
  // one must be 1 (see contiguous()).
  bool too_many = false;
  auto rec = [&](auto&& self, size_t k, int64_t prod, bool broken) -> void {
    if (too_many || !can_finish(k, prod)) return;
    if (k == n) {
      if (options.all_devices && prod != devices) return;
      if (filter && !contiguous(v, cur.data())) return;
      if (set.size() >= static_cast<size_t>(kMaxConfigurations)) {
        too_many = true;
        return;
      }
      set.data.insert(set.data.end(), cur.begin(), cur.end());
      return;
    }
    for (int64_t e : cand[k]) {
      if (prod * e > devices) break;  // candidates ascend
      if (filter && broken && e != 1) break;
      cur[k] = e;
      self(self, k + 1, prod * e, broken || e != v.dom[k]);
    }
    cur[k] = 1;
  };
  rec(rec, 0, 1, false);
  if (too_many)
    return Error{"has more than " + std::to_string(kMaxConfigurations) + " configurations at " +
                     std::to_string(devices) + " devices (use fewer devices or --pow2-only)",
                 ""};
  if (set.size() == 0)
    return Error{"has no configuration that uses all " + std::to_string(devices) + " devices", ""};
  return set;
}

Result<std::vector<ConfigSet>> enumerate_all(const Graph& g, int64_t devices,
                                             const EnumOptions& options, uint64_t max_bytes) {
  std::vector<ConfigSet> out;
  out.reserve(g.vertices.size());
  uint64_t bytes = 0;
  for (const Vertex& v : g.vertices) {
    auto r = enumerate_vertex(g, v.id, devices, options);
    if (!r) {
      return Error{
          "vertex " + std::to_string(v.id) + " (" + v.name + ", " + v.op + ") " + r.error().message,
          "layers[" + std::to_string(v.layer) + "]"};
    }
    // Each vertex holds at most kMaxConfigurations, but a graph of many wide
    // vertices could still fill the memory before the tables are even sized.
    bytes += r->data.size() * sizeof(int64_t);
    if (max_bytes != 0 && bytes > max_bytes) {
      return Error{"the configurations of the first " + std::to_string(v.id + 1) + " of " +
                       std::to_string(g.vertices.size()) + " vertices already need " +
                       bytes_text(static_cast<double>(bytes)) + ", more than the limit of " +
                       bytes_text(static_cast<double>(max_bytes)) +
                       "; raise the memory limit (max_memory) or use fewer devices",
                   "max_memory"};
    }
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace pase
