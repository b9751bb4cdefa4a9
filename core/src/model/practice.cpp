// The practice cost model (core/docs/practice-model.md): a layer's time as
// today's training runs spend it, in the paper model's unit (peak FLOPs: a
// second costs the device's peak FLOP rate), so that the search, the pipeline
// model and every report work on it unchanged.
//
// - Matrix products (every GEMM-shaped vertex but the embedding lookup): the
//   real FLOPs (2mnk forward, 4mnk backward) at a fraction of the peak that
//   falls for small per-device dimensions, or the bytes they move over the
//   memory bandwidth when that takes longer (a roofline).
// - Attention's score and context products of one head group (a product of
//   two layer outputs whose result outgrows both operands, and the product
//   that consumes it; VertexModel::attention) run as one fused kernel:
//   priced on the scores vertex as forward + backward with the scores
//   recomputed, at the fused kernel's rate, half of it under a causal mask;
//   the context vertex costs nothing more.
// - Every other op with work (norms, element-wise ops, softmax, embedding
//   lookups, losses, reductions, pools) moves its operands and results
//   through memory: three passes (forward, and the backward's reads and
//   writes) over the memory bandwidth.
// - Communication: the paper's collectives and re-distributions with the
//   practice machine's element costs (make_machine), plus each collective's
//   latency per ring step; a layer's weight-gradient reduction overlaps its
//   backward compute, and only what outlasts it is exposed.
#include <algorithm>
#include <cmath>
#include <string>

#include "model/cost_model.hpp"

namespace pase::ops {
namespace {

// A per-device dimension's share of the large-product rate: d / (d + half).
double saturation(double d, double half) { return d / (d + half); }

// The steps of a ring all-reduce over the group of device 0 at positions
// `group`, as seconds of latency: 2 (p - 1) steps, inside the node for a
// group on one node, else 2 (l - 1) inside and 2 (nodes - 1) between.
double allreduce_latency(const Machine& m, const int64_t* c, size_t n,
                         const std::vector<int>& group) {
  int64_t p = 1;
  for (int i : group) p *= c[i];
  if (p <= 1) return 0;
  int64_t nodes = 1, most = p;
  m.group_span(c, n, group, nodes, most);
  const DeviceProfile& d = m.device;
  return 1e-6 * (2.0 * static_cast<double>(most - 1) * d.latency_intra_us +
                 2.0 * static_cast<double>(nodes - 1) * d.latency_inter_us);
}

// Elements per device of every tensor a vertex reads from layers or graph
// inputs and writes, at configuration `c`.
double touched_elements(const Vertex& v, const VertexModel& model, const int64_t* c) {
  double total = 0;
  for (size_t s = 0; s < v.inputs.size() && s < model.in_maps.size(); ++s)
    total += tensor_elements(v.inputs[s].shape, model.in_maps[s], c);
  for (size_t o = 0; o < v.outputs.size() && o < model.out_maps.size(); ++o)
    total += tensor_elements(v.outputs[o].shape, model.out_maps[o], c);
  return total;
}

// A product priced by its shape (fused attention's scores and context among
// them): a vertex of the product formula but an embedding, a gather.
bool priced_as_product(const Vertex& v, const VertexModel& model) {
  return model.cost == gemm_cost && v.op != "Embedding";
}

}  // namespace

double working_bytes(const Graph& g, const Vertex& v, const int64_t* c, const Machine& m) {
  if (m.cost_model != CostModel::kPractice) return 0;
  const VertexModel& model = model_of(g, v.id);
  if (model.cost == no_cost) return 0;
  const Training& t = m.training;
  double bytes = static_cast<double>(t.activation_bytes) * touched_elements(v, model, c);
  if (attention_scores(g, v.id) || attention_context(g, v.id)) {
    // The fused kernel holds no scores: its operands and result only.
    const GemmShape s = gemm_shape(v, model, c);
    bytes = static_cast<double>(t.activation_bytes) * s.bpp * (s.m * s.k + 2 * s.n * s.k);
  }
  if (t.zero == 3 && model.weight_elements > 0) {
    double split = 1;
    for (int i : model.weight_dims) split *= static_cast<double>(c[i]);
    bytes +=
        2 * static_cast<double>(t.param_bytes) * static_cast<double>(model.weight_elements) / split;
  }
  return bytes;
}

PracticeKernel practice_kernel(const Graph& g, const Vertex& v, const int64_t* c) {
  const VertexModel& model = model_of(g, v.id);
  PracticeKernel out;
  if (model.cost == no_cost) return out;
  if (priced_as_product(v, model)) {
    const GemmShape s = gemm_shape(v, model, c);
    out.kind = attention_context(g, v.id)  ? PracticeKernel::Kind::kFused
               : attention_scores(g, v.id) ? PracticeKernel::Kind::kAttention
                                           : PracticeKernel::Kind::kMatmul;
    out.bpp = s.bpp;
    out.m = s.m;
    out.n = s.n;
    out.k = s.k;
    out.causal = model.causal;
    return out;
  }
  out.kind = PracticeKernel::Kind::kMemory;
  out.elements = touched_elements(v, model, c);
  return out;
}

bool attention_scores(const Graph& g, int vertex) {
  return model_of(g, vertex).attention == VertexModel::Attention::kScores;
}

bool attention_context(const Graph& g, int vertex) {
  return model_of(g, vertex).attention == VertexModel::Attention::kContext;
}

int decoder_block(const std::string& name, std::string* role) {
  if (name.rfind("layer", 0) != 0) return -1;
  size_t i = 5;
  int block = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && block < 1000000) {
    block = block * 10 + (name[i] - '0');
    ++i;
  }
  if (i == 5 || i >= name.size() || name[i] != '_') return -1;
  if (role != nullptr) *role = name.substr(i + 1);
  return block;
}

