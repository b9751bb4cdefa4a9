// Configuration enumeration (cost-model.md section 2): cartesian product of
// per-dimension split candidates, bounded by the device count.
#include "configurations.hpp"

#include <string>

namespace pase {

namespace {

bool is_pow2(int64_t x) { return (x & (x - 1)) == 0; }

std::vector<int64_t> candidates(int64_t d, bool pinned, int64_t cutoff, int64_t devices, bool pow2_only) {
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

}  // namespace

Result<ConfigSet> enumerate_vertex(const Vertex& v, int64_t cutoff, int64_t devices, const EnumOptions& options) {
  size_t n = v.dom.size();
  std::vector<std::vector<int64_t>> cand(n);
  for (size_t i = 0; i < n; ++i)
    cand[i] = candidates(v.dom[i], v.pinned[i], cutoff, devices, options.pow2_only);
  ConfigSet set;
  set.dims = static_cast<int>(n);
  std::vector<int64_t> cur(n, 1);
  std::vector<size_t> idx(n, 0);
  bool filter = v.op == Op::kRavel || v.op == Op::kUnravel;
  // Depth-first over the tuple, pruning on the running product.
  bool too_many = false;
  auto rec = [&](auto&& self, size_t k, int64_t prod) -> void {
    if (too_many) return;
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
      cur[k] = e;
      self(self, k + 1, prod * e);
    }
    cur[k] = 1;
  };
  rec(rec, 0, 1);
  if (too_many)
    return Error{"has more than " + std::to_string(kMaxConfigurations) + " configurations at " +
                     std::to_string(devices) + " devices (use fewer devices or --pow2-only)",
                 ""};
  if (set.size() == 0) return Error{"has no configuration that uses all " + std::to_string(devices) + " devices", ""};
  return set;
}

Result<std::vector<ConfigSet>> enumerate_all(const Graph& g, int64_t devices, const EnumOptions& options) {
  std::vector<ConfigSet> out;
  out.reserve(g.vertices.size());
  for (const Vertex& v : g.vertices) {
    auto r = enumerate_vertex(v, g.cutoff, devices, options);
    if (!r) {
      return Error{"vertex " + std::to_string(v.id) + " (" + v.name + ", " + op_name(v.op) + ") " + r.error().message,
                   "layers[" + std::to_string(v.layer) + "]"};
    }
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace pase
