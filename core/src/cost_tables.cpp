// Vertex cost vectors and pair cost matrices for the search.
#include "cost_tables.hpp"

#include <algorithm>
#include <map>

namespace pase {

std::vector<double> vertex_cost_vector(const Graph& g, int vertex, const ConfigSet& set,
                                       const ops::Machine& m) {
  std::vector<double> out(set.size());
  for (size_t i = 0; i < set.size(); ++i)
    out[i] = ops::layer_cost(g, g.vertices[vertex], set.at(i), m).total;
  return out;
}

double edge_cost(const Graph& g, const Edge& e, const int64_t* c_src, const int64_t* c_dst,
                 const ops::Machine& m) {
  const Shape& shape = g.vertices[e.src].outputs[e.src_output].shape;
  const TensorMap& out = model_of(g, e.src).out_maps[e.src_output];
  const TensorMap& in = model_of(g, e.dst).in_maps[e.dst_slot];
  std::vector<int64_t> s(out.size()), t(in.size());
  ops::tensor_config(out, c_src, s.data());
  ops::tensor_config(in, c_dst, t.data());
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
// `ids[i]` is the index in `unique` of configuration i's tensor configuration.
void distinct_tensor_configs(const TensorMap& map, const ConfigSet& set,
                             std::vector<std::vector<int64_t>>& unique, std::vector<int>& ids) {
  std::map<std::vector<int64_t>, int> seen;
  std::vector<int64_t> t(map.size());
  ids.resize(set.size());
  for (size_t i = 0; i < set.size(); ++i) {
    ops::tensor_config(map, set.at(i), t.data());
    auto [it, fresh] = seen.emplace(t, static_cast<int>(unique.size()));
    if (fresh) unique.push_back(t);
    ids[i] = it->second;
  }
}

}  // namespace

std::vector<double> pair_matrix(const Graph& g, const std::vector<ConfigSet>& configs,
                                const std::vector<int>& edge_ids, int outer, int inner,
                                const ops::Machine& m) {
  size_t n_outer = configs[outer].size(), n_inner = configs[inner].size();
  std::vector<double> out(n_outer * n_inner, 0.0);
  for (int id : edge_ids) {
    const Edge& e = g.edges[id];
    const Shape& shape = g.vertices[e.src].outputs[e.src_output].shape;
    std::vector<std::vector<int64_t>> us, ud;
    std::vector<int> is, id_dst;
    distinct_tensor_configs(model_of(g, e.src).out_maps[e.src_output], configs[e.src], us, is);
    distinct_tensor_configs(model_of(g, e.dst).in_maps[e.dst_slot], configs[e.dst], ud, id_dst);
    std::vector<double> small(us.size() * ud.size());
    for (size_t a = 0; a < us.size(); ++a)
      for (size_t b = 0; b < ud.size(); ++b)
        small[a * ud.size() + b] =
            m.words(2 * ops::redistribution_words(shape, us[a].data(), ud[b].data()));
    bool src_outer = e.src == outer;
    for (size_t i = 0; i < n_outer; ++i)
      for (size_t j = 0; j < n_inner; ++j) {
        size_t a = src_outer ? is[i] : is[j], b = src_outer ? id_dst[j] : id_dst[i];
        out[i * n_inner + j] += small[a * ud.size() + b];
      }
  }
  return out;
}

}  // namespace pase
