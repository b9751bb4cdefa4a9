// Cost tables: each vertex's cost per configuration and, for each pair of
// adjacent vertices, the re-distribution cost of all tensor edges between them
// per pair of configurations. A pair matrix is built when the dynamic program
// first needs it, from prices kept for the whole plan (EdgePrices), and kept
// for the search's later steps that need the same one (PairMatrices).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "cost/configurations.hpp"
#include "kernels/uninitialised.hpp"
#include "model/cost_model.hpp"
#include "pase/graph.hpp"

namespace pase {

// Vertex `v` at every configuration of `set`, in enumeration order; on
// `threads` threads when the set is large (each entry by one: the same
// numbers).
std::vector<double> vertex_cost_vector(const Graph& g, int vertex, const ConfigSet& set,
                                       const ops::Machine& m, int threads = 1);

// What vertex_cost_vector() weighs, per configuration: the cost and its
// weight-gradient reduction (LayerCost::total, weight_sync) and, when
// `memory`, the memory (MemoryBytes::total(), its params + grads +
// optimizer, its activations); none of it depends on the Machine's weights.
struct VertexCostParts {
  std::vector<double> total, weight_sync, bytes, fixed_bytes, activations;
};
VertexCostParts vertex_cost_parts(const Graph& g, int vertex, const ConfigSet& set,
                                  const ops::Machine& m, bool memory, int threads = 1);
// vertex_cost_vector() from the parts, by the Machine's weights.
std::vector<double> weigh_vertex_cost(const VertexCostParts& p, const ops::Machine& m);

// The parts kept for the searches of one space (one graph, its
// configurations and one machine but for its weights and recomputation, as
// plan_recompute()'s choices), by vertex and whether the machine's training
// recomputes it (ops::recomputed(), the only way the recomputation reaches a
// vertex's cost and memory), the memory once a search weighs it: costs() is
// vertex_cost_vector(), bit for bit.
class VertexCostCache {
 public:
  std::vector<double> costs(const Graph& g, int vertex, const ConfigSet& set, const ops::Machine& m,
                            int threads = 1);

 private:
  std::map<std::pair<int, bool>, VertexCostParts> kept_;
};

// Cost of one tensor edge between the layer configurations of its ends.
double edge_cost(const Graph& g, const Edge& e, const int64_t* c_src, const int64_t* c_dst,
                 const ops::Machine& m);

// The tensor edges between two vertices, whichever way they point.
struct PairEdges {
  int a = 0, b = 0;        // a < b
  std::vector<int> edges;  // indices into Graph::edges, ascending
};

// One entry per adjacent pair, sorted by (a, b).
std::vector<PairEdges> group_edges(const Graph& g);

// The tensor edges between two vertices, looked up by pair: group_edges()
// with a binary search.
class EdgePairs {
 public:
  explicit EdgePairs(const Graph& g) : pairs_(group_edges(g)) {}
  const std::vector<int>& between(int a, int b) const {
    PairEdges key{std::min(a, b), std::max(a, b), {}};
    auto it = std::lower_bound(pairs_.begin(), pairs_.end(), key,
                               [](const PairEdges& x, const PairEdges& y) {
                                 return std::pair(x.a, x.b) < std::pair(y.a, y.b);
                               });
    if (it == pairs_.end() || it->a != key.a || it->b != key.b) return none_;
    return it->edges;
  }

 private:
  std::vector<PairEdges> pairs_;
  std::vector<int> none_;
};

// How the search tells an edge's ends apart (edge_end_ids): the devices of
// device 0's node from device 0 on (Machine::near_devices(), 0 on a flat
// machine), and whether the edge is priced both ways, forward and the
// gradient back, as the practice model prices it (core/docs/
// practice-model.md, "Communication"); on a machine of nodes, the backward
// half sees the consumer through its placement too.
struct EndView {
  int64_t gpus_per_node = 0;
  bool both_ways = false;
  static EndView of(const ops::Machine& m) {
    return EndView{m.near_devices(), m.cost_model == CostModel::kPractice};
  }
  bool consumer_placed() const { return both_ways && gpus_per_node > 0; }
  bool operator==(const EndView&) const = default;
};

// Ids of configuration sets compared by content: equal sets, equal ids,
// over every set given to one ConfigSetIds (it keeps a copy of each
// distinct set).
class ConfigSetIds {
 public:
  int id(const ConfigSet& set);

