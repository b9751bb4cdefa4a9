// A language model's training step as tokens and model FLOPs per second
// (pase/layout.hpp, throughput(); core/docs/practice-model.md, "Throughput").
#include <algorithm>
#include <string>
#include <string_view>

#include "model/cost_model.hpp"
#include "pase/layout.hpp"
#include "util/json_util.hpp"

namespace pase {
namespace {

// Whether `v` has a dimension named `name` (x: the experts').
bool has_dimension(const Vertex& v, std::string_view name) {
  return std::find(v.dims.begin(), v.dims.end(), name) != v.dims.end();
}

// The weights a token uses: of a mixture of experts' expert layers (those
// with the experts' dimension x, but the router), k of E, as Megatron-LM
// and Mixtral count "active parameters"; the experts' counts are those the
// config's graph records (llm_spec()). Every weight otherwise.
double active_parameters(const Graph& graph) {
  double active = static_cast<double>(graph.parameters);
  Result<json_detail::Json> meta = json_detail::parse_document(graph.model->spec->meta_json);
  if (!meta || !meta->is_object()) return active;
  const auto count = [&](const char* key) -> double {
    const auto it = meta->find(key);
    return it != meta->end() && it->is_number_integer() ? it->get<double>() : 0;
  };
  const double experts = count("num_experts"), per_token = count("experts_per_token");
  if (!(experts > 0 && per_token > 0 && per_token <= experts)) return active;
  for (const Vertex& v : graph.vertices) {
    if (v.name.ends_with("_router") || !has_dimension(v, "x")) continue;
    active -=
        static_cast<double>(model_of(graph, v.id).weight_elements) * (1 - per_token / experts);
  }
  return active;
}

}  // namespace

std::optional<Throughput> throughput(const Graph& graph, const Cluster& cluster, double step_time_s,
                                     int64_t microbatches) {
  if (graph.model == nullptr || graph.model->spec == nullptr) return std::nullopt;
  const GraphSpec& spec = *graph.model->spec;
  if (spec.inputs.empty() || spec.inputs[0].first != "tokens" ||
      spec.inputs[0].second.size() != 2 || !(step_time_s > 0))
    return std::nullopt;
  Throughput t;
  const double micro = static_cast<double>(microbatches);
  t.tokens = micro * static_cast<double>(spec.inputs[0].second[0]) *
             static_cast<double>(spec.inputs[0].second[1]);
  t.model_flops = 6 * active_parameters(graph) * t.tokens;
  // Attention: the scores and context products, forward and backward
  // (3 x 4 b h l m k over the whole scores vertex).
  for (const Vertex& v : graph.vertices) {
    if (!ops::attention_scores(graph, v.id)) continue;
    double points = 1;
    for (int64_t d : v.dom) points *= static_cast<double>(d);
    t.model_flops += micro * 12 * points;
  }
  t.tokens_per_s = t.tokens / step_time_s;
  t.mfu =
      t.model_flops / (cluster.tflops * 1e12 * static_cast<double>(cluster.devices) * step_time_s);
  return t;
}

}  // namespace pase
