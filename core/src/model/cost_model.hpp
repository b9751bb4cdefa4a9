// What the cost model knows of a vertex beyond its public description (the
// tensor maps, pinned dimensions and cost parameters its op's lowering set),
// the machine constants, and the formulas shared by several ops
// (core/docs/cost-model.md). Everything is a double, computed in the order the
// cost model writes it, so that independent implementations agree to about
// 1e-9 relative.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "pase/cluster.hpp"
#include "pase/graph.hpp"

namespace pase {

// For each dimension of a tensor, the positions of the vertex configuration
// whose splits multiply to that dimension's split (empty: never split).
using TensorMap = std::vector<std::vector<int>>;

// GEMM view of a vertex (core/docs/cost-model.md section 4): each list holds
// positions of the configuration; every `batch` position is its own batch
// dimension.
struct GemmView {
  std::vector<int> batch, m, n, k;
  int64_t pw = 0;
  int64_t n_scale = 1, k_scale = 1;  // N and K are these multiples of their sizes (LSTM: 4u, 2u)
};

namespace ops {

// core/docs/cost-model.md section 1.
struct Machine {
  int64_t devices = 8;
  double tflops = 10;
  double r = 5000;  // FLOPs per word moved: (F * 1000) / (B / 8); between nodes with nodes

  // Nodes (core/docs/cluster.md): gpus_per_node > 0, and r1 the rate inside a
  // node. 0: the flat model, where the *_over functions are words() and
  // allreduce().
  int64_t gpus_per_node = 0;
  double r1 = 0;
  // Cluster::first_device: where device 0 sits among the nodes.
  int64_t first_device = 0;
  Training training;  // the memory model's bytes and the ZeRO stage
  // The practice model (core/docs/practice-model.md): layer_cost() prices
  // every vertex by practice_cost(), and r and r1 are an element's seconds
  // on the link times the peak, so that costs stay in peak FLOPs.
  CostModel cost_model = CostModel::kPaper;
  DeviceProfile device;
  // The search's objective: cost_weight * cost + memory_weight * device 0's
  // memory in bytes (planning under a memory cap, core/docs/cluster.md). The
  // defaults are the cost alone.
  double cost_weight = 1;
  double memory_weight = 0;
  // A pipeline stage's objective (core/docs/pipeline.md): each vertex's cost
  // but its weight_sync, and every edge, count `microbatches` times, and the
  // activations `activation_copies` times in the memory; the weight_sync
  // counts `sync_weight` times (0: a stage's F alone, for the pipeline
  // search's bounds). 1, 1 and 1: the plain search.
  double microbatches = 1;
  double activation_copies = 1;
  double sync_weight = 1;

  // Devices of device 0's node from device 0 on (the edge's "near" devices,
  // core/docs/cluster.md): gpus_per_node for a whole cluster; 0 when flat.
  int64_t near_devices() const {
    return gpus_per_node == 0 ? 0 : gpus_per_node - first_device % gpus_per_node;
  }

  double words(double w) const { return r * w; }
  double allreduce(double w, double p) const { return p <= 1 ? 0.0 : r * (w / p) * 2 * (p - 1); }

