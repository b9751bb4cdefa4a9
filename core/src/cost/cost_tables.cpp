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

#include "cost/edge_formula.hpp"
#include "kernels/parallel.hpp"

namespace pase {

using namespace detail;

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
  distinct_placements(g.vertices[e.src].outputs[e.src_output].shape, map, set, view.gpus_per_node,
                      ids);
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

int ConfigSetIds::id(const ConfigSet& set) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t x : set.data) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
  std::vector<std::pair<std::vector<int64_t>, int>>& same = sets_[{set.dims, h}];
  for (const auto& [data, id] : same)
    if (data == set.data) return id;
  same.emplace_back(set.data, next_);
  return next_++;
}

std::vector<int> config_set_ids(const std::vector<ConfigSet>& configs) {
  ConfigSetIds ids;
  std::vector<int> out(configs.size());
  for (size_t v = 0; v < configs.size(); ++v) out[v] = ids.id(configs[v]);
  return out;
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
    : view_(view), budget_(budget_bytes) {
  bind(g, configs);
}

EdgePrices::EdgePrices(EndView view, double budget_bytes) : view_(view), budget_(budget_bytes) {}

void EdgePrices::bind(const Graph& g, const std::vector<ConfigSet>& configs) {
  g_ = &g;
  configs_ = &configs;
  set_id_.resize(configs.size());
  for (size_t v = 0; v < configs.size(); ++v) set_id_[v] = sets_.id(configs[v]);
}

EdgePrices::~EdgePrices() = default;

std::vector<int64_t> EdgePrices::signature(int edge_id) const {
  const Edge& e = g_->edges[edge_id];
  const Shape& shape = g_->vertices[e.src].outputs[e.src_output].shape;
  std::vector<int64_t> key = {set_id_[e.src], set_id_[e.dst], -1};
  key.insert(key.end(), shape.begin(), shape.end());
  append_map(key, model_of(*g_, e.src).out_maps[e.src_output]);
  append_map(key, model_of(*g_, e.dst).in_maps[e.dst_slot]);
  return key;
}

EdgePrices::Entry& EdgePrices::entry(int edge_id, std::unique_ptr<Entry>& scratch) {
  const Edge& e = g_->edges[edge_id];
  const Shape& shape = g_->vertices[e.src].outputs[e.src_output].shape;
  const TensorMap& out_map = model_of(*g_, e.src).out_maps[e.src_output];
  const TensorMap& in_map = model_of(*g_, e.dst).in_maps[e.dst_slot];
  std::vector<int64_t> key = signature(edge_id);
  if (auto it = entries_.find(key); it != entries_.end()) {
    ++hits_;
    return *it->second;
  }
  auto made = std::make_unique<Entry>();
  Entry& en = *made;
  if (view_.consumer_placed()) {
    en.dst_placements =
        distinct_placements(shape, in_map, (*configs_)[e.dst], view_.gpus_per_node, en.dst_ids);
    for (const Placement& p : en.dst_placements) {
      en.ud.push_back(p.split);
      en.ud.back().push_back(p.all_near ? 1 : 0);
    }
  } else {
    distinct_tensor_configs(in_map, (*configs_)[e.dst], en.ud, en.dst_ids, view_.gpus_per_node);
  }
  if (view_.gpus_per_node > 0) {
    en.placements =
        distinct_placements(shape, out_map, (*configs_)[e.src], view_.gpus_per_node, en.src_ids);
    en.n_src = en.placements.size();
  } else {
    distinct_tensor_configs(out_map, (*configs_)[e.src], en.us, en.src_ids);
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
  const Edge& e = g_->edges[edge_id];
  const Shape& shape = g_->vertices[e.src].outputs[e.src_output].shape;
  if (view_.gpus_per_node > 0)
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
        if (view_.gpus_per_node > 0)
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
