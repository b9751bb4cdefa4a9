// A plan as a JAX program (core/docs/export.md, "JAX"): the plan's data
// (the mesh, every layer with its op, attributes, weights and shardings, the
// planner's predicted communication per layer) as one JSON literal, followed
// by the runtime of jax_runtime.py, which builds the graph in JAX, runs one
// training step sharded, and checks itself with --check.
//
// Shardings. The mesh has one axis per prime factor of the device count
// (nodes' factors first, named n0, n1, ..., then the node's, d0, d1, ...).
// Each vertex gives each split dimension a set of mesh axes whose sizes
// multiply to its split: first the axes its producer gave the same tensor
// dimension when the split is the same (so that a tensor the plan does not
// re-distribute stays where it is), then free axes, outermost first. A
// tensor dimension is sharded over the axes of the vertex dimensions its
// map names, in order.
#include "export/jax_program.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "export/escape.hpp"
#include "model/cost_model.hpp"
#include "util/json_util.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

using json_detail::Json;
using AxisList = std::vector<int>;         // mesh axes of one dimension
using TensorAxes = std::vector<AxisList>;  // per tensor dimension

const char* const kJaxRuntime =
#include "jax_runtime.inc"
    ;

struct JaxMesh {
  std::vector<int64_t> sizes;
  std::vector<std::string> names;
};

std::vector<int64_t> jax_primes(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  if (n > 1) out.push_back(n);
  return out;
}

JaxMesh jax_mesh(const Cluster& cluster) {
  JaxMesh mesh;
  const int64_t p = cluster.devices;
  const int64_t node = cluster.gpus_per_node;
  const bool nodes = node > 0 && p > node && p % node == 0;
  const auto add = [&mesh](int64_t n, const char* prefix) {
    int i = 0;
    for (int64_t f : jax_primes(n)) {
      mesh.sizes.push_back(f);
      mesh.names.push_back(prefix + std::to_string(i++));
    }
  };
  if (nodes) add(p / node, "n");
  add(nodes ? node : p, "d");
  if (mesh.sizes.empty()) {  // one device
    mesh.sizes.push_back(1);
    mesh.names.push_back("d0");
  }
  return mesh;
}

// The mesh axes of every position of every vertex.
class JaxAxes {
 public:
  JaxAxes(const Graph& g, const Strategy& s, const JaxMesh& mesh) : g_(g), s_(s), mesh_(mesh) {
    axes_.resize(g.vertices.size());
    for (const Vertex& v : g.vertices) assign(v);
  }

  TensorAxes tensor(int vertex, const TensorMap& map) const {
    TensorAxes out(map.size());
    for (size_t t = 0; t < map.size(); ++t)
      for (int p : map[t])
        for (int a : axes_[vertex][p]) out[t].push_back(a);
    return out;
  }
  TensorAxes output(int vertex, int output) const {
    return tensor(vertex, model_of(g_, vertex).out_maps[output]);
  }
  TensorAxes input(int vertex, int slot) const {
    return tensor(vertex, model_of(g_, vertex).in_maps[slot]);
  }
  const std::vector<AxisList>& positions(int vertex) const { return axes_[vertex]; }
  // A vertex with a split no set of mesh axes multiplies to (its product
  // does not divide the devices), or -1; and that position.
  int failed_vertex() const { return failed_vertex_; }
  int failed_position() const { return failed_position_; }

 private:
  int64_t product(const AxisList& axes) const {
    int64_t p = 1;
    for (int a : axes) p *= mesh_.sizes[a];
    return p;
  }

  void assign(const Vertex& v) {
    if (assign(v, true)) return;
    // Following the producers took axes the other splits need: the free
    // axes alone, which always suffice when the splits divide the devices.
    if (assign(v, false)) return;
    if (failed_vertex_ < 0) {
      failed_vertex_ = v.id;
      for (size_t p = 0; p < axes_[v.id].size(); ++p)
        if (product(axes_[v.id][p]) != s_[v.id][p]) {
          failed_position_ = static_cast<int>(p);
          break;
        }
    }
  }