  // allreduce(w, p) among the devices of a vertex of `n` dimensions at
  // configuration `c` that differ only in the block indices of positions
  // `group` (p is the product of their splits): hierarchical when the
  // cluster has nodes.
  double allreduce_over(double w, double p, const int64_t* c, size_t n,
                        const std::vector<int>& group) const;
  // The group of device 0 over `group` at configuration `c`: how many nodes
  // it spans and the most of its members on one node (flat: one node holding
  // them all).
  void group_span(const int64_t* c, size_t n, const std::vector<int>& group, int64_t& nodes,
                  int64_t& most) const;
  // words(w) for an exchange among that group: at the rate inside a node
  // when the group of device 0 lies on one node, else between nodes.
  double words_over(double w, const int64_t* c, size_t n, const std::vector<int>& group) const;
};

Machine make_machine(const Cluster& cluster);

}  // namespace ops

// Whether ZeRO stage `upper` prices every layer exactly as stage `lower`
// does on `cluster` while holding no more bytes per device: then no plan
// steps faster at `lower` than the fastest at `upper`, under any cap
// (core/docs/layouts.md, "Both answers"). Stages 1 and 2 move the same
// bytes (the gradient reduce-scattered, the new weight all-gathered);
// stage 0's all-reduce of the gradient costs the same under the paper
// model, and under the practice model when a gradient element is as wide
// as a weight element; stage 3 gathers the weights again, so it is alike
// to none. Sharding only ever removes bytes (vertex_memory()).
bool zero_alike(const Cluster& cluster, int64_t lower, int64_t upper);

struct VertexModel;

// The cost of a vertex at configuration `c` (one split per dimension).
using CostFn = LayerCost (*)(const Vertex& v, const VertexModel& model, const int64_t* c,
                             const ops::Machine& m);

// The batch dimension rule of the baselines (compare.hpp, batch_dimensions):
// a vertex names its batch position, or follows its first layer input.
inline constexpr int kFollowBatch = -1;

struct VertexModel {
  CostFn cost = nullptr;
  std::vector<TensorMap> in_maps;   // per input slot
  std::vector<TensorMap> out_maps;  // per output
  std::vector<bool> pinned;         // pinned dimensions always split 1
  bool contiguous_only = false;     // Ravel, Unravel: only contiguous configurations
  int batch_dim = kFollowBatch;
  // Cost parameters, each used by the ops whose formula needs it.
  GemmView gemm;                        // GEMM-shaped ops
  int axis = 0;                         // Norm, Softmax
  std::vector<int> axes;                // ReduceMean: reduced positions
  std::array<int64_t, 2> window{0, 0};  // Pool
  int64_t pw = 0;                       // point-wise ops per element
  // Elements of the layer's weights held by this vertex (core/docs/graph-format.md,
  // "Parameters"): the op's own weight, set by its lowering (FC, Conv,
  // Embedding, LSTM), plus the layer's `{"shape"}` operands, added by the
  // graph builder. Graph::parameters sums them.
  int64_t weight_elements = 0;
  // The practice model's view (core/docs/practice-model.md), set when the
  // graph is built: the vertex's part in a fused attention kernel, whether
  // its scores are under a causal mask (Einsum's "causal"), and how many
  // products read the tensor of its first input (their input gradients are
  // summed before one reduction).
  enum class Attention : uint8_t { kNone, kScores, kContext };
  Attention attention = Attention::kNone;
  bool causal = false;
  int first_input_readers = 1;
  // What full recomputation drops: a vertex of a decoder block but the
  // block's last (recomputed(); found once, from the names).
  bool in_block_body = false;
  int block = -1;  // the decoder block ("layer<N>_..."), or -1
  // The positions of the vertex's dimensions that the weight spans, for the
  // memory model (core/docs/cluster.md, "Memory per device"): a weight block
  // is split by their splits and replicated over the others. Empty: the
  // weight (if any) is whole on every device.
  std::vector<int> weight_dims;
};

// The op table's view of every vertex of a Graph (Graph::model).
struct GraphModel {
  std::vector<VertexModel> vertices;
  // The document the graph was built from (build_graph()); null for a
  // stage's part of a graph (pipeline.cpp), which is never lowered again.
  std::shared_ptr<const GraphSpec> spec;
};

inline const VertexModel& model_of(const Graph& g, int vertex) { return g.model->vertices[vertex]; }

// The check every entry point that plans or prices a graph starts with:
// check_cluster(), then that `g` was made by build_graph() (a Graph put
// together by hand has no model to price it with).
std::optional<Error> check_inputs(const Graph& g, const Cluster& cluster);

// Per vertex (by id), a configuration position: `seed(id)` when it is >= 0,
// else the position that the producer's position maps onto along the
// vertex's first input fed by a layer, else -1. Vertex ids are a topological
// order, so one pass suffices: O(vertices + edges).
std::vector<int> follow_dimension(const Graph& g, const GraphModel& model,
                                  const std::function<int(int)>& seed);

namespace ops {

// Attention's score product (a product of two layer outputs whose result
// outgrows both) and the context product that consumes it: the practice model
// runs the pair as one fused kernel (core/docs/practice-model.md).
bool attention_scores(const Graph& g, int vertex);
bool attention_context(const Graph& g, int vertex);

// The decoder block of a vertex named "layer<N>_..." (the language models'
// graphs, core/docs/llm.md): N; else -1.
int decoder_block(const Vertex& v);
// The same of a layer's or a vertex's name, and its role in the block (the
// rest of the name: "layer12_q" -> 12, "q") when `role` is given.
int decoder_block(const std::string& name, std::string* role = nullptr);

// Whether vertex `vertex` is recomputed in the backward pass rather than
// kept (core/docs/practice-model.md, "Recomputation"): with full, every
// vertex of a decoder block (a vertex named "layer<N>_...") but the block's
// last, whose output is the next block's input; with selective, the
// attention core (attention_scores() and attention_context()).
bool recomputed(const Graph& g, int vertex, const Training& training);

// The mode of a vertex's decoder block under `training` (recompute for the
// first recompute_blocks blocks, recompute_rest after; none outside blocks
// and for auto, which the search resolves first).
Recompute block_recompute(const Graph& g, int vertex, const Training& training);

// The practice model's cost of vertex `v` at configuration `c`
// (core/docs/practice-model.md; model/practice.cpp).
LayerCost practice_cost(const Graph& g, const Vertex& v, const int64_t* c, const Machine& m);

// The kernel the practice model prices vertex `v` as at configuration `c`
// (core/docs/practice-model.md, "Compute by op class"), per device: a matrix
// product of `bpp` batch points of m x k by k x n; fused attention (on the
// scores vertex: `bpp` batch points of m queries, n keys, head width k, with
// or without the causal mask); the context product fused into it; a
// memory-bound op touching `elements` elements; or nothing.
struct PracticeKernel {
  enum class Kind { kNone, kMatmul, kAttention, kFused, kMemory } kind = Kind::kNone;
  double bpp = 1, m = 0, n = 0, k = 0;
  bool causal = false;
  double elements = 0;
};
PracticeKernel practice_kernel(const Graph& g, const Vertex& v, const int64_t* c);

// The practice model's working buffers of vertex `v` at configuration `c`,
// bytes of device 0 (core/docs/practice-model.md, "Memory"): the gradients
// of its operands and results in the backward pass, and under ZeRO-3 its
// gathered weight and the next one's, prefetched. 0 under the paper model.
double working_bytes(const Graph& g, const Vertex& v, const int64_t* c, const Machine& m);

// Cost of vertex `v` at configuration `c`, by the machine's cost model.
inline LayerCost layer_cost(const Graph& g, const Vertex& v, const int64_t* c, const Machine& m) {
  if (m.cost_model == CostModel::kPractice) return practice_cost(g, v, c, m);
  const VertexModel& model = model_of(g, v.id);
  return model.cost(v, model, c, m);
}

// A GEMM-shaped vertex at configuration `c` (section 4): the batch points per
// device, the per-device m, n and k, and the splits of their groups.
struct GemmShape {
  double bpp = 1, m = 0, n = 0, k = 0;
  double cm = 1, cn = 1, ck = 1;
};
GemmShape gemm_shape(const Vertex& v, const VertexModel& model, const int64_t* c);

// prod(dom[i] / c[i]) over all positions, in order.
double per_device_points(const Vertex& v, const int64_t* c);

// The split of each tensor dimension implied by vertex configuration `c`.
void tensor_config(const TensorMap& map, const int64_t* c, int64_t* out);

// Device 0's elements of a tensor of `shape` at vertex configuration `c`
// through `map`: prod(shape[i] / split[i]).
double tensor_elements(const Shape& shape, const TensorMap& map, const int64_t* c);

// The edge formula's max(need - have, 0): words that must move for tensor
// `shape` to go from tensor configuration `s` to `t` (section 3).
// `replicated` (the practice model): every device runs every layer, a
// configuration's unsplit dimensions replicated, so a tensor is on every
// device and a consumer that splits it more receives only what its block of
// it lacks (core/docs/practice-model.md, "Communication"); the paper model
// counts the devices beyond the producer's split as holding nothing.
double redistribution_words(const Shape& shape, const int64_t* s, const int64_t* t,
                            bool replicated = false);

// The GEMM formula of section 4 over model.gemm.
LayerCost gemm_cost(const Vertex& v, const VertexModel& model, const int64_t* c, const Machine& m);

// (1 + pw) * prod(dpp), all compute: an element-wise op with `model.pw`
// point-wise operations per element beyond the first (Elementwise, Activation).
LayerCost pointwise_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                         const Machine& m);

// Device 0's memory for vertex `v` at configuration `c`: its weight's
// parameters, gradients and optimizer state under the training's ZeRO stage,
// and its saved outputs (none for the views, the vertices priced by
// no_cost() below: Ravel, Unravel, Transpose, Concat, Split, Stack, Unstack).
MemoryBytes vertex_memory(const Graph& g, const Vertex& v, const int64_t* c, const Machine& m);

// No compute and no communication of its own: the edges carry the cost of
// pure data movement (Ravel, Unravel, Transpose, Concat, Split, Stack, Unstack).
LayerCost no_cost(const Vertex& v, const VertexModel& model, const int64_t* c, const Machine& m);

}  // namespace ops
}  // namespace pase
