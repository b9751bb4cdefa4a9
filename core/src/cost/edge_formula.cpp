// The re-distribution formulas of one tensor edge (core/docs/cluster.md,
// "Re-distribution between layers"; the practice model's both ways,
// core/docs/practice-model.md, "Communication"): the placements of its ends,
// the flat and the hierarchical prices, and edge_cost(). The tables that
// keep these prices for the search are cost_tables.cpp's.
#include "cost/edge_formula.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "cost/cost_tables.hpp"

namespace pase {

namespace detail {

// The producer of a vertex of `n` dimensions at configuration `c`, writing a
// tensor through `map`: device d holds the layer block whose indices are d
// in mixed radix over c, the last dimension innermost; its cell in tensor
// dimension i combines the block indices of map[i]'s positions, the first
// outermost.
Placement placement(const Shape& shape, const TensorMap& map, const int64_t* c, size_t n,
                    int64_t per_node) {
  Placement p;
  p.split.resize(map.size());
  ops::tensor_config(map, c, p.split.data());
  int64_t q = 1;
  for (size_t k = 0; k < n; ++k) q *= c[k];
  const int64_t devices = std::min(per_node, q);
  p.all_near = q <= per_node;
  std::vector<int64_t> block(n), cell(map.size());
  for (int64_t d = 1; d < devices; ++d) {
    int64_t rest = d;
    for (size_t k = n; k-- > 0;) {
      block[k] = rest % c[k];
      rest /= c[k];
    }
    bool origin = true;
    for (size_t i = 0; i < map.size(); ++i) {
      int64_t index = 0;
      for (int pos : map[i]) index = index * c[pos] + block[pos];
      cell[i] = index;
      origin = origin && index == 0;
    }
    if (!origin) p.near_cells.push_back(cell);
  }
  std::sort(p.near_cells.begin(), p.near_cells.end());
  p.near_cells.erase(std::unique(p.near_cells.begin(), p.near_cells.end()), p.near_cells.end());
  for (size_t i = 0; i < map.size(); ++i) {
    p.width.push_back(static_cast<double>(shape[i]) / static_cast<double>(p.split[i]));
    p.devices *= p.split[i];
  }
  for (const std::vector<int64_t>& near : p.near_cells)
    for (size_t i = 0; i < map.size(); ++i)
      p.near_lo.push_back(static_cast<double>(near[i]) * p.width[i]);
  return p;
}

// One way of the hierarchical edge cost (the paper model counts it twice,
// forward and backward; the practice model adds the way back, from the
// consumer's placement to the producer's box): the flat edge's words, priced
// by the share `phi` of the missing data that lives off device 0's node.
// `box` is device 0's box under the consumer's configuration t, per tensor
// dimension: shape[i] / t[i].
// `one_node`: whether the consumer's group (its first q devices, q the
// product of its layer configuration) lies on device 0's node; it prices the
// data when device 0's needed box lies in its own cell (need = own) but the
// flat words are not 0: the consumer splits the tensor more than the
// producer, and the words go to the group's other devices.
double one_way(const Shape& shape, const Placement& src, const int64_t* t, const double* box,
               bool one_node, const ops::Machine& m) {
  // The flat words are ops::redistribution_words() of (src.split, t), from
  // the same quotients in the same order: box[i] is shape[i] / t[i] and
  // src.width[i] shape[i] / src.split[i], so `need` and `own` are its need
  // and have, bit for bit.
  const size_t n = shape.size();
  double need = 1, own = 1;
  int64_t consumers = 1;
  for (size_t i = 0; i < n; ++i) {
    need *= box[i];
    own *= std::min(src.width[i], box[i]);
    consumers *= t[i];
  }
  const bool replicated = m.cost_model == CostModel::kPractice;
  const double have = consumers > src.devices && !replicated ? 0 : own;
  const double x = std::max(need - have, 0.0);
  if (x == 0) return 0;
  const double missing = need - own;
  if (!(missing > 0)) return x * (one_node ? m.r1 : m.r);
  if (src.all_near) return x * m.r1;
  double near = 0;
  for (size_t k = 0; k < src.near_cells.size(); ++k) {
    const double* lo = src.near_lo.data() + k * n;
    double overlap = 1;
    for (size_t i = 0; i < n && overlap > 0; ++i)
      overlap *= std::max(0.0, std::min(box[i], lo[i] + src.width[i]) - lo[i]);
    near += overlap;
  }
  const double phi = (need - own - near) / missing;
  return x * (m.r1 * (1 - phi) + m.r * phi);
}

// The hierarchical edge: twice the way forward (the paper model), or the way
// forward plus the gradient's way back (the practice model: `dst`, the
// consumer's placement, given).
double hierarchical_edge(const Shape& shape, const Placement& src, const Placement* dst,
                         const int64_t* t, const double* box, bool one_node,
                         const ops::Machine& m) {
  const double forward = one_way(shape, src, t, box, one_node, m);
  if (dst == nullptr) return 2 * forward;
  return forward + one_way(shape, *dst, src.split.data(), src.width.data(), src.all_near, m);
}

// The flat edge's elements: twice the way forward (the paper model), or the
// way forward plus the gradient's way back, replication-aware (the practice
// model, core/docs/practice-model.md, "Communication").
double flat_edge(const Shape& shape, const int64_t* s, const int64_t* t, const ops::Machine& m) {
  if (m.cost_model != CostModel::kPractice)
    return m.words(2 * ops::redistribution_words(shape, s, t, false));
  return m.words(ops::redistribution_words(shape, s, t, true) +
                 ops::redistribution_words(shape, t, s, true));
}

// 1 when a layer at configuration `c` (n dimensions) runs on devices that
// all lie on device 0's node (the first `near` devices), else 0.
int64_t group_on_node(const int64_t* c, size_t n, int64_t near) {
  int64_t q = 1;
  for (size_t k = 0; k < n && q <= near; ++k) q *= c[k];
  return q <= near ? 1 : 0;
}

// Device 0's box of a tensor of `shape` at tensor configuration t.
std::vector<double> box_of(const Shape& shape, const int64_t* t) {
  std::vector<double> box(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    box[i] = static_cast<double>(shape[i]) / static_cast<double>(t[i]);
  return box;
}

std::vector<Placement> distinct_placements(const Shape& shape, const TensorMap& map,
                                           const ConfigSet& set, int64_t per_node,
                                           std::vector<int>& ids) {
  std::map<Placement, int> seen;
  ids.resize(set.size());
  for (size_t i = 0; i < set.size(); ++i)
    ids[i] = seen.emplace(placement(shape, map, set.at(i), set.dims, per_node),
                          static_cast<int>(seen.size()))
                 .first->second;
  std::vector<Placement> out(seen.size());
  for (auto& [p, id] : seen) out[id] = p;
  return out;
}

}  // namespace detail

using namespace detail;

double edge_cost(const Graph& g, const Edge& e, const int64_t* c_src, const int64_t* c_dst,
                 const ops::Machine& m) {
  const Shape& shape = g.vertices[e.src].outputs[e.src_output].shape;
  const TensorMap& out = model_of(g, e.src).out_maps[e.src_output];
  const TensorMap& in = model_of(g, e.dst).in_maps[e.dst_slot];
  std::vector<int64_t> s(out.size()), t(in.size());
  ops::tensor_config(out, c_src, s.data());
  ops::tensor_config(in, c_dst, t.data());
  if (m.gpus_per_node > 0) {
    const Placement src =
        placement(shape, out, c_src, g.vertices[e.src].dom.size(), m.near_devices());
    const bool one_node = group_on_node(c_dst, g.vertices[e.dst].dom.size(), m.near_devices()) != 0;
    std::optional<Placement> dst;
    if (EndView::of(m).consumer_placed())
      dst = placement(shape, in, c_dst, g.vertices[e.dst].dom.size(), m.near_devices());
    return hierarchical_edge(shape, src, dst ? &*dst : nullptr, t.data(),
                             box_of(shape, t.data()).data(), one_node, m);
  }
  return flat_edge(shape, s.data(), t.data(), m);
}

}  // namespace pase