  // Whether every split of `v` found axes of its size.
  bool assign(const Vertex& v, bool follow) {
    const Config& c = s_[v.id];
    const VertexModel& m = model_of(g_, v.id);
    std::vector<AxisList>& mine = axes_[v.id];
    mine.assign(c.size(), {});
    std::vector<bool> used(mesh_.sizes.size(), false);
    // Follow the producers: the same split of the same tensor dimension on
    // the same axes.
    for (size_t slot = 0; follow && slot < v.inputs.size() && slot < m.in_maps.size(); ++slot) {
      const Slot& in = v.inputs[slot];
      if (in.producer < 0) continue;
      const TensorAxes had = output(in.producer, in.output);
      const TensorMap& map = m.in_maps[slot];
      for (size_t t = 0; t < map.size() && t < had.size(); ++t) {
        if (map[t].size() != 1) continue;
        const int p = map[t][0];
        if (c[p] <= 1 || !mine[p].empty() || product(had[t]) != c[p]) continue;
        bool free = true;
        for (int a : had[t]) free = free && !used[a];
        if (!free) continue;
        mine[p] = had[t];
        for (int a : had[t]) used[a] = true;
      }
    }
    // The rest from the free axes, outermost first.
    for (size_t p = 0; p < c.size(); ++p) {
      if (c[p] <= 1 || !mine[p].empty()) continue;
      int64_t need = c[p];
      for (size_t a = 0; a < mesh_.sizes.size() && need > 1; ++a) {
        if (used[a] || need % mesh_.sizes[a] != 0) continue;
        mine[p].push_back(static_cast<int>(a));
        used[a] = true;
        need /= mesh_.sizes[a];
      }
    }
    for (size_t p = 0; p < c.size(); ++p)
      if (product(mine[p]) != c[p]) return false;
    return true;
  }

  const Graph& g_;
  const Strategy& s_;
  const JaxMesh& mesh_;
  std::vector<std::vector<AxisList>> axes_;
  int failed_vertex_ = -1, failed_position_ = -1;
};

Json jax_spec(const TensorAxes& axes, const JaxMesh& mesh) {
  Json out = Json::array();
  for (const AxisList& d : axes) {
    Json names = Json::array();
    for (int a : d) names.push_back(mesh.names[a]);
    out.push_back(names);
  }
  return out;
}

// The communication the plan's cost model predicts per layer, in bytes per
// device of 4-byte elements: each vertex's collectives and the
// re-distributions into it, priced on the same cluster made flat (one link
// rate), without latency, overlap or ZeRO, so that a cost divided by the
// cost of one element is a count of elements.
Result<std::vector<double>> jax_predicted(const Graph& g, const Cluster& cluster,
                                          const Strategy& s) {
  Cluster flat = cluster;
  flat.gpus_per_node = 0;
  flat.intra_node_gbps = 0;
  flat.memory_gib = 0;
  flat.first_device = 0;
  flat.device.latency_intra_us = 0;
  flat.device.latency_inter_us = 0;
  flat.device.overlap = 0;
  flat.device.link_efficiency = 1;
  flat.training = Training{};
  flat.training.zero = 0;
  flat.training.param_bytes = flat.training.grad_bytes = flat.training.activation_bytes = 4;
  Result<Plan> priced = evaluate(g, flat, s);
  if (!priced) return priced.error();
  const double element = ops::make_machine(flat).r;
  std::vector<double> out(g.vertices.size(), 0.0);
  for (size_t v = 0; v < g.vertices.size(); ++v) out[v] = priced->layers[v].comm;
  for (size_t e = 0; e < g.edges.size(); ++e) out[g.edges[e].dst] += priced->edge_costs[e];
  for (double& b : out) b = element > 0 ? 4 * b / element : 0.0;
  return out;
}

