// Edge prices and pair cost matrices for the search (the vertex cost
// vectors: vertex_costs.cpp).
#include "cost/cost_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>

#include "kernels/parallel.hpp"

namespace pase {

// Named, not anonymous: EdgePrices::Entry (a member of a class with linkage)
// holds Placements.
namespace detail {

// Where a producer's tensor lives, as far as the hierarchical edge needs
// (core/docs/cluster.md, "Re-distribution between layers"): its tensor
// configuration and the cells, other than (0,..,0), that the devices of node
// 0 hold, sorted and distinct.
struct Placement {
  std::vector<int64_t> split;
  std::vector<std::vector<int64_t>> near_cells;
  // Every device of the producer is on device 0's node: nothing is far
  // (phi = 0 exactly, not the rounding of need - own - near).
  bool all_near = false;
  // Derived, for the edge's inner loop: a cell's width per tensor dimension,
  // and each near cell's lower corner (near_cells.size() x dimensions).
  std::vector<double> width, near_lo;
  bool operator<(const Placement& o) const {
    if (all_near != o.all_near) return all_near < o.all_near;
    return split != o.split ? split < o.split : near_cells < o.near_cells;
  }
};

}  // namespace detail

namespace {

using detail::Placement;

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
  for (size_t i = 0; i < map.size(); ++i)
    p.width.push_back(static_cast<double>(shape[i]) / static_cast<double>(p.split[i]));
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
  const double x =
      ops::redistribution_words(shape, src.split.data(), t, m.cost_model == CostModel::kPractice);
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
  const double phi =
      missing > 0 ? (src.all_near ? 0 : (need - own - near) / missing) : (one_node ? 0 : 1);
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
// With `near` > 0 (a consumer on a machine of nodes), each row also ends
// with group_on_node() of its configuration, after the tensor configuration.
void distinct_tensor_configs(const TensorMap& map, const ConfigSet& set,
                             std::vector<std::vector<int64_t>>& unique, std::vector<int>& ids,
                             int64_t near = 0) {
  const size_t n = set.size(), w = map.size() + (near > 0 ? 1 : 0);
  std::vector<int64_t> flat(n * w);
  for (size_t i = 0; i < n; ++i) {
    ops::tensor_config(map, set.at(i), flat.data() + i * w);
    if (near > 0) flat[i * w + w - 1] = group_on_node(set.at(i), set.dims, near);
  }
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
                              EndView view) {
  std::vector<std::vector<int64_t>> unique;
  std::vector<int> ids;
  if (!producer && !view.consumer_placed()) {
    distinct_tensor_configs(model_of(g, e.dst).in_maps[e.dst_slot], set, unique, ids,
                            view.gpus_per_node);
    return ids;
  }
  const TensorMap& map =
      producer ? model_of(g, e.src).out_maps[e.src_output] : model_of(g, e.dst).in_maps[e.dst_slot];
  if (view.gpus_per_node == 0) {
    distinct_tensor_configs(map, set, unique, ids);
    return ids;
  }
  const Shape& shape = g.vertices[e.src].outputs[e.src_output].shape;
  std::map<Placement, int> seen;
  ids.resize(set.size());
  for (size_t i = 0; i < set.size(); ++i)
    ids[i] = seen.emplace(placement(shape, map, set.at(i), set.dims, view.gpus_per_node),
                          static_cast<int>(seen.size()))
                 .first->second;
  return ids;
}

// One priced edge signature: the ids of each end's configurations (tensor
// configurations of the consumer; tensor configurations or placements of the
// producer), and the prices between distinct ends, NaN until first needed.
struct EdgePrices::Entry {
  std::vector<int> src_ids, dst_ids;
  std::vector<Placement> placements;  // hierarchical: the producer's distinct ends
  // hierarchical and both ways: the consumer's distinct ends (each with its
  // `ud`, the placement's split and all_near)
  std::vector<Placement> dst_placements;
  // us: flat, the producer's ends; ud: the consumer's (with nodes, each ends
  // with group_on_node() of its configurations).
  std::vector<std::vector<int64_t>> us, ud;
  std::vector<std::vector<double>> boxes;  // the consumer's boxes, empty until needed
  std::vector<double> price;               // src end x dst end
  size_t n_src = 0, n_dst = 0;
  double bytes = 0;
};

namespace {

// A tensor map appended to a signature key, each position list after a -2.
void append_map(std::vector<int64_t>& key, const TensorMap& map) {
  for (const std::vector<int>& positions : map) {
    key.push_back(-2);
    key.insert(key.end(), positions.begin(), positions.end());
  }
}

}  // namespace

std::vector<int> config_set_ids(const std::vector<ConfigSet>& configs) {
  // Compared by content, grouped by a hash first.
  std::vector<int> set_id(configs.size());
  std::map<std::pair<int, uint64_t>, std::vector<int>> by_hash;
  int next = 0;
  for (size_t v = 0; v < configs.size(); ++v) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : configs[v].data) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    std::vector<int>& same = by_hash[{configs[v].dims, h}];
    int id = -1;
    for (int w : same)
      if (configs[w].data == configs[v].data) id = set_id[w];
    if (id < 0) {
      id = next++;
      same.push_back(static_cast<int>(v));
    }
    set_id[v] = id;
  }
  return set_id;
}

