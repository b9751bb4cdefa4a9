// The strategy target (pase_fuzz_strategy): the input is a strategy document
// as `pase eval --strategy FILE` reads it (parse_any_strategy(): a list of
// configurations, a pipeline strategy, or a plan result), evaluated as the
// CLI evaluates it (evaluate(), or evaluate_pipeline() with "stage_of") on
// each of a few small graphs with as many vertices as it has configurations
// (strategy_graphs(); on the first of them when none has), at 8 devices and
// at the devices its splits and stages need (at most kMaxStrategyDevices).
// Nothing may crash, throw or hang, and:
//   - every error has a message;
//   - an evaluated strategy has a finite cost, its plan-result document is
//     valid JSON, and that document read back by parse_any_strategy() is the
//     same strategy, which evaluates to the same cost.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_target.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"

namespace pase_fuzz {

inline constexpr int64_t kMaxStrategyDevices = 4096;

// AlexNet (14 vertices), three FC layers (3), and tiny_llm()'s graphs, dense
// and with experts, of 8 sequences.
inline const std::vector<pase::Graph>& strategy_graphs() {
  static const std::vector<pase::Graph> graphs = [] {
    std::vector<pase::Graph> g;
    const auto add = [&](pase::Result<pase::Graph> r) {
      if (r) g.push_back(std::move(r).value());
    };
    add(pase::build_model("alexnet"));
    add(pase::load_graph(R"({"format": "pase-graph/1", "name": "fc3", "inputs": {"x": [32, 512]},
        "layers": [{"name": "fc1", "op": "FC", "inputs": ["x"], "units": 1024},
                   {"name": "fc2", "op": "FC", "inputs": ["fc1"], "units": 512},
                   {"name": "fc3", "op": "FC", "inputs": ["fc2"], "units": 256}]})"));
    add(tiny_llm_graph(false, 8, "tiny-llama"));
    add(tiny_llm_graph(true, 8, "tiny-moe"));
    return g;
  }();
  return graphs;
}

// "" when `strategy` evaluates on `graph` and `cluster` as it should (or is
// refused with an error).
inline std::string check_strategy(const pase::Graph& graph, const pase::Cluster& cluster,
                                  const pase::PipelineStrategy& strategy) {
  if (strategy.stage_of.empty()) {
    pase::Result<pase::Plan> plan = pase::evaluate(graph, cluster, strategy.configs);
    if (!plan) return check_error(plan.error(), "evaluate");
    if (!std::isfinite(plan->cost)) return "evaluate: the cost is not finite";
    const std::string doc = pase::plan_to_json(graph, cluster, *plan);
    pase::Result<pase::PipelineStrategy> read = pase::parse_any_strategy(doc);
    if (!read) return "a plan result does not read as a strategy: " + read.error().to_string();
    if (read->configs != strategy.configs || !read->stage_of.empty())
      return "a plan result reads back as another strategy";
    pase::Result<pase::Plan> again = pase::evaluate(graph, cluster, read->configs);
    if (!again || !close(again->cost, plan->cost)) return "a plan result evaluates to another cost";
    return "";
  }
  pase::Result<pase::PipelinePlan> piped = pase::evaluate_pipeline(graph, cluster, strategy);
  if (!piped) return check_error(piped.error(), "evaluate_pipeline");
  if (!std::isfinite(piped->plan.cost)) return "evaluate_pipeline: the cost is not finite";
  const std::string doc = pase::pipeline_plan_to_json(cluster, *piped);
  pase::Result<pase::PipelineStrategy> read = pase::parse_any_strategy(doc);
  if (!read)
    return "a pipeline plan result does not read as a strategy: " + read.error().to_string();
  if (read->configs != strategy.configs || read->stage_of != strategy.stage_of ||
      read->microbatches != strategy.microbatches || read->schedule != strategy.schedule ||
      read->virtual_stages != strategy.virtual_stages)
    return "a pipeline plan result reads back as another strategy";
  pase::Result<pase::PipelinePlan> again = pase::evaluate_pipeline(graph, cluster, *read);
  if (!again || !close(again->plan.cost, piped->plan.cost))
    return "a pipeline plan result evaluates to another cost";
  return "";
}

inline std::string fuzz_strategy(std::string_view text) {
  pase::Result<pase::PipelineStrategy> strategy = pase::parse_any_strategy(text);
  if (!strategy) return check_error(strategy.error(), "parse_any_strategy");
  // The devices its splits and stages need, in floating point (no overflow).
  double split = 1;
  for (const pase::Config& c : strategy->configs) {
    double product = 1;
    for (int64_t e : c) product *= static_cast<double>(e);
    split = std::max(split, product);
  }
  double stages = 1;
  for (int s : strategy->stage_of) stages = std::max(stages, static_cast<double>(s) + 1);
  std::vector<int64_t> devices = {8};
  if (split * stages <= static_cast<double>(kMaxStrategyDevices) && split * stages != 8)
    devices.push_back(static_cast<int64_t>(split * stages));

  const std::vector<pase::Graph>& graphs = strategy_graphs();
  bool matched = false;
  for (const pase::Graph& graph : graphs) {
    if (graph.vertices.size() != strategy->configs.size()) continue;
    matched = true;
    for (int64_t d : devices)
      if (std::string e = check_strategy(graph, pase::Cluster{.devices = d}, *strategy); !e.empty())
        return e;
  }
  if (!matched && !graphs.empty())
    return check_strategy(graphs.front(), pase::Cluster{.devices = 8}, *strategy);
  return "";
}

}  // namespace pase_fuzz
