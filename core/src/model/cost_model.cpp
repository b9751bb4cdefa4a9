// The formulas shared by several ops (core/docs/cost-model.md sections 1, 3
// and 4), and the checks of a cluster and of a graph to be priced. Each op's
// own formula lives in its file in core/src/model/ops/.
#include "model/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

#include "util/text.hpp"

namespace pase {

std::vector<int> follow_dimension(const Graph& g, const GraphModel& model,
                                  const std::function<int(int)>& seed) {
  std::vector<int> pos(g.vertices.size(), -1);
  for (const Vertex& v : g.vertices) {
    int p = seed(v.id);
    if (p < 0) {
      for (size_t s = 0; s < v.inputs.size(); ++s) {
        const Slot& slot = v.inputs[s];
        if (slot.producer < 0) continue;
        const int up = pos[slot.producer];
        if (up >= 0) {
          // The producer's output dimension split exactly by position `up`,
          // then where this slot puts that tensor dimension.
          const TensorMap& out = model.vertices[slot.producer].out_maps[slot.output];
          const TensorMap& in = model.vertices[v.id].in_maps[s];
          for (size_t t = 0; t < out.size(); ++t) {
            if (out[t].size() != 1 || out[t][0] != up) continue;
            if (t < in.size() && in[t].size() == 1) p = in[t][0];
            break;
          }
        }
        break;  // only the first input fed by a layer counts
      }
    }
    pos[v.id] = p;
  }
  return pos;
}

namespace {

// "0.1", "8", "nan": a number in a message, as typed.
std::string cluster_number_text(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

}  // namespace

std::optional<Error> check_cluster(const Cluster& c) {
  if (c.devices < 1)
    return Error{"must be at least 1, got " + std::to_string(c.devices), "cluster.devices"};
  if (c.devices > kMaxDevices)
    return Error{
        "must be at most " + std::to_string(kMaxDevices) + ", got " + std::to_string(c.devices),
        "cluster.devices"};
  if (!(c.tflops > 0) || !std::isfinite(c.tflops))
    return Error{"must be a positive number", "cluster.tflops"};
  if (!(c.bandwidth_gbps > 0) || !std::isfinite(c.bandwidth_gbps))
    return Error{"must be a positive number", "cluster.bandwidth_gbps"};
  // Nodes: both fields or neither.
  const bool nodes = c.gpus_per_node != 0, intra = c.intra_node_gbps != 0;
  if (nodes && c.gpus_per_node < 1)
    return Error{"must be a positive integer, got " + std::to_string(c.gpus_per_node),
                 "cluster.gpus_per_node"};
  if (intra && (!(c.intra_node_gbps > 0) || !std::isfinite(c.intra_node_gbps)))
    return Error{"must be a positive number", "cluster.intra_node_gbps"};
  if (nodes != intra)
    return Error{"gpus_per_node and intra_node_gbps come together",
                 nodes ? "cluster.intra_node_gbps" : "cluster.gpus_per_node"};
  if (c.memory_gib != 0 && (!(c.memory_gib > 0) || !std::isfinite(c.memory_gib)))
    return Error{"must be a positive number", "cluster.memory_gib"};
  // A share of the memory (NaN fails the test too).
  if (!(c.headroom >= 0 && c.headroom < 1))
    return Error{"must be a fraction of the memory from 0 to below 1 (0.1: 10%), not " +
                     cluster_number_text(c.headroom),
                 "cluster.headroom"};
  const std::pair<int64_t, const char*> bytes[] = {
      {c.training.param_bytes, "training.param_bytes"},
      {c.training.grad_bytes, "training.grad_bytes"},
      {c.training.optimizer_bytes, "training.optimizer_bytes"},
      {c.training.activation_bytes, "training.activation_bytes"}};
  for (const auto& [value, where] : bytes)
    if (value < 0) return Error{"must be a non-negative integer", where};
  if (c.first_device < 0) return Error{"must be non-negative", "cluster.first_device"};
  if (c.cost_model == CostModel::kPractice) {
    const DeviceProfile& d = c.device;
    if (!(d.memory_gbps > 0) || !std::isfinite(d.memory_gbps))
      return Error{
          "the practice cost model (the default with nodes) needs the devices' memory "
          "bandwidth: give it or a preset, or choose the paper cost model",
          "cluster.memory_gbps"};
    const std::pair<double, const char*> rates[] = {
        {d.matmul_efficiency, "matmul_efficiency"},
        {d.attention_efficiency, "attention_efficiency"},
        {d.memory_efficiency, "memory_efficiency"},
        {d.link_efficiency, "link_efficiency"}};
    for (const auto& [rate, name] : rates)
      if (!(rate > 0 && rate <= 1))
        return Error{"must be in (0, 1]", std::string("cluster.device.") + name};
    if (!(d.overlap >= 0 && d.overlap <= 1))
      return Error{"must be in [0, 1]", "cluster.device.overlap"};
    if (!(d.reserved_gib >= 0) || !std::isfinite(d.reserved_gib))
      return Error{"must be a non-negative number", "cluster.device.reserved_gib"};
    if (c.memory_gib > 0 && d.reserved_gib >= c.memory_gib)
      return Error{"the framework's reserve (" + std::to_string(d.reserved_gib) +
                       " GiB) leaves nothing of the memory",
                   "cluster.device.reserved_gib"};
    if (c.memory_gib > 0 && d.reserved_gib + c.headroom_gib() >= c.memory_gib)
      return Error{"the framework's reserve (" + cluster_number_text(d.reserved_gib) +
                       " GiB) and the headroom (" + cluster_number_text(c.headroom_gib()) +
                       " GiB) leave nothing of the " + cluster_number_text(c.memory_gib) + " GiB",
                   "cluster.headroom"};
  }
  if (c.training.recompute_rest == Recompute::kAuto)
    return Error{"must be none, selective or full", "training.recompute_rest"};
  if (c.training.recompute_blocks < -1)
    return Error{"must be -1 (every block) or a block count", "training.recompute_blocks"};
  if ((c.training.recompute != Recompute::kNone || c.training.recompute_rest != Recompute::kNone) &&
      c.cost_model != CostModel::kPractice)
    return Error{"recomputation is priced by the practice cost model: set cost_model to practice",
                 "training.recompute"};
  if (c.training.zero < 0 || c.training.zero > 3)
    return Error{"must be 0, 1, 2 or 3, got " + std::to_string(c.training.zero), "training.zero"};
  if (c.training.zero_replicas < 1 || c.training.zero_replicas > c.devices)
    return Error{
        "must be between 1 and the device count, got " + std::to_string(c.training.zero_replicas),
        "training.zero_replicas"};
  for (Recompute r : c.training.recompute_of_block)
    if (r == Recompute::kAuto)
      return Error{"must be none, selective or full", "training.recompute_of_block"};
  if (!c.training.recompute_of_block.empty() && c.cost_model != CostModel::kPractice)
    return Error{"recomputation is priced by the practice cost model: set cost_model to practice",
                 "training.recompute_of_block"};
  return std::nullopt;
}

Result<CostModel> parse_cost_model(std::string_view name) {
  if (name == "paper") return CostModel::kPaper;
  if (name == "practice") return CostModel::kPractice;
  return Error{"unknown cost model " + quoted_text(name) + "; known: paper, practice",
               "cost_model"};
}

Result<Recompute> parse_recompute(std::string_view name) {
  if (name == "none") return Recompute::kNone;
  if (name == "selective") return Recompute::kSelective;
  if (name == "full") return Recompute::kFull;
  if (name == "auto") return Recompute::kAuto;
  return Error{
      "unknown recomputation " + quoted_text(name) + "; known: none, selective, full, auto",
      "training.recompute"};
}

const char* recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    case Recompute::kAuto:
      return "auto";
    default:
      return "none";
  }
}

