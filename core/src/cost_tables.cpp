// Vertex cost vectors and pair cost matrices for the search.
#include "cost_tables.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace pase {

std::vector<double> vertex_cost_vector(const Graph& g, int vertex, const ConfigSet& set,
                                       const ops::Machine& m) {
  std::vector<double> out(set.size());
  const Vertex& v = g.vertices[vertex];
  for (size_t i = 0; i < set.size(); ++i) {
    out[i] = ops::layer_cost(g, v, set.at(i), m).total;
    // Planning under a memory cap weighs the two (Machine); the plain search
    // keeps the cost as it is.
    if (m.cost_weight != 1 || m.memory_weight != 0) {
      out[i] =
          m.cost_weight * out[i] + m.memory_weight * ops::vertex_memory(g, v, set.at(i), m).total();
    }
  }
  return out;
}

namespace {

// Where a producer's tensor lives, as far as the hierarchical edge needs
// (core/docs/cluster.md, "Re-distribution between layers"): its tensor
// configuration and the cells, other than (0,..,0), that the devices of node
// 0 hold, sorted and distinct.
struct Placement {
  std::vector<int64_t> split;
  std::vector<std::vector<int64_t>> near_cells;
  // Derived, for the edge's inner loop: a cell's width per tensor dimension,
  // and each near cell's lower corner (near_cells.size() x dimensions).
  std::vector<double> width, near_lo;
  bool operator<(const Placement& o) const {
    return split != o.split ? split < o.split : near_cells < o.near_cells;
  }
};

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
  for (size_t i = 0; i < map.size(); ++i)
    p.width.push_back(static_cast<double>(shape[i]) / static_cast<double>(p.split[i]));
  for (const std::vector<int64_t>& near : p.near_cells)
    for (size_t i = 0; i < map.size(); ++i)
      p.near_lo.push_back(static_cast<double>(near[i]) * p.width[i]);
  return p;
}

// The hierarchical edge cost: the flat edge's words, priced by the share
// `phi` of the missing data that lives off device 0's node.
// `box` is device 0's box under the consumer's configuration t, per tensor
// dimension: shape[i] / t[i].
double hierarchical_edge(const Shape& shape, const Placement& src, const int64_t* t,
                         const double* box, const ops::Machine& m) {
  const double x = ops::redistribution_words(shape, src.split.data(), t);
  if (x == 0) return 0;
  const size_t n = shape.size();
  double need = 1, own = 1;
  for (size_t i = 0; i < n; ++i) {
    need *= box[i];
    own *= std::min(box[i], src.width[i]);
  }
  double near = 0;
  for (size_t k = 0; k < src.near_cells.size(); ++k) {
    const double* lo = src.near_lo.data() + k * n;
    double overlap = 1;
    for (size_t i = 0; i < n && overlap > 0; ++i)
      overlap *= std::max(0.0, std::min(box[i], lo[i] + src.width[i]) - lo[i]);
    near += overlap;
  }
  const double missing = need - own;
  const double phi = missing > 0 ? (need - own - near) / missing : 0;
  return 2 * x * (m.r1 * (1 - phi) + m.r * phi);
}

// Device 0's box of a tensor of `shape` at tensor configuration t.
std::vector<double> box_of(const Shape& shape, const int64_t* t) {
  std::vector<double> box(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    box[i] = static_cast<double>(shape[i]) / static_cast<double>(t[i]);
  return box;
}

}  // namespace

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
        placement(shape, out, c_src, g.vertices[e.src].dom.size(), m.gpus_per_node);
    return hierarchical_edge(shape, src, t.data(), box_of(shape, t.data()).data(), m);
  }
  return m.words(2 * ops::redistribution_words(shape, s.data(), t.data()));
}

std::vector<PairEdges> group_edges(const Graph& g) {
  std::map<std::pair<int, int>, std::vector<int>> pairs;
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const Edge& e = g.edges[i];
    pairs[{std::min(e.src, e.dst), std::max(e.src, e.dst)}].push_back(static_cast<int>(i));
  }
  std::vector<PairEdges> out;
  out.reserve(pairs.size());
  for (auto& [key, ids] : pairs) out.push_back(PairEdges{key.first, key.second, std::move(ids)});
  return out;
}

