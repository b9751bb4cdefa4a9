// A plan in practitioner terms: the layers grouped by how they are split,
// each group described with the words people use ("data parallel x32
// (batch), tensor parallel x2 (heads)"), with its share of the cost and of
// the memory. The CLI's text output, the plan-result document's "summary"
// (json_api.hpp) and the page all come from summarize().
//
// USAGE
//   Result<Plan> p = plan(graph, Cluster{.devices = 64});
//   for (const LayerGroup& g : summarize(graph, *p)) std::cout << g.label << "\n";
//
// GROUPS
//   Two vertices are in one group when they have the same op and the same
//   degrees by kind: for every dimension kind (graph.hpp, DimKind), the
//   product of the splits of their dimensions of that kind. So the repeated
//   blocks of a network (the 32 decoder blocks of an LLM, the bottlenecks of
//   a ResNet) collapse into a few groups wherever they sit in the graph, and
//   two layers that split different dimensions of one kind (a convolution
//   split over its input channels or over its filter rows: both "reduction")
//   count as split alike. Every vertex is in exactly one group.
//
// WORDS (core/docs/formats.md, "Summary")
//   batch -> "data parallel"; heads, hidden, reduction, vocabulary -> "tensor
//   parallel" (one degree, their product; the kinds named in parentheses);
//   sequence -> "sequence split"; spatial -> "spatial split"; experts ->
//   "expert parallel"; layers -> "layer parallel"; other -> "other split".
//   A group that splits nothing is "replicated".
//
// SHARES
//   A group's cost is its vertices' own costs plus the re-distribution costs
//   of the edges into them (the consumer pays for fetching its inputs), so
//   the group costs add up to the plan's cost; its memory is its vertices'
//   device-0 memory. cost_share and memory_share are those over the sums of
//   all groups: they add up to 1 (to rounding), or are all 0 when the total
//   is 0 (a graph of reshapes costs nothing).
//
// DETERMINISM
//   Groups are ordered by their first vertex id, vertices within a group
//   ascending. A Plan whose vectors are shorter than the graph's (not one
//   plan() or evaluate() made) is read with the missing entries as
//   unsplit and free, never out of bounds.
//
// COMPLEXITY
//   O(V log V + E + sum of the vertices' dimension counts).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pase/graph.hpp"
#include "pase/plan.hpp"

namespace pase {

// The product of the splits of a vertex's dimensions of one kind.
struct KindDegree {
  DimKind kind = DimKind::kOther;
  int64_t degree = 1;
  bool operator==(const KindDegree&) const = default;
};

struct LayerGroup {
  std::vector<int> vertices;        // vertex ids, ascending
  std::string op;                   // the vertices' op
  std::vector<KindDegree> degrees;  // the kinds split (degree > 1), in DimKind order
  int64_t devices = 1;              // devices one of the layers works on: the degrees' product
  std::string label;                // split_label(degrees)
  double cost = 0;                  // FLOP-equivalents, with the re-distribution into the group
  double memory_bytes = 0;          // device 0's
  double cost_share = 0;            // of the plan's cost, 0..1
  double memory_share = 0;          // of device 0's memory, 0..1
};

// The groups of `plan` over `graph`, as described above.
std::vector<LayerGroup> summarize(const Graph& graph, const Plan& plan);

// The degrees by kind of one configuration of `vertex` (splits of 1 left
// out, DimKind order). Splits past the vertex's dimensions are ignored.
std::vector<KindDegree> kind_degrees(const Vertex& vertex, const Config& config);

// "data parallel x32 (batch), tensor parallel x2 (heads), sequence split
// x4"; a family of several kinds gives each its degree: "tensor parallel x8
// (hidden x2 / reduction x4)". "replicated" for no degrees. The parts come
// in the order of WORDS above; degrees of 1 or less are ignored.
std::string split_label(const std::vector<KindDegree>& degrees);

}  // namespace pase