const char* cost_model_name(CostModel model) {
  return model == CostModel::kPractice ? "practice" : "paper";
}

std::optional<Error> check_inputs(const Graph& g, const Cluster& cluster) {
  if (std::optional<Error> e = check_cluster(cluster)) return e;
  if (g.model == nullptr || g.model->vertices.size() != g.vertices.size())
    return Error{"the graph was not made by build_graph(), load_graph() or build_model()", "graph"};
  return std::nullopt;
}

namespace ops {

namespace {

// Product of the sizes and of the splits at `pos`.
void group(const Vertex& v, const int64_t* c, const std::vector<int>& pos, double& size,
           double& split) {
  int64_t s = 1, k = 1;
  for (int i : pos) {
    s *= v.dom[i];
    k *= c[i];
  }
  size = static_cast<double>(s);
  split = static_cast<double>(k);
}

}  // namespace

Machine make_machine(const Cluster& cluster) {
  Machine m;
  m.devices = cluster.devices;
  m.tflops = cluster.tflops;
  m.r = (cluster.tflops * 1000) / (cluster.bandwidth_gbps / 8);
  m.training = cluster.training;
  if (cluster.hierarchical()) {
    m.gpus_per_node = cluster.gpus_per_node;
    m.r1 = (cluster.tflops * 1000) / (cluster.intra_node_gbps / 8);
    m.first_device = cluster.first_device;
  }
  if (cluster.cost_model == CostModel::kPractice) {
    // An element moved costs its activation bytes over the link's bytes per
    // second, in peak FLOPs: F * 1e12 * a / (B * 1e9)
    // (core/docs/practice-model.md, "Units").
    m.cost_model = CostModel::kPractice;
    m.device = cluster.device;
    const double a = static_cast<double>(cluster.training.activation_bytes);
    const double link = cluster.device.link_efficiency;
    m.r = cluster.tflops * 1000 * a / (cluster.bandwidth_gbps * link);
    if (cluster.hierarchical()) m.r1 = cluster.tflops * 1000 * a / (cluster.intra_node_gbps * link);
  }
  return m;
}

double per_device_points(const Vertex& v, const int64_t* c) {
  double e = 1;
  for (size_t i = 0; i < v.dom.size(); ++i)
    e *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  return e;
}

void tensor_config(const TensorMap& map, const int64_t* c, int64_t* out) {
  for (size_t i = 0; i < map.size(); ++i) {
    int64_t s = 1;
    for (int pos : map[i]) s *= c[pos];
    out[i] = s;
  }
}

double tensor_elements(const Shape& shape, const TensorMap& map, const int64_t* c) {
  double elements = 1;
  for (size_t i = 0; i < shape.size() && i < map.size(); ++i) {
    int64_t split = 1;
    for (int pos : map[i]) split *= c[pos];
    elements *= static_cast<double>(shape[i]) / static_cast<double>(split);
  }
  return elements;
}

double redistribution_words(const Shape& shape, const int64_t* s, const int64_t* t,
                            bool replicated) {
  double need = 1, have = 1;
  int64_t p_src = 1, p_tgt = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    double src_pp = static_cast<double>(shape[i]) / static_cast<double>(s[i]);
    double tgt_pp = static_cast<double>(shape[i]) / static_cast<double>(t[i]);
    need *= tgt_pp;
    have *= std::min(src_pp, tgt_pp);
    p_src *= s[i];
    p_tgt *= t[i];
  }
  if (p_tgt > p_src && !replicated) have = 0;
  return std::max(need - have, 0.0);
}