namespace {

// Distinct tensor configurations of a vertex's configurations under `map`:
// `ids[i]` is the index in `unique` of configuration i's tensor configuration,
// numbered by first appearance. Sorted, not hashed: no allocation per
// configuration.
void distinct_tensor_configs(const TensorMap& map, const ConfigSet& set,
                             std::vector<std::vector<int64_t>>& unique, std::vector<int>& ids) {
  const size_t n = set.size(), w = map.size();
  std::vector<int64_t> flat(n * w);
  for (size_t i = 0; i < n; ++i) ops::tensor_config(map, set.at(i), flat.data() + i * w);
  auto row = [&](int i) { return flat.data() + static_cast<size_t>(i) * w; };
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Stable: each run of equal rows starts with its least configuration.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::lexicographical_compare(row(a), row(a) + w, row(b), row(b) + w);
  });
  std::vector<int> leader(n);
  for (size_t k = 0; k < n; ++k) {
    const int i = order[k];
    const bool same = k > 0 && std::equal(row(i), row(i) + w, row(order[k - 1]));
    leader[i] = same ? leader[order[k - 1]] : i;
  }
  ids.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (leader[i] == static_cast<int>(i)) {
      ids[i] = static_cast<int>(unique.size());
      unique.emplace_back(row(static_cast<int>(i)), row(static_cast<int>(i)) + w);
    } else {
      ids[i] = ids[leader[i]];
    }
  }
}

}  // namespace

std::vector<int> edge_end_ids(const Graph& g, const ConfigSet& set, const Edge& e, bool producer,
                              int64_t gpus_per_node) {
  std::vector<std::vector<int64_t>> unique;
  std::vector<int> ids;
  if (!producer) {
    distinct_tensor_configs(model_of(g, e.dst).in_maps[e.dst_slot], set, unique, ids);
    return ids;
  }
  const TensorMap& map = model_of(g, e.src).out_maps[e.src_output];
  if (gpus_per_node == 0) {
    distinct_tensor_configs(map, set, unique, ids);
    return ids;
  }
  const Shape& shape = g.vertices[e.src].outputs[e.src_output].shape;
  std::map<Placement, int> seen;
  ids.resize(set.size());
  for (size_t i = 0; i < set.size(); ++i)
    ids[i] = seen.emplace(placement(shape, map, set.at(i), set.dims, gpus_per_node),
                          static_cast<int>(seen.size()))
                 .first->second;
  return ids;
}

std::vector<double> pair_matrix(const Graph& g, const std::vector<ConfigSet>& configs,
                                const std::vector<int>& edge_ids, int outer, int inner,
                                const ops::Machine& m, const std::vector<int>* outer_rows) {
  size_t n_outer = outer_rows ? outer_rows->size() : configs[outer].size();
  size_t n_inner = configs[inner].size();
  std::vector<double> out(n_outer * n_inner, 0.0);
  for (int id : edge_ids) {
    const Edge& e = g.edges[id];
    const Shape& shape = g.vertices[e.src].outputs[e.src_output].shape;
    std::vector<std::vector<int64_t>> us, ud;
    std::vector<int> is, id_dst;
    distinct_tensor_configs(model_of(g, e.dst).in_maps[e.dst_slot], configs[e.dst], ud, id_dst);
    std::vector<double> small;
    if (m.gpus_per_node > 0) {
      // The producer's placements, not only its tensor configurations, tell
      // its configurations apart (core/docs/cluster.md).
      const ConfigSet& set = configs[e.src];
      const TensorMap& map = model_of(g, e.src).out_maps[e.src_output];
      std::map<Placement, int> seen;
      std::vector<const Placement*> unique;
      is.resize(set.size());
      for (size_t i = 0; i < set.size(); ++i) {
        auto [it, fresh] = seen.emplace(placement(shape, map, set.at(i), set.dims, m.gpus_per_node),
                                        static_cast<int>(unique.size()));
        if (fresh) unique.push_back(&it->first);
        is[i] = it->second;
      }
      us.resize(unique.size());
      small.resize(unique.size() * ud.size());
      std::vector<std::vector<double>> boxes;
      for (const std::vector<int64_t>& t : ud) boxes.push_back(box_of(shape, t.data()));
      for (size_t a = 0; a < unique.size(); ++a)
        for (size_t b = 0; b < ud.size(); ++b)
          small[a * ud.size() + b] =
              hierarchical_edge(shape, *unique[a], ud[b].data(), boxes[b].data(), m);
    } else {
      distinct_tensor_configs(model_of(g, e.src).out_maps[e.src_output], configs[e.src], us, is);
      small.resize(us.size() * ud.size());
      for (size_t a = 0; a < us.size(); ++a)
        for (size_t b = 0; b < ud.size(); ++b)
          small[a * ud.size() + b] =
              m.words(2 * ops::redistribution_words(shape, us[a].data(), ud[b].data()));
    }
    bool src_outer = e.src == outer;
    for (size_t r = 0; r < n_outer; ++r) {
      const size_t i = outer_rows ? static_cast<size_t>((*outer_rows)[r]) : r;
      for (size_t j = 0; j < n_inner; ++j) {
        size_t a = src_outer ? is[i] : is[j], b = src_outer ? id_dst[j] : id_dst[i];
        out[r * n_inner + j] += small[a * ud.size() + b];
      }
    }
  }
  if (m.cost_weight != 1)
    for (double& x : out) x *= m.cost_weight;
  return out;
}

}  // namespace pase