const std::vector<int>& EndIds::of(const Edge& e, bool producer) {
  const int v = producer ? e.src : e.dst;
  const TensorMap& map = producer ? model_of(g_, e.src).out_maps[e.src_output]
                                  : model_of(g_, e.dst).in_maps[e.dst_slot];
  std::vector<int64_t> key = {set_id_[v], producer ? 1 : 0};
  if ((producer && view_.gpus_per_node > 0) || (!producer && view_.consumer_placed())) {
    const Shape& shape = g_.vertices[e.src].outputs[e.src_output].shape;
    key.push_back(-1);
    key.insert(key.end(), shape.begin(), shape.end());
  }
  append_map(key, map);
  auto [it, fresh] = kept_.try_emplace(std::move(key));
  if (fresh) it->second = edge_end_ids(g_, configs_[v], e, producer, view_);
  return it->second;
}

EdgePrices::EdgePrices(const Graph& g, const std::vector<ConfigSet>& configs, EndView view,
                       double budget_bytes)
    : g_(g),
      configs_(configs),
      view_(view),
      per_node_(view.gpus_per_node),
      budget_(budget_bytes),
      set_id_(config_set_ids(configs)) {}

EdgePrices::~EdgePrices() = default;

std::vector<int64_t> EdgePrices::signature(int edge_id) const {
  const Edge& e = g_.edges[edge_id];
  const Shape& shape = g_.vertices[e.src].outputs[e.src_output].shape;
  std::vector<int64_t> key = {set_id_[e.src], set_id_[e.dst], -1};
  key.insert(key.end(), shape.begin(), shape.end());
  append_map(key, model_of(g_, e.src).out_maps[e.src_output]);
  append_map(key, model_of(g_, e.dst).in_maps[e.dst_slot]);
  return key;
}

EdgePrices::Entry& EdgePrices::entry(int edge_id, std::unique_ptr<Entry>& scratch) {
  const Edge& e = g_.edges[edge_id];
  const Shape& shape = g_.vertices[e.src].outputs[e.src_output].shape;
  const TensorMap& out_map = model_of(g_, e.src).out_maps[e.src_output];
  const TensorMap& in_map = model_of(g_, e.dst).in_maps[e.dst_slot];
  std::vector<int64_t> key = signature(edge_id);
  if (auto it = entries_.find(key); it != entries_.end()) {
    ++hits_;
    return *it->second;
  }
  auto made = std::make_unique<Entry>();
  Entry& en = *made;
  if (view_.consumer_placed()) {
    const ConfigSet& set = configs_[e.dst];
    std::map<Placement, int> seen;
    en.dst_ids.resize(set.size());
    for (size_t i = 0; i < set.size(); ++i) {
      auto [it, fresh] = seen.emplace(placement(shape, in_map, set.at(i), set.dims, per_node_),
                                      static_cast<int>(seen.size()));
      en.dst_ids[i] = it->second;
    }
    en.dst_placements.resize(seen.size());
    for (auto& [p, id] : seen) en.dst_placements[id] = p;
    for (const Placement& p : en.dst_placements) {
      en.ud.push_back(p.split);
      en.ud.back().push_back(p.all_near ? 1 : 0);
    }
  } else {
    distinct_tensor_configs(in_map, configs_[e.dst], en.ud, en.dst_ids, per_node_);
  }
  if (per_node_ > 0) {
    const ConfigSet& set = configs_[e.src];
    std::map<Placement, int> seen;
    en.src_ids.resize(set.size());
    for (size_t i = 0; i < set.size(); ++i) {
      auto [it, fresh] = seen.emplace(placement(shape, out_map, set.at(i), set.dims, per_node_),
                                      static_cast<int>(seen.size()));
      en.src_ids[i] = it->second;
    }
    en.placements.resize(seen.size());
    for (auto& [p, id] : seen) en.placements[id] = p;
    en.n_src = en.placements.size();
  } else {
    distinct_tensor_configs(out_map, configs_[e.src], en.us, en.src_ids);
    en.n_src = en.us.size();
  }
  en.n_dst = en.ud.size();
  en.boxes.resize(en.n_dst);
  en.price.assign(en.n_src * en.n_dst, std::numeric_limits<double>::quiet_NaN());
  en.bytes = static_cast<double>(en.price.size()) * sizeof(double) +
             static_cast<double>(en.src_ids.size() + en.dst_ids.size()) * sizeof(int);
  if (bytes_ + en.bytes > budget_) {
    // Over the budget: priced for this use only.
    scratch = std::move(made);
    return *scratch;
  }
  bytes_ += en.bytes;
  return *entries_.emplace(std::move(key), std::move(made)).first->second;
}

