// The text form of a plan, shared by `pase plan` and `pase eval` (and the
// graph's size line by `pase compare`).
#pragma once

#include <string>

#include "pase/graph.hpp"
#include "pase/plan.hpp"

namespace pase_cli {

// "b=128/8 c=3 n=96/2": every dimension with its size; split ones carry "/split".
std::string config_text(const pase::Vertex& vertex, const pase::Config& config);

// "14 vertices, 13 edges, 61,100,840 parameters": the graph's size.
std::string graph_text(const pase::Graph& graph);

// The header, the per-layer table and the cost summary.
std::string plan_text(const pase::Graph& graph, const pase::Cluster& cluster,
                      const pase::Plan& plan);

// The two "search" lines: order, time, dependent set, configurations, table
// entries, pairs and table memory.
std::string search_text(const pase::SearchStats& s);

}  // namespace pase_cli