int decoder_block(const Vertex& v) { return decoder_block(v.name); }

Recompute block_recompute(const Graph& g, int vertex, const Training& t) {
  const int block = model_of(g, vertex).block;
  if (block < 0) return Recompute::kNone;
  if (!t.recompute_of_block.empty())
    return static_cast<size_t>(block) < t.recompute_of_block.size()
               ? t.recompute_of_block[static_cast<size_t>(block)]
               : Recompute::kNone;
  const Recompute mode =
      t.recompute_blocks < 0 || block < t.recompute_blocks ? t.recompute : t.recompute_rest;
  return mode == Recompute::kAuto ? Recompute::kNone : mode;
}

bool recomputed(const Graph& g, int vertex, const Training& t) {
  const Recompute mode = block_recompute(g, vertex, t);
  if (mode == Recompute::kSelective)
    return attention_scores(g, vertex) || attention_context(g, vertex);
  // The block's last vertex (its output) is kept: the next vertex in the
  // order is of another block, or of none (mark_practice_roles()).
  return mode == Recompute::kFull && model_of(g, vertex).in_block_body;
}

LayerCost practice_cost(const Graph& g, const Vertex& v, const int64_t* c, const Machine& m) {
  const VertexModel& model = model_of(g, v.id);
  if (model.cost == no_cost) return {};
  // A product's collectives are its own (below); every other op's are the
  // paper formula's on the practice machine, whose element costs are
  // already the practice model's (make_machine).
  const bool product = priced_as_product(v, model);
  const LayerCost paper = product ? LayerCost{} : model.cost(v, model, c, m);
  const DeviceProfile& d = m.device;
  const double peak = m.tflops * 1e12;  // FLOP/s: one second costs `peak`
  const double a = static_cast<double>(m.training.activation_bytes);
  const double memory_rate = d.memory_gbps * 1e9 * d.memory_efficiency;  // bytes/s
  const size_t n = v.dom.size();

  double seconds = 0;       // compute
  double latency = 0;       // seconds of collective latency
  double sync_latency = 0;  // of the weight-gradient reduction
  // The layer's communication but its weight gradient, in peak FLOPs: the
  // paper formula's on the practice machine, or a product's own below.
  double activation_comm = paper.comm - paper.weight_sync;
  // The all-reduce of the weight gradient in activation elements: the
  // paper's without ZeRO-3's factor, or a product's own below.
  double reduce = paper.weight_sync / (m.training.zero == 3 ? 1.5 : 1.0);
  if (product) {
    const GemmShape s = gemm_shape(v, model, c);
    if (attention_context(g, v.id)) {
      seconds = 0;  // fused into the scores vertex
    } else if (attention_scores(g, v.id)) {
      // Scores q k^T (m queries x n keys x k head width) and context p v:
      // 4 m n k forward; the backward recomputes the scores and takes five
      // products, 2.5 times the forward.
      // Under a causal mask the kernel skips the masked half.
      const double forward = 4 * s.bpp * s.m * s.n * s.k * (model.causal ? 0.5 : 1.0);
      seconds = 3.5 * forward / (peak * d.attention_efficiency * saturation(s.k, d.matmul_half));
    } else {
      const double flops = 6 * s.bpp * s.m * s.n * s.k;
      const double rate = peak * d.matmul_efficiency * saturation(s.m, d.matmul_half) *
                          saturation(s.n, d.matmul_half) * saturation(s.k, d.matmul_half);
      const double bytes = 3 * a * s.bpp * (s.m * s.k + s.k * s.n + s.m * s.n);
      seconds = std::max(flops / rate, memory_rate > 0 ? bytes / memory_rate : 0.0);
    }
    // The collectives of section 4 with the practice element costs: the
    // partial sums over a split K, the input gradient over a split N, shared
    // by the products that read the same input (summed, then reduced once),
    // and the weight gradient.
    const GemmView& gv = model.gemm;
    const double readers = static_cast<double>(std::max(1, model.first_input_readers));
    activation_comm = s.bpp * (m.allreduce_over(s.m * s.n, s.ck, c, n, gv.k) +
                               m.allreduce_over(s.m * s.k, s.cn, c, n, gv.n) / readers);
    latency = allreduce_latency(m, c, n, gv.k) + allreduce_latency(m, c, n, gv.n) / readers;
    if (model.weight_elements > 0) {
      reduce = s.bpp * m.allreduce_over(s.n * s.k, s.cm, c, n, gv.m);
      sync_latency = allreduce_latency(m, c, n, gv.m);
    }
  } else {
    const double bytes = 3 * a * touched_elements(v, model, c);
    seconds = memory_rate > 0 ? bytes / memory_rate : 0.0;
  }

  // Recomputation runs the vertex's forward once more in the backward pass:
  // a third of a product's or a memory-bound op's training time, 1 / 3.5 of
  // fused attention's.
  const bool again = recomputed(g, v.id, m.training);
  const double plain = seconds;
  if (again) seconds *= attention_scores(g, v.id) ? 1 + 1 / 3.5 : 4.0 / 3.0;
  LayerCost out;
  out.compute = seconds * peak;
  out.recompute = (seconds - plain) * peak;
  // The weight's traffic ("Weights and ZeRO") from `reduce`.
  const double grad = a > 0 ? static_cast<double>(m.training.grad_bytes) / a : 0.0;
  const double param = a > 0 ? static_cast<double>(m.training.param_bytes) / a : 0.0;
  double sync = 0, gather = 0;
  if (m.training.zero == 0) {
    sync = reduce * grad;  // all-reduce of the gradient
  } else if (m.training.zero < 3) {
    sync = 0.5 * reduce * (grad + param);  // reduce-scatter it, all-gather the new weight
  } else {
    sync = 0.5 * reduce * grad;
    // Gathered for the forward, the backward and a recomputed forward, each
    // prefetched behind the compute of the layer before it.
    const double passes = again ? 3.0 : 2.0;
    gather = passes * (0.5 * reduce * param + 0.5 * sync_latency * peak);
    gather = std::max(0.0, gather - d.overlap * out.compute);
  }
  if (sync > 0) sync += sync_latency * peak;
  // The gradient's reduction overlaps the layer's backward compute (two
  // thirds of its compute); what outlasts it is exposed, once per step.
  const double hidden = d.overlap * (2.0 / 3.0) * out.compute;
  out.weight_sync = std::max(0.0, sync - hidden);
  out.comm = activation_comm + gather + out.weight_sync + latency * peak;
  out.total = out.compute + out.comm;
  return out;
}

}  // namespace pase::ops
