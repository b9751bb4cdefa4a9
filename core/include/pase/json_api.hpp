// JSON in, JSON out: the interchange formats of core/docs/formats.md (plan request,
// cluster, strategy, plan result, error) for the CLI, the WebAssembly module
// and tools. Each function is a thin layer over graph.hpp / plan.hpp.
//
// ERRORS: parse functions return Error with `where` naming the field of the
// request ("cluster.devices", "graph.layers[2].units", "strategy[4]"). Nothing
// throws.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

// A plan (or evaluate) request: {"graph": {...} | "model": "name", "batch": B,
// "cluster": {...}, "order": "genseq", "max_memory": bytes, "strategy": [...]}.
struct PlanRequest {
  Graph graph;
  Cluster cluster;
  PlanOptions options;  // order, max_memory, enumeration; callbacks left empty
  std::optional<Strategy> strategy;
};

Result<PlanRequest> parse_plan_request(std::string_view json_text);

// {"devices": 8, "tflops": 10.0, "bandwidth_gbps": 16.0}; missing fields keep
// their defaults. `where` prefixes the field names of errors.
Result<Cluster> parse_cluster(std::string_view json_text, const std::string& where = "cluster");

// A strategy: a JSON list of configurations in vertex order, or a plan result
// (its vertices[].config are used).
Result<Strategy> parse_strategy(std::string_view json_text);

// Order names: "genseq", "bfs", "mintable".
Result<Order> parse_order(std::string_view name);

// The plan-result document of core/docs/formats.md, plus per-vertex "compute" and
// "comm", per-edge costs and the cost breakdown.
std::string plan_to_json(const Graph& graph, const Cluster& cluster, const Plan& plan);

// {"error": {"message": ..., "where": ...}}
std::string error_to_json(const Error& error);

// [{"name", "description", "default_batch", "cutoff", "vertices", "edges"}, ...]
std::string models_to_json();

// Whole requests as the module and tools use them: the result document or an
// error document, never an exception.
std::string plan_json(std::string_view request_json,
                      const std::function<void(const Progress&)>& on_progress = {});
std::string evaluate_json(std::string_view request_json);
std::string export_model_json(std::string_view name, int64_t batch);

}  // namespace pase