// The inputs, layers and sinks of one variant (the graph as planned, or
// reduced) with the plan's shardings, and what each layer of an imported
// model runs as ONNX defines it (`onnx`, by name).
Result<Json> jax_variant(const GraphSpec& spec, const Graph& g, const Cluster& cluster,
                         const Strategy& s, const JaxAxes& axes, const JaxMesh& mesh,
                         const Training& training, const std::map<std::string, Json>& onnx) {
  Result<std::vector<double>> predicted = jax_predicted(g, cluster, s);
  if (!predicted) return predicted.error();
  std::vector<std::vector<int>> of_layer(spec.layers.size());
  for (const Vertex& v : g.vertices) of_layer[v.layer].push_back(v.id);

  Json layers = Json::array();
  std::map<std::string, Json> input_spec;   // graph input -> its sharding
  std::set<std::string> ids;                // graph inputs that hold token ids
  std::map<std::string, int64_t> ids_high;  // their vocabulary
  std::set<std::string> consumed;
  Json extra_inputs = Json::array();
  for (size_t li = 0; li < spec.layers.size(); ++li) {
    const LayerSpec& l = spec.layers[li];
    if (of_layer[li].empty())
      return Error{"layer " + quoted_text(l.name) + " has no vertex", "emit"};
    const Vertex& first = g.vertices[of_layer[li].front()];
    const Vertex& last = g.vertices[of_layer[li].back()];
    Json j = jax_attributes(l);
    if (const auto found = onnx.find(l.name); found != onnx.end()) j["onnx"] = found->second;
    Json operands = Json::array(), in_specs = Json::array(), weights = Json::array();
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const Operand& o = l.inputs[k];
      const Json want = jax_spec(axes.input(first.id, static_cast<int>(k)), mesh);
      if (o.is_weight()) {
        operands.push_back(Json{{"weight", weights.size()}});
        weights.push_back(Json{{"shape", o.weight_shape},
                               {"spec", want},
                               {"fan_in", jax_einsum_fan_in(l, o.weight_shape)}});
        in_specs.push_back(nullptr);
        continue;
      }
      operands.push_back(o.name);
      consumed.insert(o.name);
      const Slot& slot = first.inputs[k];
      if (slot.producer < 0) {
        // A graph input: placed as its first reader reads it.
        auto found = input_spec.find(o.name);
        if (found == input_spec.end()) {
          input_spec[o.name] = want;
          in_specs.push_back(nullptr);
        } else {
          in_specs.push_back(found->second == want ? Json() : want);
        }
        if (l.op == "Embedding") {
          ids.insert(o.name);
          ids_high[o.name] = l.vocab;
        }
        continue;
      }
      const Json had = jax_spec(axes.output(slot.producer, slot.output), mesh);
      in_specs.push_back(had == want ? Json() : want);
    }
    Json implicit = Json::array();
    for (const JaxWeight& w : jax_implicit_weights(l, first)) {
      implicit.push_back(weights.size());
      weights.push_back(Json{{"shape", w.shape},
                             {"spec", jax_spec(axes.tensor(first.id, w.map), mesh)},
                             {"fan_in", w.fan_in}});
    }
    if (l.op == "SoftmaxCrossEntropy") {
      // The labels: an input of the logits' shape but the classes.
      const Shape& logits = first.inputs[0].shape;
      const std::string name = l.name + "/labels";
      Shape shape(logits.begin(), logits.end() - 1);
      Json lspec = jax_spec(axes.output(last.id, 0), mesh);
      extra_inputs.push_back(Json{{"name", name},
                                  {"shape", shape},
                                  {"kind", "ids"},
                                  {"high", logits.back()},
                                  {"spec", lspec}});
      operands.push_back(name);
      in_specs.push_back(nullptr);
    }
    Json out_specs = Json::array(), out_shapes = Json::array();
    for (size_t o = 0; o < last.outputs.size(); ++o) {
      out_specs.push_back(jax_spec(axes.output(last.id, static_cast<int>(o)), mesh));
      out_shapes.push_back(last.outputs[o].shape);
    }
    double bytes = 0;
    for (int v : of_layer[li]) bytes += (*predicted)[v];
    j["operands"] = std::move(operands);
    j["in_specs"] = std::move(in_specs);
    j["weights"] = std::move(weights);
    j["implicit"] = std::move(implicit);
    j["out_specs"] = std::move(out_specs);
    j["out_shapes"] = std::move(out_shapes);
    j["predicted_bytes"] = bytes;
    // The block's recomputation as planned (jax.checkpoint per block).
    const Recompute mode = ops::block_recompute(g, first.id, training);
    if (mode == Recompute::kSelective || mode == Recompute::kFull)
      j["recompute"] = recompute_name(mode);
    layers.push_back(std::move(j));
  }

  Json inputs = Json::array();
  for (const auto& [name, shape] : spec.inputs) {
    Json x{{"name", name}, {"shape", shape}};
    x["kind"] = ids.count(name) ? "ids" : "data";
    if (ids.count(name)) x["high"] = ids_high[name];
    auto found = input_spec.find(name);
    x["spec"] = found != input_spec.end() ? found->second : Json(Json::array());
    if (found == input_spec.end()) x["spec"] = Json(std::vector<Json>(shape.size(), Json::array()));
    inputs.push_back(std::move(x));
  }
  for (Json& x : extra_inputs) inputs.push_back(std::move(x));

  Json sinks = Json::array();
  for (size_t li = 0; li < spec.layers.size(); ++li) {
    const Vertex& last = g.vertices[of_layer[li].back()];
    const std::string& name = spec.layers[li].name;
    if (last.outputs.size() == 1) {
      if (!consumed.count(name)) sinks.push_back(name);
      continue;
    }
    for (size_t o = 0; o < last.outputs.size(); ++o) {
      const std::string part = name + ":" + std::to_string(o);
      if (!consumed.count(part)) sinks.push_back(part);
    }
  }
  return Json{{"inputs", inputs}, {"layers", layers}, {"sinks", sinks}};
}

