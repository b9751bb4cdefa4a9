// A plan as a JAX program (export.hpp, core/docs/export.md, "JAX").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/export.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "util/json_util.hpp"

namespace pase {

Result<Exported> export_jax(const PlanView& view);

// The graph reduced for a CPU (a program's --reduce; its document is its
// model->spec), or nullopt: `spec`
// with every size above 32 replaced, the same size by the same value (the
// least multiple of every split of a dimension of that size from 32 on, at
// most the size); when that breaks the graph (sizes that depend on each
// other: a CNN's channels and images), the batch alone (to 8). It must build
// to vertices of `g`'s dimensions that `strategy` divides. `note` says what
// changed, or why there is no reduction (jax_graph.cpp). Then, of a run of
// consecutive decoder blocks ("layer<N>_...") alike in sizes and
// configurations, only the first two: `strategy` is then the plan's
// configurations of the vertices kept.
struct JaxReduced {
  Graph graph;
  Strategy strategy;
};
std::optional<JaxReduced> jax_reduced_graph(const GraphSpec& spec, const Graph& g,
                                            const Strategy& strategy, std::string& note);

// The op's own weights of a layer (not its {"shape"} operands: FC's, Conv's,
// Embedding's), with the positions of the vertex each of their dimensions
// follows and the fan-in.
struct JaxWeight {
  Shape shape;
  TensorMap map;
  int64_t fan_in = 1;
};
std::vector<JaxWeight> jax_implicit_weights(const LayerSpec& l, const Vertex& v);

// The fan-in of an Einsum's weight operand: the sizes of its letters that
// the output does not have.
int64_t jax_einsum_fan_in(const LayerSpec& l, const Shape& weight);

// A layer's name, op and attributes as the runtime reads them.
json_detail::Json jax_attributes(const LayerSpec& l);

// What the layers of an imported model run as ONNX defines them: the
// entries of the graph's meta.onnx_layers by layer name (none when it has
// none), each checked against its layer; an error names a malformed one
// (jax_semantics.cpp; core/docs/import.md, "What the layers run").
Result<std::map<std::string, json_detail::Json>> jax_onnx_layers(const GraphSpec& spec,
                                                                 const Graph& g);

}  // namespace pase
