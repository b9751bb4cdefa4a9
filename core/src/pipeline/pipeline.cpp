// pipeline.hpp: stages and micro-batches (core/docs/pipeline.md).
#include "pase/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pipeline/pipeline_model.hpp"
#include "search/weighted_plan.hpp"

namespace pase {

const char* schedule_name(Schedule schedule) {
  return schedule == Schedule::kGPipe ? "gpipe" : "1f1b";
}

std::string pipeline_label(const PipelineInfo& p) {
  const std::string schedule =
      p.schedule == Schedule::kGPipe ? "GPipe"
      : p.virtual_stages > 1
          ? "interleaved 1F1B, " + std::to_string(p.virtual_stages) + " virtual stages"
          : "1F1B";
  // One stage is no pipeline ("auto" may find it best); its micro-batches
  // accumulate gradients.
  if (p.stages == 1)
    return p.microbatches == 1 ? "no pipeline"
                               : "no pipeline (" + std::to_string(p.microbatches) +
                                     " micro-batches, " + schedule + ")";
  return "pipeline x" + std::to_string(p.stages) + " (" + std::to_string(p.microbatches) +
         " micro-batch" + (p.microbatches == 1 ? "" : "es") + ", " + schedule + ")";
}

namespace pipeline_detail {

int64_t common_batch(const GraphSpec& spec) {
  int64_t b = 0;
  for (const auto& [name, shape] : spec.inputs)
    if (!shape.empty()) b = std::gcd(b, shape[0]);
  return b;
}

Graph stage_graph(const Graph& g, int first, int last) {
  Graph s;
  s.name = g.name;
  s.cutoff = g.cutoff;
  auto model = std::make_shared<GraphModel>();
  for (int v = first; v < last; ++v) {
    Vertex x = g.vertices[v];
    x.id = v - first;
    for (Slot& slot : x.inputs) slot.producer = slot.producer >= first ? slot.producer - first : -1;
    s.vertices.push_back(std::move(x));
    model->vertices.push_back(g.model->vertices[v]);
    s.parameters += g.model->vertices[v].weight_elements;
  }
  for (const Edge& e : g.edges)
    if (e.src >= first && e.dst < last && e.dst >= first)
      s.edges.push_back(Edge{e.src - first, e.src_output, e.dst - first, e.dst_slot});
  s.model = std::move(model);
  return s;
}

int64_t copies_of(Schedule schedule, int64_t stages, int64_t s, int64_t microbatches,
                  int64_t virtual_stages) {
  if (schedule == Schedule::kGPipe) return microbatches;
  if (virtual_stages <= 1) return std::min(stages - s, microbatches);
  // Megatron-LM's interleaved schedule: 2 (S - s - 1) + (v - 1) S chunks in
  // warm-up and one more in flight, each a v-th of the stage.
  const int64_t chunks = 2 * (stages - s - 1) + (virtual_stages - 1) * stages + 1;
  return std::min(microbatches, (chunks + virtual_stages - 1) / virtual_stages);
}

bool Sender::near(int64_t s, int64_t t) const {
  return m.gpus_per_node > 0 && (s * q) / m.gpus_per_node == ((t + 1) * q - 1) / m.gpus_per_node;
}

double Sender::price(const Edge& e, double rate) const {
  const Shape& shape = g.vertices[e.src].outputs[e.src_output].shape;
  double elements = 1;
  for (int64_t d : shape) elements *= static_cast<double>(d);
  return rate * 2 * elements / static_cast<double>(q);
}

double Sender::edge(const Edge& e, int64_t s, int64_t t) const {
  return price(e, near(s, t) ? m.r1 : m.r);
}

// "strategy[3][1]" of evaluate() on a stage's part, as the field of the
// whole strategy: "strategy.configs[first + 3][1]".
Error stage_error(Error e, int first) {
  const std::string prefix = "strategy[";
  if (e.where.rfind(prefix, 0) == 0) {
    size_t end = e.where.find(']');
    int index = std::stoi(e.where.substr(prefix.size(), end - prefix.size()));
    e.where = "strategy.configs[" + std::to_string(index + first) + e.where.substr(end);
  } else if (e.where == "strategy") {
    e.where = "strategy.configs";
  }
  return e;
}

Result<PipelinePlan> assemble(const Graph& micro, const Cluster& cluster,
                              const std::vector<int>& stage_of, const Strategy& configs,
                              int64_t microbatches, Schedule schedule, int64_t virtual_stages) {
  const int n = static_cast<int>(micro.vertices.size());
  const int64_t stages = stage_of.empty() ? 1 : stage_of.back() + 1;
  const int64_t q = cluster.devices / stages;
  const ops::Machine machine = ops::make_machine(cluster);
  const Sender sender{micro, machine, q};
  PipelinePlan out;
  PipelineInfo& info = out.pipeline;
  info.stages = stages;
  info.microbatches = microbatches;
  info.schedule = schedule;
  info.virtual_stages = virtual_stages;
  info.stage_of = stage_of;
  for (const auto& [name, shape] : micro.model->spec->inputs)
    if (!shape.empty()) info.micro_batch = std::max(info.micro_batch, shape[0]);
  Plan& p = out.plan;
  p.strategy = configs;
  p.layers.resize(n);
  p.vertex_memory.resize(n);
  p.edge_costs.assign(micro.edges.size(), 0.0);
  const double cap = cluster.memory_gib > 0 ? cluster.capacity_bytes() : kInf;
  double whole_cost = 0;  // the one stage's cost when S = 1
  int first = 0;
  for (int64_t s = 0; s < stages; ++s) {
    int last = first;
    while (last < n && stage_of[last] == s) ++last;
    Cluster cs = cluster;
    cs.devices = q;
    cs.first_device = s * q;
    cs.memory_gib = 0;
    const Strategy part(configs.begin() + first, configs.begin() + last);
    const Graph sub = stage_graph(micro, first, last);
    Result<Plan> e = evaluate(sub, cs, part);
    if (!e) return stage_error(e.error(), first);
    PipelineStage st;
    st.first_vertex = first;
    st.last_vertex = last;
    st.first_device = s * q;
    st.devices = q;
    st.activation_copies = copies_of(schedule, stages, s, microbatches, virtual_stages);
    st.W = StageWeights::weight_sync(*e);
    st.F = e->cost - st.W;
    const ops::Machine ms = ops::make_machine(cs);
    for (int v = first; v < last; ++v) {
      p.layers[v] = e->layers[v - first];
      const MemoryBytes b = ops::vertex_memory(micro, micro.vertices[v], configs[v].data(), ms);
      const double k = static_cast<double>(st.activation_copies);
      st.memory.params += b.params;
      st.memory.grads += b.grads;
      st.memory.optimizer += b.optimizer;
      st.memory.activations += k * b.activations;
      st.memory.working = std::max(
          st.memory.working, ops::working_bytes(micro, micro.vertices[v], configs[v].data(), ms));
      p.vertex_memory[v] = b.params + b.grads + b.optimizer + k * b.activations;
    }
    // The stage's edges, in the order stage_graph() keeps them.
    size_t k = 0;
    for (size_t i = 0; i < micro.edges.size(); ++i) {
      const Edge& edge = micro.edges[i];
      if (edge.src >= first && edge.dst >= first && edge.dst < last)
        p.edge_costs[i] = e->edge_costs[k++];
    }
    p.compute += e->compute;
    p.comm += e->comm;
    p.redistribution += e->redistribution;
    whole_cost = e->cost;
    info.stage.push_back(st);
    first = last;
  }
  // Edges between stages: X.
  for (size_t i = 0; i < micro.edges.size(); ++i) {
    const Edge& e = micro.edges[i];
    const int s = stage_of[e.src], t = stage_of[e.dst];
    if (s != t) {
      p.edge_costs[i] = sender.edge(e, s, t);
      info.stage[s].X += p.edge_costs[i];
      p.redistribution += p.edge_costs[i];
    }
  }
  double sum_a = 0, max_a = 0, max_w = 0;
  size_t largest = 0;
  for (size_t s = 0; s < info.stage.size(); ++s) {
    PipelineStage& st = info.stage[s];
    st.A = st.F + static_cast<double>(virtual_stages) * st.X;
    st.time_s = st.A / (cluster.tflops * 1e12);
    st.fits = st.memory.total() <= cap;
    sum_a += st.A;
    max_a = std::max(max_a, st.A);
    max_w = std::max(max_w, st.W);
    if (st.memory.total() > info.stage[largest].memory.total()) largest = s;
  }
  // S = M = 1 is the plan without a pipeline, to the bit: evaluate()'s cost
  // of the whole graph.
  p.cost = stages == 1 && microbatches == 1
               ? whole_cost
               : static_cast<double>(microbatches) * max_a +
                     (sum_a - max_a) / static_cast<double>(virtual_stages) + max_w;
  p.step_time_s = p.cost / (cluster.tflops * 1e12);
  p.memory = info.stage[largest].memory;
  p.lower_bound = p.cost;
  if (cluster.memory_gib > 0) {
    p.capacity_bytes = cap;
    p.fits = std::all_of(info.stage.begin(), info.stage.end(),
                         [](const PipelineStage& st) { return st.fits; });
    p.optimal = false;  // a given strategy proves nothing; plan_pipeline() sets it
  }
  out.graph = micro;
  return out;
}

}  // namespace pipeline_detail

using namespace pipeline_detail;

Result<Graph> micro_batch_graph(const Graph& graph, int64_t microbatches) {
  if (graph.model == nullptr || graph.model->spec == nullptr)
    return Error{"the graph was not made by build_graph(), load_graph() or build_model()", "graph"};
  if (microbatches < 1)
    return Error{"must be a positive integer, got " + std::to_string(microbatches),
                 "pipeline.microbatches"};
  if (microbatches == 1) return graph;
  GraphSpec spec = *graph.model->spec;
  // A Reshape whose target starts with the batch (a flatten, as AlexNet's)
  // keeps the batch first at the micro-batch size.
  const int64_t batch = common_batch(spec);
  for (LayerSpec& l : spec.layers)
    if (l.op == "Reshape" && !l.shape.empty() && l.shape[0] == batch) l.shape[0] /= microbatches;
  for (auto& [name, shape] : spec.inputs) {
    if (shape.empty() || shape[0] % microbatches != 0)
      return Error{std::to_string(microbatches) + " micro-batches do not divide the batch " +
                       (shape.empty() ? std::string("(none)") : std::to_string(shape[0])) +
                       " of graph input '" + name + "'",
                   "pipeline.microbatches"};
    shape[0] /= microbatches;
  }
  Result<Graph> micro = build_graph(spec);
  if (!micro)
    return Error{"the micro-batch graph (the batch divided by " + std::to_string(microbatches) +
                     ") does not build: " + micro.error().to_string(),
                 "pipeline.microbatches"};
  if (micro->vertices.size() != graph.vertices.size() || micro->edges.size() != graph.edges.size())
    return Error{"the micro-batch graph has another structure than the graph",
                 "pipeline.microbatches"};
  return micro;
}

StepBreakdown step_breakdown(const Plan& plan, const PipelineInfo* pipeline, double tflops) {
  const double peak = tflops * 1e12;
  if (pipeline == nullptr || pipeline->stage.empty()) {
    StepBreakdown b;
    for (const LayerCost& l : plan.layers) {
      b.compute_s += (l.compute - l.recompute) / peak;
      b.recompute_s += l.recompute / peak;
    }
    b.communication_s = std::max(0.0, plan.step_time_s - b.compute_s - b.recompute_s);
    return b;
  }
  const PipelineInfo& info = *pipeline;
  size_t critical = 0;
  double sum_a = 0;
  for (size_t s = 0; s < info.stage.size(); ++s) {
    sum_a += info.stage[s].A;
    if (info.stage[s].A > info.stage[critical].A) critical = s;
  }
  const PipelineStage& st = info.stage[critical];
  double compute = 0, recompute = 0;
  for (int v = st.first_vertex; v < st.last_vertex; ++v) {
    compute += plan.layers[v].compute - plan.layers[v].recompute;
    recompute += plan.layers[v].recompute;
  }
  const double m = static_cast<double>(info.microbatches);
  StepBreakdown b;
  b.compute_s = m * compute / peak;
  b.recompute_s = m * recompute / peak;
  b.bubble_s =
      (sum_a - st.A) / static_cast<double>(std::max<int64_t>(1, info.virtual_stages)) / peak;
  // The rest of T: the critical stage's communication per micro-batch, and
  // the weight reductions once per step.
  b.communication_s = std::max(0.0, plan.step_time_s - b.compute_s - b.recompute_s - b.bubble_s);
  return b;
}

Result<PipelinePlan> evaluate_pipeline(const Graph& graph, const Cluster& cluster,
                                       const PipelineStrategy& strategy) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  const int n = static_cast<int>(graph.vertices.size());
  if (strategy.microbatches < 1)
    return Error{"must be a positive integer, got " + std::to_string(strategy.microbatches),
                 "strategy.microbatches"};
  if (static_cast<int>(strategy.stage_of.size()) != n)
    return Error{"has " + std::to_string(strategy.stage_of.size()) + " entries but the graph has " +
                     std::to_string(n) + " vertices",
                 "strategy.stage_of"};
  if (static_cast<int>(strategy.configs.size()) != n)
    return Error{"has " + std::to_string(strategy.configs.size()) +
                     " configurations but the graph has " + std::to_string(n) + " vertices",
                 "strategy.configs"};
  for (int v = 0; v < n; ++v) {
    const int s = strategy.stage_of[v];
    const int prev = v == 0 ? -1 : strategy.stage_of[v - 1];
    if ((v == 0 && s != 0) || (v > 0 && s != prev && s != prev + 1))
      return Error{"stages are contiguous ranges of the vertex order, from 0: vertex " +
                       std::to_string(v) + " is in stage " + std::to_string(s) +
                       (v == 0 ? std::string(", not 0")
                               : " after a vertex of stage " + std::to_string(prev)),
                   "strategy.stage_of[" + std::to_string(v) + "]"};
  }
  const int64_t stages = n == 0 ? 1 : strategy.stage_of.back() + 1;
  if (cluster.devices % stages != 0)
    return Error{std::to_string(stages) + " stages do not divide the " +
                     std::to_string(cluster.devices) + " devices",
                 "strategy.stage_of"};
  if (strategy.virtual_stages < 1)
    return Error{"must be a positive integer, got " + std::to_string(strategy.virtual_stages),
                 "strategy.virtual_stages"};
  // Each virtual stage is a chunk of its stage: at least one decoder block
  // (model_of().block), or one vertex of a graph without blocks.
  if (strategy.virtual_stages > 1 && n > 0) {
    bool has_blocks = false;
    for (int v = 0; v < n && !has_blocks; ++v) has_blocks = model_of(graph, v).block >= 0;
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (int first = 0; first < n;) {
      int last = first, prev_block = -1;
      int64_t chunks = 0;
      for (; last < n && strategy.stage_of[last] == strategy.stage_of[first]; ++last) {
        const int b = model_of(graph, last).block;
        if (!has_blocks || (b >= 0 && b != prev_block)) ++chunks;
        if (b >= 0) prev_block = b;
      }
      fewest = std::min(fewest, std::max<int64_t>(chunks, 1));  // a stage without blocks: one
      first = last;
    }
    if (strategy.virtual_stages > fewest)
      return Error{"at most " + std::to_string(fewest) + ", the " +
                       (has_blocks ? "decoder blocks" : "vertices") +
                       " of the smallest stage (each virtual stage holds one or more), not " +
                       std::to_string(strategy.virtual_stages),
                   "strategy.virtual_stages"};
  }
  if (strategy.virtual_stages > 1 &&
      (strategy.schedule != Schedule::k1F1B || stages < 2 || strategy.microbatches % stages != 0))
    return Error{
        "an interleaved schedule needs 1F1B, at least 2 stages and micro-batches a "
        "multiple of the stages (" +
            std::to_string(stages) + " stages, " + std::to_string(strategy.microbatches) +
            " micro-batches)",
        "strategy.virtual_stages"};
  Result<Graph> micro = micro_batch_graph(graph, strategy.microbatches);
  if (!micro) {
    Error e = micro.error();
    if (e.where == "pipeline.microbatches") e.where = "strategy.microbatches";
    return e;
  }
  return assemble(*micro, cluster, strategy.stage_of, strategy.configs, strategy.microbatches,
                  strategy.schedule, strategy.virtual_stages);
}

}  // namespace pase