GemmShape gemm_shape(const Vertex& v, const VertexModel& model, const int64_t* c) {
  const GemmView& g = model.gemm;
  GemmShape s;
  for (int i : g.batch) s.bpp *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  double M, N, K;
  group(v, c, g.m, M, s.cm);
  group(v, c, g.n, N, s.cn);
  group(v, c, g.k, K, s.ck);
  N *= static_cast<double>(g.n_scale);
  K *= static_cast<double>(g.k_scale);
  s.m = M / s.cm;
  s.n = N / s.cn;
  s.k = K / s.ck;
  return s;
}

LayerCost gemm_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                    const Machine& mc) {
  const GemmView& g = model.gemm;
  const GemmShape s = gemm_shape(v, model, c);
  const double bpp = s.bpp, m = s.m, n = s.n, k = s.k;
  double comp = 3 * m * n * k + (g.pw > 0 ? 3 * static_cast<double>(g.pw) * m * n : 0);
  const size_t dims = v.dom.size();
  // ZeRO stage 3 gathers a layer's weight again in the forward and backward
  // passes: half as much again as the weight gradient's all-reduce.
  const double gather = mc.training.zero == 3 && model.weight_elements > 0 ? 1.5 : 1.0;
  const double weight_grad = gather * mc.allreduce_over(n * k, s.cm, c, dims, g.m);
  double comm = mc.allreduce_over(m * n, s.ck, c, dims, g.k) +
                mc.allreduce_over(m * k, s.cn, c, dims, g.n) + weight_grad;
  LayerCost out;
  out.total = bpp * (comp + comm);
  out.compute = bpp * comp;
  out.comm = out.total - out.compute;
  // Only a layer with a weight has a weight gradient to reduce.
  if (model.weight_elements > 0) out.weight_sync = bpp * weight_grad;
  return out;
}

