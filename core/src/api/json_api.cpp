// json_api.hpp, the writing half: plan results, errors, the model and preset
// lists, and the whole-request functions (plan_json, evaluate_json, ...).
// Everything here forwards to graph.hpp / plan.hpp / models.hpp. The readers
// are in json_request.cpp.

#include "pase/json_api.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/entry.hpp"
#include "model/cost_model.hpp"
#include "pase/answers.hpp"
#include "pase/graph.hpp"
#include "pase/layout.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "pase/summary.hpp"
#include "util/json_util.hpp"

namespace pase {
namespace {

using json_detail::cluster_to_json;
using json_detail::guarded;

using json_detail::Json;

// The plan's layer groups (summary.hpp): [{"vertices", "op", "label",
// "degrees": {kind: degree}, "devices", "cost", "cost_share", "memory_bytes",
// "memory_share"}, ...].
Json summary_to_json(const Graph& graph, const Plan& plan) {
  Json groups = Json::array();
  for (const LayerGroup& group : summarize(graph, plan)) {
    Json degrees = Json::object();
    for (const KindDegree& k : group.degrees) degrees[dim_kind_name(k.kind)] = k.degree;
    groups.push_back(Json{{"vertices", group.vertices},
                          {"op", group.op},
                          {"label", group.label},
                          {"degrees", std::move(degrees)},
                          {"devices", group.devices},
                          {"cost", group.cost},
                          {"cost_share", group.cost_share},
                          {"memory_bytes", group.memory_bytes},
                          {"memory_share", group.memory_share}});
  }
  return groups;
}

Json throughput_json(const Throughput& t) {
  return Json{{"tokens", t.tokens},
              {"model_flops", t.model_flops},
              {"tokens_per_s", t.tokens_per_s},
              {"mfu", t.mfu}};
}

// The step's parts in seconds (pipeline.hpp, step_breakdown()).
// The kernel the practice model priced a vertex as, per device
// (core/docs/practice-model.md, "Compute by op class").
Json kernel_json(const Graph& graph, const Vertex& vertex, const std::vector<int64_t>& config) {
  if (!graph.model || config.size() != vertex.dom.size()) return Json();
  const ops::PracticeKernel k = ops::practice_kernel(graph, vertex, config.data());
  switch (k.kind) {
    case ops::PracticeKernel::Kind::kMatmul:
      return Json{{"class", "matmul"}, {"bpp", k.bpp}, {"m", k.m}, {"n", k.n}, {"k", k.k}};
    case ops::PracticeKernel::Kind::kAttention:
      return Json{{"class", "attention"}, {"bpp", k.bpp}, {"m", k.m}, {"n", k.n}, {"k", k.k},
                  {"causal", k.causal}};
    case ops::PracticeKernel::Kind::kFused:
      return Json{{"class", "fused"}};
    case ops::PracticeKernel::Kind::kMemory:
      return Json{{"class", "memory"}, {"elements", k.elements}};
    case ops::PracticeKernel::Kind::kNone:
      break;
  }
  return Json{{"class", "none"}};
}

Json step_json(const Plan& plan, const PipelineInfo* pipeline, const Cluster& cluster) {
  const StepBreakdown b = step_breakdown(plan, pipeline, cluster.tflops);
  return Json{{"compute_s", b.compute_s},
              {"recompute_s", b.recompute_s},
              {"communication_s", b.communication_s},
              {"bubble_s", b.bubble_s}};
}

// `pipeline`: the plan's pipeline, or nullptr (its micro-batches count in the
// throughput and its stages in the step's parts).
Json plan_object(const Graph& graph, const Cluster& cluster, const Plan& plan,
                 const PipelineInfo* pipeline = nullptr) {
  // The cluster is echoed so that a saved result stands on its own: the
  // costs mean nothing without the machine they were computed for.
  Json j = Json::object();
  j["graph"] = graph.name;
  j["parameters"] = graph.parameters;
  // A language model's vocabulary as the engines pad it (core/docs/llm.md).
  if (std::optional<VocabPadding> padding = vocab_padding(graph))
    j["vocab_padding"] = Json{{"vocab_size", padding->vocab},
                              {"padded_vocab_size", padding->padded},
                              {"multiple", padding->multiple},
                              {"note", vocab_padding_text(*padding)}};
  j["cluster"] = cluster_to_json(cluster);
  j["cost"] = plan.cost;
  j["step_time_s"] = plan.step_time_s;
  // The practice model's throughput of a language model's step
  // (core/docs/practice-model.md).
  if (cluster.cost_model == CostModel::kPractice)
    if (std::optional<Throughput> t =
            throughput(graph, cluster, plan.step_time_s, pipeline ? pipeline->microbatches : 1))
      j["throughput"] = throughput_json(*t);
  // Whether the cost is proven least (the exact search, or a bounded one
  // that met its bound), the least cost any strategy can have as far as the
  // search proves, and how far above it the plan may be, in per cent of the
  // bound (null when the bound is 0). core/docs/bounded-search.md.
  j["optimal"] = plan.optimal;
  j["lower_bound"] = plan.lower_bound;
  j["gap_percent"] =
      plan.lower_bound > 0
          ? Json(100 * std::max(0.0, plan.cost - plan.lower_bound) / plan.lower_bound)
          : Json();
  j["summary"] = summary_to_json(graph, plan);
  if (cluster.cost_model == CostModel::kPractice) j["step"] = step_json(plan, pipeline, cluster);

  Json vertices = Json::array();
  for (size_t i = 0; i < graph.vertices.size(); ++i) {
    const Vertex& vertex = graph.vertices[i];
    Json v = Json::object();
    v["id"] = vertex.id;
    v["name"] = vertex.name;
    v["op"] = vertex.op;
    v["dims"] = vertex.dims;
    Json kinds = Json::array();
    for (DimKind kind : vertex.kinds) kinds.push_back(dim_kind_name(kind));
    v["kinds"] = std::move(kinds);
    v["sizes"] = vertex.dom;
    // A plan always covers every vertex; the guards only keep a malformed
    // Plan from reading out of bounds.
    v["config"] = i < plan.strategy.size() ? Json(plan.strategy[i]) : Json();
    const LayerCost cost = i < plan.layers.size() ? plan.layers[i] : LayerCost{};
    v["cost"] = cost.total;
    v["compute"] = cost.compute;
    v["comm"] = cost.comm;
    if (cluster.cost_model == CostModel::kPractice) {
      v["recompute"] = cost.recompute;
      v["time_s"] = cost.total / (cluster.tflops * 1e12);
      if (i < plan.strategy.size()) v["kernel"] = kernel_json(graph, vertex, plan.strategy[i]);
    }
    v["memory_bytes"] = i < plan.vertex_memory.size() ? plan.vertex_memory[i] : 0.0;
    vertices.push_back(std::move(v));
  }
  j["vertices"] = std::move(vertices);

  // Edges in Graph::edges order, so edges[i] here is Plan::edge_costs[i].
  Json edges = Json::array();
  for (size_t i = 0; i < graph.edges.size(); ++i) {
    const double cost = i < plan.edge_costs.size() ? plan.edge_costs[i] : 0.0;
    edges.push_back(Json{{"src", graph.edges[i].src}, {"dst", graph.edges[i].dst}, {"cost", cost}});
  }
  j["edges"] = std::move(edges);

  j["breakdown"] =
      Json{{"compute", plan.compute}, {"comm", plan.comm}, {"redistribution", plan.redistribution}};
  // Device 0's memory (core/docs/cluster.md); the capacity and the bound of a
  // plan under a cap, null without one.
  const MemoryBytes& mb = plan.memory;
  const bool capped = plan.capacity_bytes > 0;
  j["memory"] = Json{{"per_device_bytes", mb.total()},
                     {"params", mb.params},
                     {"grads", mb.grads},
                     {"optimizer", mb.optimizer},
                     {"activations", mb.activations},
                     {"capacity_bytes", capped ? Json(plan.capacity_bytes) : Json()},
                     {"fits", plan.fits},
                     {"lower_bound", capped ? Json(plan.lower_bound) : Json()},
                     {"optimal", capped ? Json(plan.optimal) : Json()}};
  // The GPU's memory under a cap; capacity_bytes is what the plan may use of it.
  if (capped) j["memory"]["device_bytes"] = cluster.memory_gib * 0x1p30;
  if (cluster.cost_model == CostModel::kPractice) {
    // The practice model's working buffers (in per_device_bytes), and the
    // framework's reserve and the headroom (outside it: the capacity is the
    // GPU's memory less both).
    j["memory"]["working"] = mb.working;
    j["memory"]["reserved_bytes"] = cluster.device.reserved_gib * 0x1p30;
    j["memory"]["headroom_bytes"] = cluster.headroom_gib() * 0x1p30;
  }
  // The training as priced: the search's choice of recomputation, if it
  // made one.
  Training t = plan.training ? *plan.training : cluster.training;
  // A strategy evaluated under "auto" is priced without recomputation.
  if (t.recompute == Recompute::kAuto) t.recompute = Recompute::kNone;
  j["training"] = Json{{"param_bytes", t.param_bytes},
                       {"grad_bytes", t.grad_bytes},
                       {"optimizer_bytes", t.optimizer_bytes},
                       {"activation_bytes", t.activation_bytes},
                       {"zero", t.zero}};
  // Only when set, so that the paper model's documents are as before.
  if (t.recompute != Recompute::kNone) j["training"]["recompute"] = recompute_name(t.recompute);
  if (t.recompute_blocks >= 0) {
    j["training"]["recompute_blocks"] = t.recompute_blocks;
    j["training"]["recompute_rest"] = recompute_name(t.recompute_rest);
  }
  if (plan.training && cluster.training.recompute == Recompute::kAuto)
    j["training"]["recompute_searched"] = true;
  const SearchStats& s = plan.search;
  j["search"] = Json{{"method", s.bounded ? "bounded" : "exact"},
                     {"order", order_name(s.order)},
                     {"max_dependent_set", s.max_dependent_set},
                     {"table_entries", s.table_entries},
                     {"largest_table", s.largest_table},
                     {"pairs", s.pairs},
                     {"peak_bytes", s.peak_bytes},
                     {"configurations", s.configurations},
                     {"searches", s.searches},
                     {"threads", s.threads},
                     {"time_s", s.time_s}};
  if (s.bounded) {
    j["search"]["rounds"] = s.rounds;
    j["search"]["fixed_vertices"] = s.fixed_vertices;
    j["search"]["exact_peak_bytes"] = s.exact_peak_bytes;
  }
  return j;
}

}  // namespace

std::string plan_to_json(const Graph& graph, const Cluster& cluster, const Plan& plan) {
  return json_detail::dump_pretty(plan_object(graph, cluster, plan)) + "\n";
}

std::string pipeline_plan_to_json(const Cluster& cluster, const PipelinePlan& result) {
  return json_detail::dump_pretty(pipeline_plan_object(cluster, result)) + "\n";
}

Json pipeline_plan_object(const Cluster& cluster, const PipelinePlan& result) {
  const PipelineInfo& p = result.pipeline;
  Json j = plan_object(result.graph, cluster, result.plan, &p);
  // The micro-batches' part of T (the pipeline's latency), and how much of
  // it each stage computes: M * A_s of it; the rest is its bubble.
  double latency = 0, max_a = 0;
  for (const PipelineStage& s : p.stage) {
    latency += s.A;
    max_a = std::max(max_a, s.A);
  }
  latency += static_cast<double>(p.microbatches - 1) * max_a;
  const auto busy = [&](const PipelineStage& s) {
    return latency > 0 ? static_cast<double>(p.microbatches) * s.A / latency : 1.0;
  };
  double busy_sum = 0;
  Json stages = Json::array();
  for (const PipelineStage& s : p.stage) {
    busy_sum += busy(s);
    const MemoryBytes& m = s.memory;
    stages.push_back(Json{{"first_vertex", s.first_vertex},
                          {"end_vertex", s.last_vertex},
                          {"layers", s.last_vertex - s.first_vertex},
                          {"first_device", s.first_device},
                          {"devices", s.devices},
                          {"F", s.F},
                          {"W", s.W},
                          {"X", s.X},
                          {"A", s.A},
                          {"time_s", s.time_s},
                          {"busy_share", busy(s)},
                          {"activation_copies", s.activation_copies},
                          {"memory_bytes", m.total()},
                          {"memory", Json{{"params", m.params},
                                          {"grads", m.grads},
                                          {"optimizer", m.optimizer},
                                          {"activations", m.activations}}},
                          {"fits", s.fits}});
    // The practice model's working buffers (the paper model has none).
    if (m.working > 0) stages.back()["memory"]["working"] = m.working;
  }
  j["pipeline"] =
      Json{{"stages", p.stages},
           {"microbatches", p.microbatches},
           {"schedule", schedule_name(p.schedule)},
           {"micro_batch", p.micro_batch},
           {"label", pipeline_label(p)},
           {"bubble", p.stage.empty() ? 0.0 : 1 - busy_sum / static_cast<double>(p.stage.size())},
           {"stage_of", p.stage_of},
           {"stage", std::move(stages)},
           {"allowed_boundaries", p.allowed_boundaries},
           {"no_pipeline_cost", p.no_pipeline_cost > 0 ? Json(p.no_pipeline_cost) : Json()},
           {"stage_plans", p.stage_plans}};
  if (p.virtual_stages > 1) j["pipeline"]["virtual_stages"] = p.virtual_stages;
  // Stopped before its end: the best pipeline found ("lower_bound": what
  // the search proved).
  if (!p.stopped.empty()) j["pipeline"]["stopped"] = p.stopped;
  return j;
}

std::string error_to_json(const Error& error) {
  Json j = Json::object();
  j["error"] = Json{{"message", error.message}, {"where", error.where}};
  return json_detail::dump_pretty(j) + "\n";
}

std::string models_to_json() {
  return guarded([] {
    Json list = Json::array();
    for (const ModelInfo& info : list_models()) {
      Json m = Json::object();
      m["name"] = info.name;
      m["description"] = info.description;
      m["default_batch"] = info.default_batch;
      m["default_seq"] = info.default_seq > 0 ? Json(info.default_seq) : Json();
      m["llm"] = info.llm;
      m["cutoff"] = info.cutoff;
      // The counts come from building the network, so they cannot drift from
      // the zoo's code.
      Result<Graph> graph = build_model(info.name);
      if (graph) {
        m["vertices"] = graph->vertices.size();
        m["edges"] = graph->edges.size();
        m["parameters"] = graph->parameters;
      } else {
        m["error"] = graph.error().to_string();
      }
      list.push_back(std::move(m));
    }
    return json_detail::dump_pretty(list) + "\n";
  });
}

std::string presets_to_json() {
  return guarded([] {
    Json list = Json::array();
    for (const GpuPreset& p : gpu_presets()) {
      list.push_back(Json{{"id", p.id},
                          {"name", p.name},
                          {"tflops", p.tflops},
                          {"memory_gib", p.memory_gib},
                          {"gpus_per_node", p.gpus_per_node},
                          {"intra_node_gbps", p.intra_node_gbps},
                          {"bandwidth_gbps", p.inter_node_gbps},
                          {"memory_gbps", p.memory_gbps},
                          {"fp8_tflops", p.fp8_tflops},
                          {"gpu_hour_usd", p.gpu_hour_usd},
                          {"practice",
                           {{"matmul_efficiency", p.profile.matmul_efficiency},
                            {"matmul_half", p.profile.matmul_half},
                            {"attention_efficiency", p.profile.attention_efficiency},
                            {"memory_efficiency", p.profile.memory_efficiency},
                            {"latency_intra_us", p.profile.latency_intra_us},
                            {"latency_inter_us", p.profile.latency_inter_us},
                            {"overlap", p.profile.overlap},
                            {"link_efficiency", p.profile.link_efficiency},
                            {"reserved_gib", p.profile.reserved_gib}}}});
    }
    return json_detail::dump_pretty(list) + "\n";
  });
}

std::string plan_json(std::string_view request_json,
                      const std::function<void(const Progress&)>& on_progress,
                      const std::atomic<bool>* cancel) {
  return guarded([&] {
    Result<PlanRequest> request = parse_search_request(request_json);
    if (!request) return error_to_json(request.error());
    request->options.on_progress = on_progress;
    if (cancel != nullptr) request->options.cancel = cancel;
    if (has_layout_answers(request->graph, request->cluster)) return answers_json(*request);
    if (request->pipeline) {
      Result<PipelinePlan> piped =
          plan_pipeline(request->graph, request->cluster, *request->pipeline, request->options);
      if (!piped) return error_to_json(piped.error());
      return with_exports(pipeline_plan_object(request->cluster, *piped), request->emit,
                          PlanView{&request->graph, &piped->graph, &request->cluster, &piped->plan,
                                   &piped->pipeline});
    }
    Result<Plan> result = plan(request->graph, request->cluster, request->options);
    if (!result) return error_to_json(result.error());
    return with_exports(
        plan_object(request->graph, request->cluster, *result), request->emit,
        PlanView{&request->graph, &request->graph, &request->cluster, &*result, nullptr});
  });
}

std::string evaluate_json(std::string_view request_json) {
  return guarded([&] {
    Result<PlanRequest> request = parse_plan_request(request_json);
    if (!request) return error_to_json(request.error());
    if (request->pipeline_strategy) {
      Result<PipelinePlan> piped =
          evaluate_pipeline(request->graph, request->cluster, *request->pipeline_strategy);
      if (!piped) return error_to_json(piped.error());
      return with_exports(pipeline_plan_object(request->cluster, *piped), request->emit,
                          PlanView{&request->graph, &piped->graph, &request->cluster, &piped->plan,
                                   &piped->pipeline});
    }
    if (!request->strategy) {
      return error_to_json(Error{"missing required field 'strategy'", "strategy"});
    }
    Result<Plan> result = evaluate(request->graph, request->cluster, *request->strategy);
    if (!result) return error_to_json(result.error());
    return with_exports(
        plan_object(request->graph, request->cluster, *result), request->emit,
        PlanView{&request->graph, &request->graph, &request->cluster, &*result, nullptr});
  });
}

std::string estimate_json(std::string_view request_json) {
  return guarded([&] {
    Result<PlanRequest> request = parse_search_request(request_json);
    if (!request) return error_to_json(request.error());
    Result<SearchStats> s = estimate(request->graph, request->cluster, request->options);
    if (!s) return error_to_json(s.error());
    Json j = Json::object();
    j["graph"] = request->graph.name;
    j["vertices"] = request->graph.vertices.size();
    j["devices"] = request->cluster.devices;
    j["memory_capped"] = request->cluster.memory_gib > 0;
    j["max_memory"] = request->options.max_memory;
    j["search"] = Json{{"method", s->bounded ? "bounded" : "exact"},
                       {"order", order_name(s->order)},
                       {"max_dependent_set", s->max_dependent_set},
                       {"table_entries", s->table_entries},
                       {"largest_table", s->largest_table},
                       {"pairs", s->pairs},
                       {"peak_bytes", s->peak_bytes},
                       {"configurations", s->configurations},
                       {"time_s", s->time_s}};
    if (s->bounded) {
      // The bounded search's budget: at most this many rounds of at most
      // these pairs (pairs above), and the exact search's need.
      j["search"]["rounds"] = s->rounds;
      j["search"]["exact_peak_bytes"] = s->exact_peak_bytes;
    }
    if (request->pipeline) {
      // The searches over the whole graph (of about these pairs) that the
      // plan makes for sure: S = M = 1, which "auto" searches first for the
      // comparison, or a request's only pair when it has one stage. The
      // other pairs with one stage are searched only when their bounds
      // leave them a chance, and the stage plans come on top: neither is
      // counted.
      const PipelineOptions& p = *request->pipeline;
      const bool one_stage = p.stages == kAuto || p.stages == 1;
      const bool one_micro = p.microbatches == kAuto || p.microbatches == 1;
      const bool only_pair = p.stages != kAuto && p.microbatches != kAuto;
      int64_t whole = 0;
      if (one_stage &&
          (one_micro || (only_pair && micro_batch_graph(request->graph, p.microbatches).ok())))
        whole = 1;
      auto count = [](int64_t n) { return n == kAuto ? Json("auto") : Json(n); };
      j["pipeline"] = Json{{"stages", count(p.stages)},
                           {"microbatches", count(p.microbatches)},
                           {"whole_graph_searches", whole}};
    }
    return json_detail::dump_pretty(j) + "\n";
  });
}

std::string export_model_json(std::string_view name, double batch, double seq) {
  return guarded([&] {
    // A JavaScript number that is not a whole batch is reported rather than
    // truncated. The range check comes first: converting an out-of-range
    // double to an integer is undefined.
    for (const auto& [value, field] : {std::pair{batch, "batch"}, std::pair{seq, "seq"}}) {
      if (!(value >= 0) || value > 1e15 || value != std::floor(value)) {
        return error_to_json(Error{"must be a non-negative whole number (0: the default)", field});
      }
    }
    Result<GraphSpec> spec =
        model_spec(name, static_cast<int64_t>(batch), static_cast<int64_t>(seq));
    if (!spec) return error_to_json(spec.error());
    return write_graph(*spec);
  });
}

std::string validate_json(std::string_view graph_json) {
  return guarded([&] {
    Result<GraphSpec> spec = parse_graph_spec(graph_json);
    if (!spec) return error_to_json(spec.error());
    Result<Graph> graph = build_graph(*spec);
    if (!graph) return error_to_json(graph.error());
    Json j = Json::object();
    j["ok"] = true;
    j["name"] = graph->name;
    j["layers"] = spec->layers.size();
    j["vertices"] = graph->vertices.size();
    j["edges"] = graph->edges.size();
    j["parameters"] = graph->parameters;
    return json_detail::dump_pretty(j) + "\n";
  });
}

}  // namespace pase