 private:
  // By dimensions and a hash of the content: each distinct set and its id.
  std::map<std::pair<int, uint64_t>, std::vector<std::pair<std::vector<int64_t>, int>>> sets_;
  int next_ = 0;
};

// One id per vertex, shared by the vertices whose configurations are equal
// (compared by content).
std::vector<int> config_set_ids(const std::vector<ConfigSet>& configs);

// edge_end_ids kept by what they depend on (the end's configurations by
// content, its tensor map, which end, and for a producer on a machine of
// nodes the tensor's shape), so that the repeated blocks of a network
// compute each once. One EndIds serves one set of configurations and one
// EndView; not thread-safe.
class EndIds {
 public:
  EndIds(const Graph& g, const std::vector<ConfigSet>& configs, EndView view)
      : g_(g), configs_(configs), view_(view), set_id_(config_set_ids(configs)) {}
  // The ids of edge e's end at its producer (`producer`) or its consumer.
  const std::vector<int>& of(const Edge& e, bool producer);

 private:
  const Graph& g_;
  const std::vector<ConfigSet>& configs_;
  EndView view_;
  std::vector<int> set_id_;
  std::map<std::vector<int64_t>, std::vector<int>> kept_;
};

// Prices of tensor edges between the distinct ends of their two vertices,
// kept across pair matrices. Edges whose ends have the same configurations
// (compared by content), the same tensor maps and the same shape share one
// signature and one entry, so the repeated blocks of a network (an LLM's
// decoder layers) are priced once, and so are the several searches of a
// plan under a memory cap (the prices do not depend on Machine::cost_weight
// or memory_weight, which pair_matrix applies after). A price is computed
// when a matrix first needs it. Entries are kept while their total stays
// under `budget_bytes` (class map and price per pair of distinct ends);
// past it, an edge is priced for its one use. One EdgePrices serves one
// machine (its rates) and one graph with its configurations at a time;
// bind() moves it to another (a pipeline's stage graphs on one machine), and
// the entries kept serve the new graph's edges of the same signatures, the
// configuration sets being compared by content across graphs. Not
// thread-safe.
class EdgePrices {
 public:
  EdgePrices(const Graph& g, const std::vector<ConfigSet>& configs, EndView view,
             double budget_bytes);
  // Bound to no graph yet: bind() before use.
  EdgePrices(EndView view, double budget_bytes);
  ~EdgePrices();
  EdgePrices(const EdgePrices&) = delete;
  EdgePrices& operator=(const EdgePrices&) = delete;

  // Prices `g`'s edges from now on, `configs` its vertices' configurations
  // (both kept by reference until the next bind()).
  void bind(const Graph& g, const std::vector<ConfigSet>& configs);
  EndView view() const { return view_; }

  struct Entry;
  // What edge `edge_id`'s prices depend on besides the machine: equal
  // signatures, equal prices and equal ends.
  std::vector<int64_t> signature(int edge_id) const;
  // The entry of edge `edge_id`'s signature; when it cannot be kept,
  // `scratch` owns it.
  Entry& entry(int edge_id, std::unique_ptr<Entry>& scratch);
  // Prices the pairs of needed ends not priced yet, on `threads` threads
  // when they are many (each pair by one of them: the same prices).
  void price(Entry& entry, int edge_id, const std::vector<char>& need_src,
             const std::vector<char>& need_dst, const ops::Machine& m, int threads = 1);
  double bytes() const { return bytes_; }
  uint64_t hits() const { return hits_; }  // entries found already made