void EdgePrices::price(Entry& en, int edge_id, const std::vector<char>& need_src,
                       const std::vector<char>& need_dst, const ops::Machine& m, int threads) {
  const Edge& e = g_.edges[edge_id];
  const Shape& shape = g_.vertices[e.src].outputs[e.src_output].shape;
  if (per_node_ > 0)
    for (size_t b = 0; b < en.n_dst; ++b)
      if (need_dst[b] && en.boxes[b].empty()) en.boxes[b] = box_of(shape, en.ud[b].data());
  // Each row by one thread; counted first, so that a matrix already priced
  // costs no threads.
  size_t missing = 0;
  for (size_t a = 0; a < en.n_src; ++a) {
    if (!need_src[a]) continue;
    const double* row = en.price.data() + a * en.n_dst;
    for (size_t b = 0; b < en.n_dst; ++b) missing += need_dst[b] && std::isnan(row[b]);
  }
  if (missing == 0) return;
  auto fill = [&](int64_t lo, int64_t hi) {
    for (size_t a = static_cast<size_t>(lo); a < static_cast<size_t>(hi); ++a) {
      if (!need_src[a]) continue;
      double* row = en.price.data() + a * en.n_dst;
      for (size_t b = 0; b < en.n_dst; ++b) {
        if (!need_dst[b] || !std::isnan(row[b])) continue;
        if (per_node_ > 0)
          row[b] = hierarchical_edge(shape, en.placements[a],
                                     en.dst_placements.empty() ? nullptr : &en.dst_placements[b],
                                     en.ud[b].data(), en.boxes[b].data(), en.ud[b].back() != 0, m);
        else
          row[b] = flat_edge(shape, en.us[a].data(), en.ud[b].data(), m);
      }
    }
  };
  detail::parallel_ranges(missing >= 4096 ? threads : 1, static_cast<int64_t>(en.n_src), fill);
}

