// The text form of a plan, shared by `pase plan` and `pase eval` (and the
// graph's size line by `pase compare`).
#pragma once

#include <string>

#include "pase/graph.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"

namespace pase_cli {

// "b=128/8 c=3 n=96/2": every dimension with its size; split ones carry "/split".
std::string config_text(const pase::Vertex& vertex, const pase::Config& config);

// "14 vertices, 13 edges, 61,100,840 parameters": the graph's size.
std::string graph_text(const pase::Graph& graph);

// Where a plan comes from: plan() (under a memory cap it carries a proven
// lower bound) or evaluate() of a given strategy (which proves nothing).
enum class PlanSource { kSearched, kEvaluated };

// The plan in practitioner terms (pase/summary.hpp): a "summary" line with
// the number of groups, then one row per group: its share of the cost and of
// device 0's memory, the devices one of its layers works on, its layer count,
// op and split ("data parallel x32 (batch), tensor parallel x2 (heads)"),
// and the names of its first two layers.
// With a pipeline the line starts with its label: "pipeline x4 (8
// micro-batches, 1F1B); 5 groups ...".
std::string summary_text(const pase::Graph& graph, const pase::Plan& plan,
                         const pase::PipelineInfo* pipeline = nullptr);

// The header (the cluster, with its nodes when it has them), the summary, the per-layer
// table (cost, device 0's memory, configuration), the cost summary and the
// memory per device (core/docs/cluster.md, "Memory per device"): the total
// and its parts, the capacity and whether the plan fits under a cap, and for
// a searched plan under a cap its lower bound and whether it is proven optimal.
//
// With a pipeline (core/docs/pipeline.md) the graph is the micro-batch graph,
// and a "pipeline" line and the stage table (layers, devices, A, W, X, time
// per micro-batch, memory and whether it fits) come before the layer table.
std::string plan_text(const pase::Graph& graph, const pase::Cluster& cluster,
                      const pase::Plan& plan, PlanSource source,
                      const pase::PipelineInfo* pipeline = nullptr);

// The memory lines of plan_text(): "memory  2.1 GiB per device (...)", its
// parts, and under a cap "capacity  80 GiB: fits" and (searched) the bound.
std::string memory_text(const pase::Cluster& cluster, const pase::Plan& plan, PlanSource source);

// A plan of the bounded search (for a pipeline: whose stage plans used it):
// its rounds and, without a memory cap (whose section gives it), the lower
// bound and the gap to it, or that none is known.
std::string bounded_text(const pase::Plan& plan, bool pipeline = false);

// "80 GiB: fits" or "80 GiB: does not fit (49.3 GiB over)"; under the
// practice model "80 GiB, 69 GiB of it for the plan: fits" (less the
// framework's reserve and the headroom); empty without a cap.
std::string capacity_text(const pase::Cluster& cluster, const pase::Plan& plan);

// The two "search" lines: order, time, dependent set, configurations, table
// entries, pairs and table memory.
std::string search_text(const pase::SearchStats& s);

}  // namespace pase_cli