LayerCost pointwise_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                         const Machine&) {
  LayerCost out;
  out.compute = (1 + static_cast<double>(model.pw)) * per_device_points(v, c);
  out.total = out.compute;
  return out;
}

LayerCost no_cost(const Vertex&, const VertexModel&, const int64_t*, const Machine&) { return {}; }

MemoryBytes vertex_memory(const Graph& g, const Vertex& v, const int64_t* c, const Machine& mc) {
  const VertexModel& model = model_of(g, v.id);
  const Training& t = mc.training;
  MemoryBytes out;
  if (model.weight_elements > 0) {
    double q = 1, split = 1;
    for (size_t i = 0; i < v.dom.size(); ++i) q *= static_cast<double>(c[i]);
    for (int i : model.weight_dims) split *= static_cast<double>(c[i]);
    const double e = static_cast<double>(model.weight_elements) / split;  // elements per device
    // Hybrid sharding keeps zero_replicas full copies (cluster.hpp).
    const double replicas = std::max(1.0, q / split / static_cast<double>(t.zero_replicas));
    out.params = e * static_cast<double>(t.param_bytes) / (t.zero >= 3 ? replicas : 1);
    out.grads = e * static_cast<double>(t.grad_bytes) / (t.zero >= 2 ? replicas : 1);
    out.optimizer = e * static_cast<double>(t.optimizer_bytes) / (t.zero >= 1 ? replicas : 1);
  }
  // The views (the ops of no_cost) keep nothing of their own.
  if (model.cost == no_cost) return out;
  for (size_t o = 0; o < v.outputs.size(); ++o) {
    double elements = tensor_elements(v.outputs[o].shape, model.out_maps[o], c);
    if (mc.cost_model == CostModel::kPractice) {
      // A result summed over split dimensions (a row-parallel product's) is
      // kept reduced and sharded across the group that summed it, as a
      // reduce-scatter leaves it; its partial sums are transient
      // (core/docs/practice-model.md, "Memory").
      // No allocation: this runs for every configuration of every vertex.
      const TensorMap& map = model.out_maps[o];
      for (size_t i = 0; i < v.dom.size(); ++i) {
        bool in_output = false;
        for (const std::vector<int>& dims : map)
          in_output =
              in_output || std::find(dims.begin(), dims.end(), static_cast<int>(i)) != dims.end();
        if (!in_output) elements /= static_cast<double>(c[i]);
      }
    }
    out.activations += static_cast<double>(t.activation_bytes) * elements;
  }
  if (mc.cost_model == CostModel::kPractice) {
    if (attention_scores(g, v.id)) {
      // Fused attention keeps no scores: only each query row's log-sum-exp,
      // 4 bytes (core/docs/practice-model.md, "Memory").
      const GemmShape s = gemm_shape(v, model, c);
      out.activations = 4 * s.bpp * s.m;
    }
    if (recomputed(g, v.id, t)) out.activations = 0;
  }
  return out;
}

}  // namespace ops

bool zero_alike(const Cluster& cluster, int64_t lower, int64_t upper) {
  if (lower < 0 || lower >= upper || upper > 2) return false;
  // 1 and 2: gemm_cost() and practice_cost() tell them apart nowhere.
  if (lower >= 1) return true;
  // 0 against 1 or 2: the paper formula's weight gradient is ZeRO 3's
  // alone; the practice model's all-reduce (grad bytes) against the
  // reduce-scatter and all-gather (half of grad + param bytes).
  return cluster.cost_model == CostModel::kPaper ||
         cluster.training.grad_bytes == cluster.training.param_bytes;
}

}  // namespace pase