 private:
  const Graph* g_ = nullptr;
  const std::vector<ConfigSet>* configs_ = nullptr;
  EndView view_;
  double budget_;
  double bytes_ = 0;
  uint64_t hits_ = 0;
  std::vector<int> set_id_;
  ConfigSetIds sets_;  // every configuration set bound so far
  std::map<std::vector<int64_t>, std::unique_ptr<Entry>> entries_;
};

// Prices kept for a whole plan: at most this many bytes.
constexpr double kEdgePriceBudget = 512.0 * (1 << 20);

// Row-major matrix [configs(outer)][configs(inner)] of the summed cost of
// `edge_ids` (all between `outer` and `inner`). Tensor configurations are
// de-duplicated first, so the formula runs once per distinct pair. With
// `outer_rows`, only those configurations of `outer`, in that order, are rows.
// With `inner_cols`, only those configurations of `inner` are columns (the
// dynamic program's groups, each priced at a member). With `prices`, the
// edges' prices come from (and go to) it; without, they are computed for
// this matrix alone. A matrix of 2^17 entries or more is filled on `threads`
// threads, row by row: the same numbers.
using PairMatrix = RawVector<double>;
PairMatrix pair_matrix(const Graph& g, const std::vector<ConfigSet>& configs,
                       const std::vector<int>& edge_ids, int outer, int inner,
                       const ops::Machine& m, const std::vector<int>* outer_rows = nullptr,
                       EdgePrices* prices = nullptr, const std::vector<int>* inner_cols = nullptr,
                       int threads = 1);

// Pair matrices kept across the steps of one search (run_dp), and across
// the searches of one space in a SearchCache (dynamic_program.hpp): the repeated
// blocks of a network (an LLM's decoder layers) ask for the same matrix once
// a block, with edges of the same signatures (EdgePrices::signature) between
// the same rows and columns. `get` returns what pair_matrix() would, made
// from `prices` on `threads` threads the first time and shared after. The
// matrices are kept while their total stays under `budget_bytes`; past it,
// a matrix is made for its one use. `kept_id`, when given, is set to the
// matrix's id among those kept (the same for every call that shares it), or
// -1 when it is not kept. One PairMatrices serves one machine (its weights
// included) and one set of configurations; not thread-safe.
class PairMatrices {
 public:
  PairMatrices(const Graph& g, const std::vector<ConfigSet>& configs, const ops::Machine& m,
               EdgePrices& prices, double budget_bytes)
      : g_(g), configs_(configs), m_(m), prices_(prices), budget_(budget_bytes) {}
  std::shared_ptr<const PairMatrix> get(const std::vector<int>& edge_ids, int outer, int inner,
                                        const std::vector<int>* outer_rows,
                                        const std::vector<int>* inner_cols, int threads,
                                        int64_t* kept_id = nullptr);
  uint64_t hits() const { return hits_; }
  double bytes() const { return bytes_; }

 private:
  const Graph& g_;
  const std::vector<ConfigSet>& configs_;
  const ops::Machine& m_;
  EdgePrices& prices_;
  double budget_;
  double bytes_ = 0;
  uint64_t hits_ = 0;
  struct Kept {
    std::shared_ptr<const PairMatrix> matrix;
    int64_t id;
  };
  std::map<std::vector<int64_t>, Kept> kept_;
};

// Pair matrices kept for one search: at most this many bytes.
constexpr double kPairMatrixBudget = 512.0 * (1 << 20);

// What edge `e`'s cost sees of one of its ends, per configuration of that end
// (`producer`: e.src, else e.dst): equal ids, equal cost against every
// configuration of the other end. The consumer is seen through its tensor
// configuration, and on a machine of nodes also through whether its devices
// lie on device 0's node; the producer through its tensor configuration on a
// flat machine and through its placement on node 0 on a machine of nodes
// (`view.gpus_per_node` > 0: the devices of device 0's node from device 0 on,
// Machine::near_devices(); core/docs/cluster.md). An edge priced both ways on
// a machine of nodes sees the consumer through its placement too. Ids are
// numbered in order of first appearance. Time O(|set| * tensor rank), times
// gpus_per_node for a hierarchical end.
std::vector<int> edge_end_ids(const Graph& g, const ConfigSet& set, const Edge& e, bool producer,
                              EndView view);

}  // namespace pase