// A variant as JSON text with one line per layer, in ASCII (json_ascii():
// the names are the input's).
std::string jax_variant_text(const Json& variant) {
  std::string out = "{\"inputs\": " + json_ascii(variant["inputs"]) +
                    ",\n\"sinks\": " + json_ascii(variant["sinks"]) + ",\n\"layers\": [";
  const Json& layers = variant["layers"];
  for (size_t i = 0; i < layers.size(); ++i) out += (i ? ",\n" : "\n") + json_ascii(layers[i]);
  return out + "]}";
}

}  // namespace

Result<Exported> export_jax(const PlanView& view) {
  const Graph& g = *view.plan_graph;
  const Plan& plan = *view.plan;
  if (!g.model || !g.model->spec)
    return Error{"this graph has no pase-graph document to export", "emit"};
  const GraphSpec& spec = *g.model->spec;
  if (plan.strategy.size() != g.vertices.size())
    return Error{"the plan does not cover the graph", "emit"};
  const Cluster& cluster = *view.cluster;
  const int64_t devices = view.pipeline != nullptr && !view.pipeline->stage.empty()
                              ? view.pipeline->stage[0].devices
                              : cluster.devices;
  Cluster mesh_cluster = cluster;
  mesh_cluster.devices = devices;
  const JaxMesh mesh = jax_mesh(mesh_cluster);
  const JaxAxes axes(g, plan.strategy, mesh);
  if (axes.failed_vertex() >= 0) {
    const Vertex& v = g.vertices[axes.failed_vertex()];
    const int p = axes.failed_position();
    std::string shape;
    for (int64_t f : mesh.sizes) shape += (shape.empty() ? "" : " x ") + std::to_string(f);
    return Error{
        "layer " + quoted_text(v.name) + " splits its dimension " + v.dims[p] + " " +
            std::to_string(plan.strategy[v.id][p]) + " ways on " + std::to_string(devices) +
            " devices: no axes of the JAX mesh (" + shape +
            ") multiply to that split. Plan for a mesh: --mesh-only (which --emit jax sets), "
            "\"mesh_only\" in a request, or the page's Mesh splits only",
        "emit"};
  }

  Exported out;
  out.target = ExportTarget::kJax;
  out.file_name = "plan.py";
  const Training training = plan.training ? *plan.training : cluster.training;
  Result<std::map<std::string, Json>> onnx = jax_onnx_layers(spec, g);
  if (!onnx) return onnx.error();
  Result<Json> full =
      jax_variant(spec, g, mesh_cluster, plan.strategy, axes, mesh, training, *onnx);
  if (!full) return full.error();
  std::string note;
  Json reduced;
  if (std::optional<JaxReduced> small = jax_reduced_graph(spec, g, plan.strategy, note)) {
    // Its vertices keep the planned configurations, which found axes above.
    const JaxAxes small_axes(small->graph, small->strategy, mesh);
    Result<Json> r = jax_variant(*small->graph.model->spec, small->graph, mesh_cluster,
                                 small->strategy, small_axes, mesh, training, *onnx);
    if (!r) return r.error();
    reduced = std::move(*r);
  }
  const int64_t microbatches = view.pipeline != nullptr ? view.pipeline->microbatches : 1;
  if (view.pipeline != nullptr && view.pipeline->stages > 1)
    out.notes.push_back(
        "The pipeline's " + std::to_string(view.pipeline->stages) +
        " stages are not exported as stages: every layer runs with its planned sharding on "
        "one mesh of a stage's " +
        std::to_string(devices) + " devices, and the " + std::to_string(microbatches) +
        " micro-batches run one after the other, their gradients accumulated.");
  if (training.zero > 0)
    out.notes.push_back(
        "ZeRO-" + std::to_string(training.zero) + " runs as shardings: " +
        (training.zero >= 3   ? std::string("the optimizer state, the gradients and the weights")
         : training.zero == 2 ? std::string("the optimizer state and the gradients")
                              : std::string("the optimizer state")) +
        (training.zero >= 2 ? " are" : " is") +
        " split further over the mesh axes a weight's own splits leave free, and XLA "
        "gathers them where a layer reads them.");
  // What the graph cannot say is approximated, and the program says so per
  // layer (--check prints the list; core/docs/export.md, "The graph").
  Result<json_detail::Json> meta = json_detail::parse_document(spec.meta_json);
  const bool llm = meta && meta->is_object() && meta->contains("norm") &&
                   meta->contains("model_type") && meta->contains("hidden_act");
  const auto type = [](int64_t bytes) { return bytes == 2 ? "bfloat16" : "float32"; };
  out.notes.push_back(
      std::string("Each step is AdamW (optax) in the plan's precisions: ") +
      type(training.param_bytes) + " weights, " + type(training.activation_bytes) + " activations" +
      (training.param_bytes == 2 && training.optimizer_bytes >= 12
           ? ", a float32 master copy and moments"
           : "") +
      (llm ? "; the language model's own layers (norms with weights, rotary embeddings, causal "
             "softmax attention, its MLP), recomputation per block as planned"
           : "") +
      ".");
  if (!llm)
    out.notes.push_back(
        std::string("Not a language model's graph: each op runs as core/docs/export.md's table "
                    "says") +
        (onnx->empty() ? "" : ", the layers of meta.onnx_layers as ONNX defines them") +
        "; the program lists the layers whose semantics the graph cannot carry and how each is "
        "approximated (--check prints them).");

  Json data = Json::object();
  data["graph"] = g.name;
  data["devices"] = devices;
  data["cost_model"] = cluster.cost_model == CostModel::kPractice ? "practice" : "paper";
  data["step_time_s"] = plan.step_time_s;
  data["microbatches"] = microbatches;
  data["mesh"] = Json{{"shape", mesh.sizes}, {"axes", mesh.names}};
  // The model's own layers (a language model's graph: its meta), and the
  // training the plan is priced with: precisions, optimizer bytes, ZeRO.
  data["llm"] = llm ? *meta : Json();
  data["training"] = Json{{"param_bytes", training.param_bytes},
                          {"grad_bytes", training.grad_bytes},
                          {"optimizer_bytes", training.optimizer_bytes},
                          {"activation_bytes", training.activation_bytes},
                          {"zero", training.zero}};
  data["reduced_note"] = note;
  data["notes"] = out.notes;

  std::string text =
      "#!/usr/bin/env python3\n"
      "# Training steps of " +
      comment_text(g.name) + " as PaSE Planner planned it on " + std::to_string(devices) +
      " devices (core/docs/export.md).\n"
      "#   python plan.py --steps N  N steps on the machine's devices (loss, tokens/s)\n"
      "#   python plan.py --check    on CPU with virtual devices: sharded against unsharded,\n"
      "#                             the layers' shardings, the collectives against the plan\n"
      "#   python plan.py --reduce   large sizes and repeated blocks reduced (with --check)\n";
  for (const std::string& n : out.notes) text += "# " + comment_text(n) + "\n";
  text += "import json\n\nPLAN = json.loads(r\"\"\"\n";
  // One line per layer: readable, and diffable between plans. The names
  // in it are the input's: json_ascii() text cannot end the literal.
  std::string body = json_ascii(data);
  body.pop_back();  // the closing brace
  body += ",\n\"variants\": {\"full\": " + jax_variant_text(*full) + ",\n\"reduced\": " +
          (reduced.is_null() ? std::string("null") : jax_variant_text(reduced)) + "}}";
  text += body;
  text += "\n\"\"\")\n";
  text += kJaxRuntime;
  out.text = std::move(text);
  out.plan_step_time_s = plan.step_time_s;
  return out;
}

}  // namespace pase