PairMatrix pair_matrix(const Graph& g, const std::vector<ConfigSet>& configs,
                       const std::vector<int>& edge_ids, int outer, int inner,
                       const ops::Machine& m, const std::vector<int>* outer_rows,
                       EdgePrices* prices, const std::vector<int>* inner_cols, int threads) {
  size_t n_outer = outer_rows ? outer_rows->size() : configs[outer].size();
  size_t n_inner = inner_cols ? inner_cols->size() : configs[inner].size();
  auto col = [&](size_t j) { return inner_cols ? static_cast<size_t>((*inner_cols)[j]) : j; };
  const double weight = m.cost_weight * m.microbatches;
  // Each row zeroed by the first edge's fill and scaled by `weight` in the
  // last one's, by the thread that fills it: the same numbers as zeroing,
  // summing and scaling the whole matrix in turn.
  PairMatrix out(n_outer * n_inner);
  if (edge_ids.empty()) std::fill(out.begin(), out.end(), 0.0);
  std::optional<EdgePrices> own;
  if (prices == nullptr) prices = &own.emplace(g, configs, EndView::of(m), 0);
  const bool large = static_cast<double>(n_outer) * static_cast<double>(n_inner) >= (1 << 17);
  for (size_t k = 0; k < edge_ids.size(); ++k) {
    const int id = edge_ids[k];
    const Edge& e = g.edges[id];
    std::unique_ptr<EdgePrices::Entry> scratch;
    EdgePrices::Entry& en = prices->entry(id, scratch);
    const bool src_outer = e.src == outer;
    const std::vector<int>& is = en.src_ids;
    const std::vector<int>& id_dst = en.dst_ids;
    // Only the ends that some row (a class's least configuration) or column
    // uses are priced.
    std::vector<char> need_src(en.n_src, src_outer ? 0 : 1);
    std::vector<char> need_dst(en.n_dst, src_outer ? 1 : 0);
    for (size_t r = 0; r < n_outer; ++r) {
      const size_t i = outer_rows ? static_cast<size_t>((*outer_rows)[r]) : r;
      (src_outer ? need_src[is[i]] : need_dst[id_dst[i]]) = 1;
    }
    prices->price(en, id, need_src, need_dst, m, large ? threads : 1);
    const double* small = en.price.data();
    const bool first = k == 0, last = k + 1 == edge_ids.size();
    // The rows are filled from the prices alone, on `threads` threads for a
    // large matrix (each row by one of them, the same numbers).
    auto fill = [&](int64_t lo, int64_t hi) {
      for (size_t r = static_cast<size_t>(lo); r < static_cast<size_t>(hi); ++r) {
        const size_t i = outer_rows ? static_cast<size_t>((*outer_rows)[r]) : r;
        double* row = out.data() + r * n_inner;
        if (first) std::fill(row, row + n_inner, 0.0);
        if (src_outer) {
          const double* from = small + static_cast<size_t>(is[i]) * en.n_dst;
          for (size_t j = 0; j < n_inner; ++j) row[j] += from[id_dst[col(j)]];
        } else {
          const size_t b = static_cast<size_t>(id_dst[i]);
          for (size_t j = 0; j < n_inner; ++j) row[j] += small[is[col(j)] * en.n_dst + b];
        }
        if (last && weight != 1)
          for (size_t j = 0; j < n_inner; ++j) row[j] *= weight;
      }
    };
    detail::parallel_ranges(large ? threads : 1, static_cast<int64_t>(n_outer), fill);
  }
  return out;
}

std::shared_ptr<const PairMatrix> PairMatrices::get(const std::vector<int>& edge_ids, int outer,
                                                    int inner, const std::vector<int>* outer_rows,
                                                    const std::vector<int>* inner_cols, int threads,
                                                    int64_t* kept_id) {
  if (kept_id) *kept_id = -1;
  // The key: the sizes, each edge's direction and signature, the rows and
  // the columns (configurations of vertices whose sets the signatures fix).
  const size_t n_outer = outer_rows ? outer_rows->size() : configs_[outer].size();
  const size_t n_inner = inner_cols ? inner_cols->size() : configs_[inner].size();
  std::vector<int64_t> key = {static_cast<int64_t>(n_outer), static_cast<int64_t>(n_inner)};
  for (int id : edge_ids) {
    key.push_back(-3);
    key.push_back(g_.edges[id].src == outer ? 1 : 0);
    std::vector<int64_t> sig = prices_.signature(id);
    key.insert(key.end(), sig.begin(), sig.end());
  }
  key.push_back(outer_rows ? -4 : -5);
  if (outer_rows) key.insert(key.end(), outer_rows->begin(), outer_rows->end());
  key.push_back(inner_cols ? -4 : -5);
  if (inner_cols) key.insert(key.end(), inner_cols->begin(), inner_cols->end());
  if (auto it = kept_.find(key); it != kept_.end()) {
    ++hits_;
    if (kept_id) *kept_id = it->second.id;
    return it->second.matrix;
  }
  auto made = std::make_shared<const PairMatrix>(pair_matrix(
      g_, configs_, edge_ids, outer, inner, m_, outer_rows, &prices_, inner_cols, threads));
  const double bytes = static_cast<double>(made->size()) * sizeof(double);
  if (bytes_ + bytes <= budget_) {
    bytes_ += bytes;
    const int64_t id = static_cast<int64_t>(kept_.size());
    kept_.emplace(std::move(key), Kept{made, id});
    if (kept_id) *kept_id = id;
  }
  return made;
}

}  // namespace pase
